#pragma once
// VisualSpan: where an image's tokens sit in a token sequence and how they map onto its patch
// grid. The prompt builder finds it from the ids (never hard-coded), the cache carries it beside
// its keys and values, and steering and the heatmaps address grid cells through it.
#include <cstdint>
#include <string>

namespace kvsteer {

// The patch grid a model lays images out on (Model::patchGrid): what masks, per-position
// vectors and vector files are shaped by. 0x0 for a text-only model.
struct PatchGrid {
    int height = 0, width = 0;
    int64_t cells() const { return int64_t(height) * width; }
    bool operator==(const PatchGrid& o) const { return height == o.height && width == o.width; }
    bool operator!=(const PatchGrid& o) const { return !(*this == o); }
    std::string text() const { return std::to_string(height) + "x" + std::to_string(width); }   // "16x16"
};

// Where the image's tokens sit in the sequence, and how they map onto the patch grid:
// visual token i (0-based inside the span) is grid cell (i / gridWidth, i % gridWidth).
struct VisualSpan {
    int64_t start = -1;
    int64_t length = 0;
    int gridHeight = 0;
    int gridWidth = 0;
    bool valid() const { return start >= 0 && length > 0; }
    int64_t end() const { return start + length; }
    PatchGrid grid() const { return {gridHeight, gridWidth}; }
    int64_t positionOfCell(int row, int col) const { return start + int64_t(row) * gridWidth + col; }
};

} // namespace kvsteer
