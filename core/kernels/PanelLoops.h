#pragma once
// Internal to the kernels: the panel kernel's loops, shared by the SIMD files, each of which
// instantiates them with its own tiles (TileLoops.h's PanelTiles over a vector type declared in
// that file's anonymous namespace, so every instantiation stays private to the file; see the note
// at the top of KernelTable.h).
//
// y = x · Wᵀ for many rows of x against W rows in their own dtype (read in place: a tile widens
// each W vector in registers as the skinny tile does), compute-bound, in the skinny kernel's
// summation order: every y[r, n] is one tile's accumulator lanes over k in order, the tail, then
// the lanes added (tileSteps and tileFinish, TileLoops.h). What the loops add is cache blocking:
//   - W rows in blocks of kPanelBlockRows, and k in blocks of Tiles::kDepth, so that the block of
//     W a sweep reads (64 rows x 2048 elements with AVX-512: 256 KB of f16, 512 KB of f32) stays in
//     L2 while every row of x passes it;
//   - x rows Tiles::kXRows at a time, their k-block near L1 while the W rows pass.
// Each ISA's Tiles (one per weight dtype): T (W's element type), kLanes (floats per vector),
// kXRows, kDepth (a multiple of kLanes), tileRows(M) and run<R, M>(), the tile itself.
// Between k-blocks a tile's accumulators wait in `spill` (one vector per x row and W row), so the
// sums go on exactly where they stopped: the blocking changes the speed, never the bits.
#include "kernels/KernelTable.h"

namespace kvsteer::kernels::detail {

// W rows per block.
constexpr int64_t kPanelBlockRows = 64;

// Floats of `spill` the loops need for m rows of x: one vector per x row and W row of a block.
static inline int64_t panelSpillFloats(int64_t m) { return m * kPanelBlockRows * 16; }

// One sweep of M x rows over W rows [nb, nEnd) for k in [k0, k1).
template <class Tiles, int M>
static inline void panelSweep(const float* x, int64_t xStride, const typename Tiles::T* w, int64_t rowStride, int64_t nb, int64_t nEnd,
                              int64_t k0, int64_t k1, int64_t cols, bool first, bool last, float* spill, float* y,
                              int64_t yStride) {
    constexpr int R = Tiles::tileRows(M);
    int64_t n = nb;
    for (; n + R <= nEnd; n += R)
        Tiles::template run<R, M>(x, xStride, w + n * rowStride, rowStride, k0, k1, cols, first, last,
                                  spill + (n - nb) * Tiles::kLanes, kPanelBlockRows, y + n, yStride);
    for (; n < nEnd; ++n)
        Tiles::template run<1, M>(x, xStride, w + n * rowStride, rowStride, k0, k1, cols, first, last,
                                  spill + (n - nb) * Tiles::kLanes, kPanelBlockRows, y + n, yStride);
}

// y[r, n] = dot(x row r, W row n) for r < m, n < rows.
//   x [m, cols] stride xStride; w [rows, cols] of Tiles::T, stride rowStride; y [m, rows] stride yStride;
//   spill: panelSpillFloats(m) floats of scratch.
template <class Tiles>
static inline void panelLoops(const float* x, int64_t m, int64_t xStride, const typename Tiles::T* w, int64_t rowStride, int64_t rows,
                              int64_t cols, float* y, int64_t yStride, float* spill) {
    const int64_t full = cols - cols % Tiles::kLanes;   // the tail after it is tileFinish's
    for (int64_t nb = 0; nb < rows; nb += kPanelBlockRows) {
        const int64_t nEnd = nb + kPanelBlockRows < rows ? nb + kPanelBlockRows : rows;
        int64_t k0 = 0;
        do {
            const int64_t k1 = k0 + Tiles::kDepth < full ? k0 + Tiles::kDepth : full;
            const bool first = k0 == 0, last = k1 == full;
            int64_t r = 0;
            // x row r's accumulators: spill + r * kPanelBlockRows * kLanes (a tile steps by W row).
            auto at = [&](int64_t row) { return spill + row * kPanelBlockRows * Tiles::kLanes; };
            for (; r + Tiles::kXRows <= m; r += Tiles::kXRows)
                panelSweep<Tiles, Tiles::kXRows>(x + r * xStride, xStride, w, rowStride, nb, nEnd, k0, k1, cols, first, last, at(r),
                                               y + r * yStride, yStride);
            const float* xr = x + r * xStride;
            float* yr = y + r * yStride;
            static_assert(Tiles::kXRows <= 6, "the switch below takes the last 1..5 rows");
            switch (m - r) {   // the last rows of x, fewer than a tile's
            case 1: panelSweep<Tiles, 1>(xr, xStride, w, rowStride, nb, nEnd, k0, k1, cols, first, last, at(r), yr, yStride); break;
            case 2: panelSweep<Tiles, 2>(xr, xStride, w, rowStride, nb, nEnd, k0, k1, cols, first, last, at(r), yr, yStride); break;
            case 3: panelSweep<Tiles, 3>(xr, xStride, w, rowStride, nb, nEnd, k0, k1, cols, first, last, at(r), yr, yStride); break;
            case 4: panelSweep<Tiles, 4>(xr, xStride, w, rowStride, nb, nEnd, k0, k1, cols, first, last, at(r), yr, yStride); break;
            case 5: panelSweep<Tiles, 5>(xr, xStride, w, rowStride, nb, nEnd, k0, k1, cols, first, last, at(r), yr, yStride); break;
            default: break;
            }
            k0 = k1;
        } while (k0 < full);
    }
}

// panelLoops for W of any dtype: the ISA file's Tiles<Row> for w.type (its F32, F16 and BF16 rows).
template <template <class> class Tiles, class F32, class F16, class BF16>
static inline void panelOfType(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride,
                               float* spill) {
    switch (w.type) {
    case WeightType::F32:
        return panelLoops<Tiles<F32>>(x, m, xStride, static_cast<const float*>(w.data), w.rowStride, w.rows, w.cols, y, yStride, spill);
    case WeightType::F16:
        return panelLoops<Tiles<F16>>(x, m, xStride, static_cast<const uint16_t*>(w.data), w.rowStride, w.rows, w.cols, y, yStride, spill);
    case WeightType::BF16:
        return panelLoops<Tiles<BF16>>(x, m, xStride, static_cast<const uint16_t*>(w.data), w.rowStride, w.rows, w.cols, y, yStride, spill);
    }
}

} // namespace kvsteer::kernels::detail
