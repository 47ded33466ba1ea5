// The AVX2 kernels: 8 floats per register, FMA for the multiply-adds, F16C for float16 -> float32.
// Compiled with -mavx2 -mfma -mf16c (core/CMakeLists.txt); Kernels.cpp only calls in here after
// checking the CPU has all three. The scalar reference is KernelsPortable.cpp.
//
// No standard-library templates or external inline functions are used here: a copy of one
// compiled with AVX2 could be the one the linker keeps for the whole program (see KernelTable.h).
#include "kernels/KernelTable.h"
#include "kernels/PanelLoops.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace kvsteer::kernels::detail {
namespace {

constexpr int kVec = 8;   // floats per __m256

// How 8 consecutive elements of a W row become 8 floats, one struct per weight dtype; scalar()
// widens one element, for the tail of a row shorter than a register.
struct F32Row {
    using T = float;
    static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
    static float scalar(const float* p) { return *p; }
};
struct F16Row {
    using T = uint16_t;
    static __m256 load(const uint16_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static float scalar(const uint16_t* p) { return halfToFloatScalar(*p); }
};
struct BF16Row {
    using T = uint16_t;
    // bfloat16 is the top half of a float32: zero-extend each u16 to u32, shift it to the top.
    static __m256 load(const uint16_t* p) {
        const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    }
    static float scalar(const uint16_t* p) { return bfloat16ToFloatScalar(*p); }
};

// The 8 lanes of v added together.
float horizontalSum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));   // 4 lanes
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));                                          // 2 lanes
    s = _mm_add_ss(s, _mm_movehdup_ps(s));                                           // 1 lane
    return _mm_cvtss_f32(s);
}

// How many W rows one tile takes for M x rows. A tile keeps R*M accumulators, R widened W vectors
// and one x vector in the 16 ymm registers. Taking several W rows at once matters twice: each x
// vector loaded is used R times (for m >= 2 the x rows outgrow L1, and reloading them for every W
// vector made the kernel L2-bound, not memory-bound), and R*M independent FMA chains hide the FMA
// latency. For m = 7, 8 only one row fits: M chains are enough then. One and two x rows take two
// W rows far apart instead (skinnyTwoStreams).
constexpr int tileRows(int m) {
    const int byRegisters = 14 / (m + 1);
    return byRegisters < 4 ? byRegisters : 4;
}

// Each row of a tile asks for its line kWeightPrefetchBytes ahead (KernelTable.h says why), once
// per 64-byte line of a row: an f16 row moves 16 bytes a step, and a prefetch every step spent
// load slots asking for the same line four times (docs/benchmarks.md, "How the kernels' constants
// were chosen").
template <uintptr_t Bytes, class T>
void prefetchAhead(const T* p) {
    _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + Bytes), _MM_HINT_T0);
}

// A tile's sums: acc[i][r] is x row r times W row i, lane j holding the products at k = j (mod 8).
// The skinny tiles and the panel tiles (below) add the products in exactly this order, so that a
// row of y has the same bits whichever kernel, batch or thread computed it (Kernels.h).

// The full 8-element steps k0 .. k1 (k1 - k0 a multiple of 8) into acc.
//   x [M, cols] stride xStride; w: R rows of Row::T, stride rowStride.
// Each W vector is loaded (and widened) once and multiplied into all M x rows.
template <int R, int M, class Row, uintptr_t PrefetchBytes>
void tileSteps(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t k0, int64_t k1,
               __m256 (&acc)[R][M]) {
    for (int64_t k = k0; k < k1; k += kVec) {
        __m256 wv[R];
        const bool newLine = PrefetchBytes != 0 && (k * int64_t(sizeof(typename Row::T)) & 63) == 0;
        for (int i = 0; i < R; ++i) {
            if (newLine) prefetchAhead<PrefetchBytes>(w + i * rowStride + k);
            wv[i] = Row::load(w + i * rowStride + k);
        }
        for (int r = 0; r < M; ++r) {
            const __m256 xv = _mm256_loadu_ps(x + r * xStride + k);
            for (int i = 0; i < R; ++i) acc[i][r] = _mm256_fmadd_ps(wv[i], xv, acc[i][r]);
        }
    }
}

