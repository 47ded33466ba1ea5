#pragma once
// VisualSpan: where an image's tokens sit in a token sequence and how they map onto its patch
// grid. The prompt builder finds it from the ids (never hard-coded), the cache carries it beside
// its keys and values, and steering and the heatmaps address grid cells through it.
#include <cstdint>

namespace kvsteer {

// Where the image's tokens sit in the sequence, and how they map onto the patch grid:
// visual token i (0-based inside the span) is grid cell (i / gridWidth, i % gridWidth).
struct VisualSpan {
    int64_t start = -1;
    int64_t length = 0;
    int gridHeight = 0;
    int gridWidth = 0;
    bool valid() const { return start >= 0 && length > 0; }
    int64_t end() const { return start + length; }
    int64_t positionOfCell(int row, int col) const { return start + int64_t(row) * gridWidth + col; }
};

} // namespace kvsteer
