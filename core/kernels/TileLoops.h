#pragma once
// Internal to the kernels: the skinny and panel tiles, written once over an ISA's vector type.
// KernelsAvx2.cpp and KernelsAvx512.cpp each instantiate them with their own `Isa` (the vector
// type and the few steps that differ: the tail of a row, the lanes' sum, the tile sizes) and `Row`
// types (how a W vector of each dtype is loaded and widened), all in that file's anonymous
// namespace, so every instantiation is private to the file that compiled it with its -m flags
// (the note at the top of KernelTable.h). The scalar reference they are written against is
// KernelsPortable.cpp.
//
// An Isa gives:
//   Vec, kLanes                      the vector type and its floats
//   zero(), load(p), store(p, v)     float vectors (x rows, the panel's spill)
//   fma(w, x, acc)                   w * x + acc, one rounding
//   kPrefetchOncePerLine             ask for a W line once (true) or at every step
//   tileRows(m), panelTileRows(m)    W rows per tile for m x rows (skinny, panel)
//   kPanelXRows, kPanelDepth         the panel tile's x rows and its k-block (PanelLoops.h)
//   addTail<R, M, Row>(...)          the last cols % kLanes products of a row, each in lane k mod kLanes
//   storeSums<R, M>(acc, y, stride)  each accumulator's lanes added, into y
//   widenTail<Row>(s, i, n, dst)     dst[i..n) = float(s[i..n)), fewer than kLanes
//
// A tile's sums: acc[i][r] is x row r times W row i, lane j holding the products at
// k = j (mod kLanes). The skinny tiles and the panel tiles add the products in exactly this order,
// so that a row of y has the same bits whichever kernel, batch or thread computed it (Kernels.h).
#include "kernels/KernelTable.h"
#include "kernels/PanelLoops.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace kvsteer::kernels::detail {

// Asks for the line Bytes past p (KernelTable.h says why and how far).
template <uintptr_t Bytes, class T>
static void prefetchAhead(const T* p) {
    _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + Bytes), _MM_HINT_T0);
}

// The full steps k0 .. k1 (k1 - k0 a multiple of kLanes) into acc.
//   x [M, cols] stride xStride; w: R rows of Row::T, stride rowStride.
// Each W vector is loaded (and widened) once and multiplied into all M x rows.
template <class Isa, int R, int M, class Row, uintptr_t PrefetchBytes>
static void tileSteps(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t k0, int64_t k1,
                             typename Isa::Vec (&acc)[R][M]) {
    for (int64_t k = k0; k < k1; k += Isa::kLanes) {
        typename Isa::Vec wv[R];
        // With kPrefetchOncePerLine, once per 64-byte line of a row: an f16 row moves 16 bytes an
        // AVX2 step, and a prefetch every step spent load slots asking for the same line four
        // times (docs/benchmarks.md, "How the kernels' constants were chosen").
        const bool prefetch = PrefetchBytes != 0 && (!Isa::kPrefetchOncePerLine || (k * int64_t(sizeof(typename Row::T)) & 63) == 0);
        for (int i = 0; i < R; ++i) {
            if (prefetch) prefetchAhead<PrefetchBytes>(w + i * rowStride + k);
            wv[i] = Row::load(w + i * rowStride + k);
        }
        for (int r = 0; r < M; ++r) {
            const typename Isa::Vec xv = Isa::load(x + r * xStride + k);
            for (int i = 0; i < R; ++i) acc[i][r] = Isa::fma(wv[i], xv, acc[i][r]);
        }
    }
}

// The tail from k (Isa::addTail: zero products in the lanes past the row, so each product lands
// in lane k mod kLanes as in a full step), then each sum into y [M, R] stride yStride. The
// lanes-then-tail order is what makes zero padding exact: a row padded with zero products
// (attention over padded keys) sums to the same bits as the row alone.
template <class Isa, int R, int M, class Row>
static void tileFinish(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t k, int64_t cols,
                              typename Isa::Vec (&acc)[R][M], float* y, int64_t yStride) {
    if (k < cols) Isa::template addTail<R, M, Row>(x, xStride, w, rowStride, k, cols, acc);
    Isa::template storeSums<R, M>(acc, y, yStride);
}

// One skinny tile: y[r, i] = dot(x row r, W row i) for r < M, i < R, the whole row in one go.
template <class Isa, int R, int M, class Row, uintptr_t PrefetchBytes>
static void tile(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t cols, float* y,
                        int64_t yStride) {
    typename Isa::Vec acc[R][M];
    for (int i = 0; i < R; ++i)
        for (int r = 0; r < M; ++r) acc[i][r] = Isa::zero();
    const int64_t full = cols - cols % Isa::kLanes;
    tileSteps<Isa, R, M, Row, PrefetchBytes>(x, xStride, w, rowStride, 0, full, acc);
    tileFinish<Isa, R, M, Row>(x, xStride, w, rowStride, full, cols, acc, y, yStride);
}