// The tail from k (the last cols % 8 elements: one more step on zero-padded copies, so each
// product lands in lane k mod 8 as in a full step), then each sum into y [M, R] stride yStride.
// The lanes-then-tail order is what makes zero padding exact: a row padded with zero products
// (attention over padded keys) sums to the same bits as the row alone.
template <int R, int M, class Row>
void tileFinish(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t k, int64_t cols,
                __m256 (&acc)[R][M], float* y, int64_t yStride) {
    const int tailLen = static_cast<int>(cols - k);
    if (tailLen > 0) {
        typename Row::T wTail[R][kVec] = {};
        float xTail[kVec] = {};
        __m256 wv[R];
        for (int i = 0; i < R; ++i) {
            for (int j = 0; j < tailLen; ++j) wTail[i][j] = w[i * rowStride + k + j];
            wv[i] = Row::load(wTail[i]);
        }
        for (int r = 0; r < M; ++r) {
            for (int j = 0; j < tailLen; ++j) xTail[j] = x[r * xStride + k + j];
            const __m256 xv = _mm256_loadu_ps(xTail);
            for (int i = 0; i < R; ++i) acc[i][r] = _mm256_fmadd_ps(wv[i], xv, acc[i][r]);
        }
    }
    for (int i = 0; i < R; ++i)
        for (int r = 0; r < M; ++r) y[r * yStride + i] = horizontalSum(acc[i][r]);
}

// One skinny tile: y[r, i] = dot(x row r, W row i) for r < M, i < R, the whole row in one go.
template <int R, int M, class Row, uintptr_t PrefetchBytes = kWeightPrefetchBytes>
void tile(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t cols,
          float* y, int64_t yStride) {
    __m256 acc[R][M];
    for (int i = 0; i < R; ++i)
        for (int r = 0; r < M; ++r) acc[i][r] = _mm256_setzero_ps();
    const int64_t full = cols - cols % kVec;
    tileSteps<R, M, Row, PrefetchBytes>(x, xStride, w, rowStride, 0, full, acc);
    tileFinish<R, M, Row>(x, xStride, w, rowStride, full, cols, acc, y, yStride);
}

