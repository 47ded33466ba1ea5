#include "models/qwen3vl/Qwen3VisionPositions.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/linspace.h>

namespace kvsteer {

namespace {

// One axis of the resampling: for `cells` positions over a table side of `side`, the lower and
// upper table index of each and the weight of the upper one.
struct AxisSamples {
    at::Tensor lower, upper;   // int64 [cells]
    at::Tensor fraction;       // float32 [cells]: how far past `lower`
};

AxisSamples sampleAxis(int64_t cells, int side) {
    // ATen's own linspace: its float32 values (computed from both ends) are transformers'.
    const at::Tensor at = at::linspace(0.0, double(side - 1), cells, at::TensorOptions().dtype(at::kFloat));
    AxisSamples s;
    s.lower = at.to(at::kLong);   // truncation = floor for these non-negative values
    s.upper = at::clamp_max(s.lower + 1, side - 1);
    s.fraction = at - s.lower.to(at::kFloat);
    return s;
}

} // namespace

at::Tensor interpolatedPositionEmbeddings(const at::Tensor& table, int side, const GridThw& grid, int mergeSize) {
    const AxisSamples rows = sampleAxis(grid.h, side), cols = sampleAxis(grid.w, side);
    const at::Tensor dy = rows.fraction.unsqueeze(1), dx = cols.fraction.unsqueeze(0);   // [gh, 1], [1, gw]
    auto corner = [&](const at::Tensor& y, const at::Tensor& x, const at::Tensor& weight) {
        const at::Tensor index = (y.unsqueeze(1) * side + x.unsqueeze(0)).reshape({-1});            // raster [gh * gw]
        const at::Tensor w = weight.reshape({-1, 1}).to(table.device(), table.scalar_type());      // [gh * gw, 1]
        return table.index_select(0, index.to(table.device())) * w;
    };
    const at::Tensor raster = corner(rows.lower, cols.lower, (1 - dy) * (1 - dx)) + corner(rows.lower, cols.upper, (1 - dy) * dx) +
                              corner(rows.upper, cols.lower, dy * (1 - dx)) + corner(rows.upper, cols.upper, dy * dx);   // [gh * gw, E]
    // Listed patch n sits at (row, col) = positions[n]: its raster index is row * gw + col.
    const at::Tensor positions = patchPositions(grid, mergeSize);   // [N, 2]
    const at::Tensor listed = positions.select(1, 0) * grid.w + positions.select(1, 1);
    return raster.index_select(0, listed.to(table.device()));
}

} // namespace kvsteer