// The panel kernel's tiles (PanelLoops.h) for W rows of Row: the same sums, taken a block of k
// at a time, the accumulators kept in `spill` between blocks (acc[i][r] at
// spill[(r * spillStride + i) * kLanes]); storing and reloading a register changes no bit.
template <class Isa, class Row>
struct PanelTiles {
    using T = typename Row::T;
    static constexpr int kLanes = Isa::kLanes;
    static constexpr int kXRows = Isa::kPanelXRows;
    static constexpr int64_t kDepth = Isa::kPanelDepth;
    static constexpr int tileRows(int m) { return Isa::panelTileRows(m); }
    template <int R, int M>
    static void run(const float* x, int64_t xStride, const T* w, int64_t rowStride, int64_t k0, int64_t k1, int64_t cols, bool first,
                    bool last, float* spill, int64_t spillStride, float* y, int64_t yStride) {
        typename Isa::Vec acc[R][M];
        for (int i = 0; i < R; ++i)
            for (int r = 0; r < M; ++r) acc[i][r] = first ? Isa::zero() : Isa::load(spill + (r * spillStride + i) * kLanes);
        tileSteps<Isa, R, M, Row, 0>(x, xStride, w, rowStride, k0, k1, acc);
        if (last) {
            tileFinish<Isa, R, M, Row>(x, xStride, w, rowStride, k1, cols, acc, y, yStride);
            return;
        }
        for (int i = 0; i < R; ++i)
            for (int r = 0; r < M; ++r) Isa::store(spill + (r * spillStride + i) * kLanes, acc[i][r]);
    }
};

// y[r, n] = dot(x row r, W row n) for r < M, n in [n0, n1): whole tiles, then the last rows one
// at a time; one and two x rows read W as two streams far apart (KernelTable.h).
template <class Isa, int M, class Row>
static void skinnyM(const float* x, int64_t xStride, const WeightView& w, int64_t n0, int64_t n1, float* y, int64_t yStride) {
    if constexpr (M <= kTwoStreamMaxRows)
        return skinnyTwoStreams<M>(&tile<Isa, 2, M, Row, kTwoStreamPrefetchBytes>, &tile<Isa, 1, M, Row, kTwoStreamPrefetchBytes>, x,
                                   xStride, w, n0, n1, y, yStride);
    constexpr int R = Isa::tileRows(M);
    const typename Row::T* base = static_cast<const typename Row::T*>(w.data);
    int64_t n = n0;
    for (; n + R <= n1; n += R)
        tile<Isa, R, M, Row, kWeightPrefetchBytes>(x, xStride, base + n * w.rowStride, w.rowStride, w.cols, y + n, yStride);
    for (; n < n1; ++n) tile<Isa, 1, M, Row, kWeightPrefetchBytes>(x, xStride, base + n * w.rowStride, w.rowStride, w.cols, y + n, yStride);
}

template <class Isa, class Row>
static void skinnyRows(const float* x, int64_t m, int64_t xStride, const WeightView& w, int64_t n0, int64_t n1, float* y,
                              int64_t yStride) {
    switch (m) {   // compile-time M, so the accumulators stay in registers
    case 1: return skinnyM<Isa, 1, Row>(x, xStride, w, n0, n1, y, yStride);
    case 2: return skinnyM<Isa, 2, Row>(x, xStride, w, n0, n1, y, yStride);
    case 3: return skinnyM<Isa, 3, Row>(x, xStride, w, n0, n1, y, yStride);
    case 4: return skinnyM<Isa, 4, Row>(x, xStride, w, n0, n1, y, yStride);
    case 5: return skinnyM<Isa, 5, Row>(x, xStride, w, n0, n1, y, yStride);
    case 6: return skinnyM<Isa, 6, Row>(x, xStride, w, n0, n1, y, yStride);
    case 7: return skinnyM<Isa, 7, Row>(x, xStride, w, n0, n1, y, yStride);
    case 8: return skinnyM<Isa, 8, Row>(x, xStride, w, n0, n1, y, yStride);
    default: return;   // the caller splits x into blocks of at most kSkinnyMaxRows
    }
}

// dst[i] = float(src[i]), i < n.
template <class Isa, class Row>
static void widenRows(const void* src, int64_t n, float* dst) {
    const typename Row::T* s = static_cast<const typename Row::T*>(src);
    int64_t i = 0;
    for (; i + Isa::kLanes <= n; i += Isa::kLanes) Isa::store(dst + i, Row::load(s + i));
    if (i < n) Isa::template widenTail<Row>(s, i, n, dst);
}

// The kernel table's skinny, panel and widen entries for an ISA whose rows of each weight dtype
// are F32, F16 and BF16.
template <class Isa, class F32, class F16, class BF16>
struct TileKernels {
    template <class Row>
    using Panel = PanelTiles<Isa, Row>;

    static void skinny(const float* x, int64_t m, int64_t xStride, const WeightView& w, int64_t n0, int64_t n1, float* y,
                       int64_t yStride) {
        switch (w.type) {
        case WeightType::F32: return skinnyRows<Isa, F32>(x, m, xStride, w, n0, n1, y, yStride);
        case WeightType::F16: return skinnyRows<Isa, F16>(x, m, xStride, w, n0, n1, y, yStride);
        case WeightType::BF16: return skinnyRows<Isa, BF16>(x, m, xStride, w, n0, n1, y, yStride);
        }
    }

    static void panel(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride, float* spill) {
        panelOfType<Panel, F32, F16, BF16>(x, m, xStride, w, y, yStride, spill);
    }

    static void widenRow(const void* src, WeightType type, int64_t n, float* dst) {
        switch (type) {
        case WeightType::F32: return widenRows<Isa, F32>(src, n, dst);
        case WeightType::F16: return widenRows<Isa, F16>(src, n, dst);
        case WeightType::BF16: return widenRows<Isa, BF16>(src, n, dst);
        }
    }
};

} // namespace kvsteer::kernels::detail

#endif
