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
#include <vector>

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

// One view of the picture among a span's tokens, for families that show the model one picture
// several times (LLaVA-NeXT: a base view of the whole picture, then a finer grid stitched from
// crops). Cell (r, c) is token offset + r * rowStride + c inside the span; a rowStride above
// `cols` leaves tokens between rows that are no cell (LLaVA-NeXT's image_newline). Where the cell
// lies on the picture, in fractions of its width and height: x from left + c * cellWidth to
// left + (c + 1) * cellWidth, y likewise from top.
struct SpanView {
    std::string name;   // "base", "crops"
    int64_t offset = 0;
    int rows = 0, cols = 0, rowStride = 0;
    double left = 0, top = 0, cellWidth = 0, cellHeight = 0;
};

// Where the span's tokens sit in the sequence, and how they map onto the grid. Without views,
// token i (0-based inside the span) is grid cell (i / gridWidth, i % gridWidth). With views, the
// grid is the finest view (views.back()), the one strength maps are painted on; every view's
// cells take the strength of the grid cells they overlap on the picture (cache/SpanCells.h).
struct VisualSpan {
    int64_t start = -1;
    int64_t length = 0;
    int gridHeight = 0;
    int gridWidth = 0;
    SpanKind kind = SpanKind::Image;
    std::vector<SpanView> views;
    int pictureWidth = 0, pictureHeight = 0;   // with views: the picture's size in pixels
    bool valid() const { return start >= 0 && length > 0; }
    bool isTokenStrip() const { return kind == SpanKind::Tokens; }
    bool hasViews() const { return !views.empty(); }
    int64_t end() const { return start + length; }
    PatchGrid grid() const { return {gridHeight, gridWidth}; }
    // The token of grid cell (row, col): in the finest view when there are views.
    int64_t positionOfCell(int row, int col) const {
        if (!hasViews()) return start + int64_t(row) * gridWidth + col;
        const SpanView& v = views.back();
        return start + v.offset + int64_t(row) * v.rowStride + col;
    }

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
