#pragma once
// VisualSpan: the positions a strength map addresses, and how they map onto its grid. For a
// prompt with an image it is where the image's tokens sit and their patch grid; the prompt
// builder finds it from the ids (never hard-coded). For a prompt without an image it is the
// token strip: every prompt token the snapshot holds (all but the last, which decoding feeds
// again), as a 1 x N grid, so text-only cache steering paints tokens exactly as image steering
// paints cells. The cache carries the span beside its keys and values, and steering and the
// heatmaps address cells through it.
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

enum class SpanKind { Image, Tokens };

// Where the span's tokens sit in the sequence, and how they map onto the grid: token i (0-based
// inside the span) is grid cell (i / gridWidth, i % gridWidth).
struct VisualSpan {
    int64_t start = -1;
    int64_t length = 0;
    int gridHeight = 0;
    int gridWidth = 0;
    SpanKind kind = SpanKind::Image;
    bool valid() const { return start >= 0 && length > 0; }
    bool isTokenStrip() const { return kind == SpanKind::Tokens; }
    int64_t end() const { return start + length; }
    PatchGrid grid() const { return {gridHeight, gridWidth}; }
    int64_t positionOfCell(int row, int col) const { return start + int64_t(row) * gridWidth + col; }

    // The token strip over the first n prompt tokens (a prompt without an image).
    static VisualSpan tokenStrip(int64_t n) {
        VisualSpan s;
        s.start = 0;
        s.length = n;
        s.gridHeight = 1;
        s.gridWidth = static_cast<int>(n);
        s.kind = SpanKind::Tokens;
        return s;
    }
};

} // namespace kvsteer
