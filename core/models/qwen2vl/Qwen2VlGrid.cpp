#include "models/qwen2vl/Qwen2VlGrid.h"

#include "Error.h"

#include <ATen/ops/empty.h>

#include <string>

namespace kvsteer {

void requireGrid(const GridThw& grid, int mergeSize, const char* what) {
    if (mergeSize <= 0 || grid.t <= 0 || grid.h <= 0 || grid.w <= 0 || grid.h % mergeSize != 0 || grid.w % mergeSize != 0)
        throw Error(std::string(what) + ": grid (t, h, w) = (" + std::to_string(grid.t) + ", " + std::to_string(grid.h) + ", " +
                    std::to_string(grid.w) + ") must be positive with h and w multiples of merge_size " + std::to_string(mergeSize));
}

at::Tensor patchPositions(const GridThw& grid, int mergeSize) {
    requireGrid(grid, mergeSize, "patchPositions");
    const int64_t m = mergeSize, cellsW = grid.w / m;
    at::Tensor out = at::empty({grid.patches(), 2}, at::kLong);   // [N, 2]
    int64_t* p = out.data_ptr<int64_t>();
    // Walk the listing order: cells row-major, then the patches of a cell row-major.
    for (int64_t f = 0; f < grid.t; ++f)
        for (int64_t cell = 0; cell < (grid.h / m) * cellsW; ++cell)
            for (int64_t i = 0; i < m * m; ++i) {
                *p++ = (cell / cellsW) * m + i / m;   // row
                *p++ = (cell % cellsW) * m + i % m;   // col
            }
    return out;
}

} // namespace kvsteer
