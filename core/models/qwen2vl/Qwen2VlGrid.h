#pragma once
// The patch grid of one Qwen2-VL image (or video) and the order its patches are listed in.
//
// Qwen2-VL never lists patches in raster order: rows are grouped by the merger's 2x2 cells
// (merge_size x merge_size in general), cells in row-major order, and inside a cell row-major
// again. For merge 2, patch (row, col) of a frame is row
//   n = ((row / 2) * (w / 2) + col / 2) * 4 + (row % 2) * 2 + col % 2,
// so every 4 consecutive rows are one visual token. Frames follow each other (t-major).
// The image processor writes pixel_values in this order and the vision tower's RoPE and merger
// read it; both take it from here.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvsteer {

struct GridThw {
    int64_t t = 1;   // temporal patches (1 for an image: its frame is repeated temporal_patch_size times)
    int64_t h = 0;   // patch rows    (resized height / patch_size)
    int64_t w = 0;   // patch columns (resized width / patch_size)

    int64_t patches() const { return t * h * w; }
    int64_t patchesPerFrame() const { return h * w; }
};

// Throws kvsteer::Error unless t, h, w are positive and h, w multiples of mergeSize.
void requireGrid(const GridThw& grid, int mergeSize, const char* what);

// [t*h*w, 2] int64: (row, col) of each listed patch (transformers' vision pos_ids, the
// reference's vision_pos_ids); frames repeat the same positions.
at::Tensor patchPositions(const GridThw& grid, int mergeSize);

} // namespace kvsteer