// The panel kernel's tiles (PanelLoops.h) for W rows of Row: the same sums, taken a block of k
// at a time, the accumulators kept in `spill` between blocks (acc[i][r] at
// spill[(r * spillStride + i) * 8]); storing and reloading a register changes no bit.
template <class Row>
struct PanelTiles {
    using T = typename Row::T;
    static constexpr int kLanes = kVec;
    // 4 x rows take 3 W rows a tile: 12 accumulators, 3 W vectors and the x vector in use fill
    // the 16 registers, 7 loads per 12 multiply-adds.
    static constexpr int kXRows = 4;
    // k per block (a multiple of 8): 4 x rows and 3 W rows of 1024 floats fill L1; deeper blocks
    // were slower (docs/benchmarks.md, "How the kernels' constants were chosen").
    static constexpr int64_t kDepth = 1024;
    static constexpr int tileRows(int m) { return m == 4 ? 3 : kvsteer::kernels::detail::tileRows(m); }
    template <int R, int M>
    static void run(const float* x, int64_t xStride, const T* w, int64_t rowStride, int64_t k0, int64_t k1, int64_t cols,
                    bool first, bool last, float* spill, int64_t spillStride, float* y, int64_t yStride) {
        __m256 acc[R][M];
        for (int i = 0; i < R; ++i)
            for (int r = 0; r < M; ++r)
                acc[i][r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(spill + (r * spillStride + i) * kVec);
        tileSteps<R, M, Row, 0>(x, xStride, w, rowStride, k0, k1, acc);
        if (last) {
            tileFinish<R, M, Row>(x, xStride, w, rowStride, k1, cols, acc, y, yStride);
            return;
        }
        for (int i = 0; i < R; ++i)
            for (int r = 0; r < M; ++r) _mm256_storeu_ps(spill + (r * spillStride + i) * kVec, acc[i][r]);
    }
};

// y[r, n] = dot(x row r, W row n) for r < M, n in [n0, n1): whole tiles, then the last rows one
// at a time.
template <int M, class Row>
void skinnyM(const float* x, int64_t xStride, const WeightView& w, int64_t n0, int64_t n1, float* y,
             int64_t yStride) {
    if constexpr (M <= kTwoStreamMaxRows)   // W read as two streams far apart (KernelTable.h)
        return skinnyTwoStreams<M>(&tile<2, M, Row, kTwoStreamPrefetchBytes>, &tile<1, M, Row, kTwoStreamPrefetchBytes>, x,
                                   xStride, w, n0, n1, y, yStride);
    constexpr int R = tileRows(M);
    const typename Row::T* base = static_cast<const typename Row::T*>(w.data);
    int64_t n = n0;
    for (; n + R <= n1; n += R) tile<R, M, Row>(x, xStride, base + n * w.rowStride, w.rowStride, w.cols, y + n, yStride);
    for (; n < n1; ++n) tile<1, M, Row>(x, xStride, base + n * w.rowStride, w.rowStride, w.cols, y + n, yStride);
}

template <class Row>
void skinnyRows(const float* x, int64_t m, int64_t xStride, const WeightView& w, int64_t n0, int64_t n1,
                float* y, int64_t yStride) {
    switch (m) {   // compile-time M, so the accumulators stay in registers
    case 1: return skinnyM<1, Row>(x, xStride, w, n0, n1, y, yStride);
    case 2: return skinnyM<2, Row>(x, xStride, w, n0, n1, y, yStride);
    case 3: return skinnyM<3, Row>(x, xStride, w, n0, n1, y, yStride);
    case 4: return skinnyM<4, Row>(x, xStride, w, n0, n1, y, yStride);
    case 5: return skinnyM<5, Row>(x, xStride, w, n0, n1, y, yStride);
    case 6: return skinnyM<6, Row>(x, xStride, w, n0, n1, y, yStride);
    case 7: return skinnyM<7, Row>(x, xStride, w, n0, n1, y, yStride);
    case 8: return skinnyM<8, Row>(x, xStride, w, n0, n1, y, yStride);
    default: return;   // the caller splits x into blocks of at most kSkinnyMaxRows
    }
}

void skinnyAvx2(const float* x, int64_t m, int64_t xStride, const WeightView& w, int64_t n0, int64_t n1,
                float* y, int64_t yStride) {
    switch (w.type) {
    case WeightType::F32: return skinnyRows<F32Row>(x, m, xStride, w, n0, n1, y, yStride);
    case WeightType::F16: return skinnyRows<F16Row>(x, m, xStride, w, n0, n1, y, yStride);
    case WeightType::BF16: return skinnyRows<BF16Row>(x, m, xStride, w, n0, n1, y, yStride);
    }
}

void panelAvx2(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride, float* spill) {
    panelOfType<PanelTiles, F32Row, F16Row, BF16Row>(x, m, xStride, w, y, yStride, spill);
}

// dst[i] = float(src[i]), i < n.
template <class Row>
void widen(const void* src, int64_t n, float* dst) {
    const typename Row::T* s = static_cast<const typename Row::T*>(src);
    int64_t i = 0;
    for (; i + kVec <= n; i += kVec) _mm256_storeu_ps(dst + i, Row::load(s + i));
    for (; i < n; ++i) dst[i] = Row::scalar(s + i);
}

void widenRowAvx2(const void* src, WeightType type, int64_t n, float* dst) {
    switch (type) {
    case WeightType::F32: return widen<F32Row>(src, n, dst);
    case WeightType::F16: return widen<F16Row>(src, n, dst);
    case WeightType::BF16: return widen<BF16Row>(src, n, dst);
    }
}

int64_t argmaxAvx2(const float* v, int64_t n) { return argmaxByKeys(v, n); }

// The first `count` lanes (0..8) of a mask for _mm256_maskload_ps / maskstore.
__m256i firstLanes(int64_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// e^x in each lane (see kExpTaylor in KernelTable.h); 0 below kExpUnderflow and for -inf.
__m256 exp8(__m256 x) {
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2High), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Low), r);
    __m256 poly = _mm256_set1_ps(kExpTaylor[7]);
    for (int i = 6; i >= 0; --i) poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(kExpTaylor[i]));
    // 2^n: n + 127 as a float's exponent bits (n >= -126 wherever the lane is kept).
    const __m256i biased = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    const __m256 result = _mm256_mul_ps(poly, _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23)));
    const __m256 under = _mm256_cmp_ps(x, _mm256_set1_ps(kExpUnderflow), _CMP_LT_OQ);
    return _mm256_andnot_ps(under, result);
}

float horizontalMax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

void softmaxAvx2(float* p, int64_t n) {
    const __m256 lowest = _mm256_set1_ps(-__builtin_inff());
    __m256 max = lowest;
    int64_t s = 0;
    for (; s + kVec <= n; s += kVec) max = _mm256_max_ps(_mm256_loadu_ps(p + s), max);   // a NaN lane keeps max
    if (s < n) {
        const __m256i tail = firstLanes(n - s);
        max = _mm256_max_ps(_mm256_blendv_ps(lowest, _mm256_maskload_ps(p + s, tail), _mm256_castsi256_ps(tail)), max);
    }
    const __m256 shift = _mm256_set1_ps(horizontalMax(max));
    __m256 sum = _mm256_setzero_ps();
    for (s = 0; s + kVec <= n; s += kVec) {
        const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(p + s), shift));
        _mm256_storeu_ps(p + s, e);
        sum = _mm256_add_ps(sum, e);
    }
    if (s < n) {
        const __m256i tail = firstLanes(n - s);
        const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(_mm256_maskload_ps(p + s, tail), shift)), _mm256_castsi256_ps(tail));
        _mm256_maskstore_ps(p + s, tail, e);
        sum = _mm256_add_ps(sum, e);
    }
    const __m256 inverse = _mm256_set1_ps(1.0f / horizontalSum(sum));
    for (s = 0; s + kVec <= n; s += kVec) _mm256_storeu_ps(p + s, _mm256_mul_ps(_mm256_loadu_ps(p + s), inverse));
    if (s < n) {
        const __m256i tail = firstLanes(n - s);
        _mm256_maskstore_ps(p + s, tail, _mm256_mul_ps(_mm256_maskload_ps(p + s, tail), inverse));
    }
}

// out[c0 .. c0 + width) of the weighted sum, V registers of accumulators (width <= 8 V): every
// v row's slice is loaded once and added in while the accumulators stay in registers.
template <int V>
void weightedSlice(const float* p, const float* v, int64_t vStride, int64_t n, int64_t width, float* out) {
    const __m256i last = firstLanes(width - (V - 1) * kVec);
    __m256 acc[V];
    for (int j = 0; j < V; ++j) acc[j] = _mm256_setzero_ps();
    // One value row into the accumulators (acc += p[s] * row s).
    auto addRow = [&](__m256* into, int64_t s) {
        const __m256 weight = _mm256_set1_ps(p[s]);
        const float* row = v + s * vStride;
        for (int j = 0; j < V - 1; ++j) into[j] = _mm256_fmadd_ps(weight, _mm256_loadu_ps(row + j * kVec), into[j]);
        into[V - 1] = _mm256_fmadd_ps(weight, _mm256_maskload_ps(row + (V - 1) * kVec, last), into[V - 1]);
    };
    int64_t s = 0;
    if (V <= 4) {   // few accumulators: a second set takes the odd rows, so two FMA chains overlap
        __m256 odd[V];
        for (int j = 0; j < V; ++j) odd[j] = _mm256_setzero_ps();
        for (; s + 2 <= n; s += 2) {
            addRow(acc, s);
            addRow(odd, s + 1);
        }
        for (int j = 0; j < V; ++j) acc[j] = _mm256_add_ps(acc[j], odd[j]);
    }
    for (; s < n; ++s) addRow(acc, s);
    for (int j = 0; j < V - 1; ++j) _mm256_storeu_ps(out + j * kVec, acc[j]);
    _mm256_maskstore_ps(out + (V - 1) * kVec, last, acc[V - 1]);
}

void weightedSumAvx2(const float* p, const float* v, int64_t vStride, int64_t n, int64_t hd, float* out) {
    constexpr int64_t kSlice = 8 * kVec;   // 8 accumulators (of 16 registers): a 128-wide head in two passes
    for (int64_t c0 = 0; c0 < hd; c0 += kSlice) {
        const int64_t width = hd - c0 < kSlice ? hd - c0 : kSlice;
        switch ((width + kVec - 1) / kVec) {   // compile-time V, so the accumulators stay in registers
        case 1: weightedSlice<1>(p, v + c0, vStride, n, width, out + c0); break;
        case 2: weightedSlice<2>(p, v + c0, vStride, n, width, out + c0); break;
        case 3: weightedSlice<3>(p, v + c0, vStride, n, width, out + c0); break;
        case 4: weightedSlice<4>(p, v + c0, vStride, n, width, out + c0); break;
        case 5: weightedSlice<5>(p, v + c0, vStride, n, width, out + c0); break;
        case 6: weightedSlice<6>(p, v + c0, vStride, n, width, out + c0); break;
        case 7: weightedSlice<7>(p, v + c0, vStride, n, width, out + c0); break;
        default: weightedSlice<8>(p, v + c0, vStride, n, width, out + c0); break;
        }
    }
}

} // namespace

const KernelTable* avx2Table() {
    static const KernelTable table{skinnyAvx2, panelAvx2, widenRowAvx2, argmaxAvx2, softmaxAvx2, weightedSumAvx2, xorRowsLoop};
    return &table;
}

} // namespace kvsteer::kernels::detail

#else   // not x86-64: no AVX2 kernels (bestIsa() never reports Avx2 there)

namespace kvsteer::kernels::detail {
const KernelTable* avx2Table() { return nullptr; }
} // namespace kvsteer::kernels::detail

#endif
