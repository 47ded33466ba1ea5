// The AVX-512 kernels: 16 floats per register, and masked loads, so the tail of a row (cols not a
// multiple of 16) is one more masked step instead of a scalar loop. Compiled with -mavx512f
// -mavx512bw -mavx512vl (core/CMakeLists.txt): F for the 512-bit arithmetic and conversions, BW+VL
// for the masked 16-bit load of a half-width (256-bit) vector of f16/bf16 weights. Kernels.cpp only
// calls in here after checking the CPU has them. The scalar reference is KernelsPortable.cpp.
//
// No standard-library templates or external inline functions are used here: a copy of one
// compiled with AVX-512 could be the one the linker keeps for the whole program (see KernelTable.h).
#include "kernels/KernelTable.h"
#include "kernels/PanelLoops.h"

#if defined(__x86_64__)
// GCC 12 warns about uninitialised variables inside its own AVX-512 headers (their
// _mm512_undefined_*() helpers initialise a variable with itself on purpose); the warning is about
// the header, not this code, so it is silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace kvsteer::kernels::detail {
namespace {

constexpr int kVec = 16;   // floats per __m512

// How 16 consecutive elements of a W row become 16 floats, one struct per weight dtype.
// loadMasked() reads only the lanes set in `mask` (the others are 0 and never touched in memory),
// for the tail of a row.
struct F32Row {
    using T = float;
    static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
    static __m512 loadMasked(const float* p, __mmask16 mask) { return _mm512_maskz_loadu_ps(mask, p); }
};
struct F16Row {
    using T = uint16_t;
    static __m512 load(const uint16_t* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static __m512 loadMasked(const uint16_t* p, __mmask16 mask) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
    }
};
struct BF16Row {
    using T = uint16_t;
    // bfloat16 is the top half of a float32: zero-extend each u16 to u32, shift it to the top.
    static __m512 widen(__m256i halves) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(halves), 16));
    }
    static __m512 load(const uint16_t* p) {
        return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static __m512 loadMasked(const uint16_t* p, __mmask16 mask) {
        return widen(_mm256_maskz_loadu_epi16(mask, p));
    }
};

// The low `count` lanes (0..16).
__mmask16 firstLanes(int64_t count) {
    return static_cast<__mmask16>((1u << count) - 1u);
}

// How many W rows one tile takes for M x rows. A tile keeps R*M accumulators, R widened W vectors
// and one x vector in the 32 zmm registers. Taking several W rows at once matters twice: each x
// vector loaded is used R times (for m >= 2 the x rows outgrow L1, and reloading them for every W
// vector made the kernel L2-bound, not memory-bound), and R*M independent FMA chains hide the FMA
// latency. Up to 8 rows (7 for m = 3, 5 for m = 4): with the 512-byte prefetch (KernelTable.h), 8
// rows read faster than 4. The AVX2 path keeps 4: there it was no faster. One and two x rows take
// two W rows far apart instead (skinnyTwoStreams); the panel tiles use these sizes for every m.
constexpr int tileRows(int m) {
    const int byRegisters = 28 / (m + 1);
    return byRegisters < 8 ? byRegisters : 8;
}

// Each row of a tile asks for its line Bytes ahead (KernelTable.h says why and how far).
template <uintptr_t Bytes, class T>
void prefetchAhead(const T* p) {
    _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + Bytes), _MM_HINT_T0);
}

// A tile's sums: acc[i][r] is x row r times W row i, lane j holding the products at k = j (mod 16).
// The skinny tiles and the panel tiles (below) add the products in exactly this order, so that a
// row of y has the same bits whichever kernel, batch or thread computed it (Kernels.h).

// Lane j of the result = _mm512_reduce_add_ps(v[j]), bit for bit: the same additions in the same
// tree (lanes i + i+8, then i + i+4, i + i+2, 0 + 1; a float addition is commutative, so only the
// pairing matters), done for 16 vectors at once with shuffles between the steps — a small matrix
// (K of 32..128, attention's scores) spent a third of its time summing lanes one vector at a time.
__m512 reduce16(const __m512 (&v)[16]) {
    // Fed so that the lanes come out in order: the shuffles below leave the sum of input 4c + k in
    // lane 4k + c.
    __m512 a[16];
    for (int m = 0; m < 16; ++m) a[m] = v[(m % 4) * 4 + m / 4];
    __m512 b[8], c[4], d[2];
    for (int p = 0; p < 8; ++p)   // lanes i + i+8: [a[2p]'s 8 | a[2p+1]'s 8]
        b[p] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int q = 0; q < 4; ++q)   // i + i+4: 128-bit lane k holds a[4q + k]'s 4
        c[q] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * q], b[2 * q + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(b[2 * q], b[2 * q + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    for (int t = 0; t < 2; ++t)   // i + i+2, within each 128-bit lane
        d[t] = _mm512_add_ps(_mm512_shuffle_ps(c[2 * t], c[2 * t + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(c[2 * t], c[2 * t + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // 0 + 1
    return _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

// The full 16-element steps k0 .. k1 (k1 - k0 a multiple of 16) into acc.
//   x [M, cols] stride xStride; w: R rows of Row::T, stride rowStride.
// Each W vector is loaded (and widened) once and multiplied into all M x rows.
template <int R, int M, class Row, uintptr_t PrefetchBytes>
void tileSteps(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t k0, int64_t k1,
               __m512 (&acc)[R][M]) {
    for (int64_t k = k0; k < k1; k += kVec) {
        __m512 wv[R];
        for (int i = 0; i < R; ++i) {
            if (PrefetchBytes != 0) prefetchAhead<PrefetchBytes>(w + i * rowStride + k);
            wv[i] = Row::load(w + i * rowStride + k);
        }
        for (int r = 0; r < M; ++r) {
            const __m512 xv = _mm512_loadu_ps(x + r * xStride + k);
            for (int i = 0; i < R; ++i) acc[i][r] = _mm512_fmadd_ps(wv[i], xv, acc[i][r]);
        }
    }
}

// The tail from k (the last cols % 16 elements, one masked step: masked-off lanes load as 0), then
// each sum into y [M, R] stride yStride.
template <int R, int M, class Row>
void tileFinish(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t k, int64_t cols,
                __m512 (&acc)[R][M], float* y, int64_t yStride) {
    if (k < cols) {
        const __mmask16 mask = firstLanes(cols - k);
        __m512 wv[R];
        for (int i = 0; i < R; ++i) wv[i] = Row::loadMasked(w + i * rowStride + k, mask);
        for (int r = 0; r < M; ++r) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x + r * xStride + k);
            for (int i = 0; i < R; ++i) acc[i][r] = _mm512_fmadd_ps(wv[i], xv, acc[i][r]);
        }
    }
    if (R * M < 16) {
        for (int i = 0; i < R; ++i)
            for (int r = 0; r < M; ++r) y[r * yStride + i] = _mm512_reduce_add_ps(acc[i][r]);
        return;
    }
    // 16 sums at a time (reduce16); the last group padded with zero accumulators.
    constexpr int kCount = R * M;
    for (int first = 0; first < kCount; first += 16) {
        __m512 group[16];
        for (int j = 0; j < 16; ++j) group[j] = first + j < kCount ? acc[(first + j) / M][(first + j) % M] : _mm512_setzero_ps();
        float sums[16];
        _mm512_storeu_ps(sums, reduce16(group));
        for (int j = 0; j < 16 && first + j < kCount; ++j) y[((first + j) % M) * yStride + (first + j) / M] = sums[j];
    }
}

// One skinny tile: y[r, i] = dot(x row r, W row i) for r < M, i < R, the whole row in one go.
template <int R, int M, class Row, uintptr_t PrefetchBytes = kWeightPrefetchBytes>
void tile(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t cols,
          float* y, int64_t yStride) {
    __m512 acc[R][M];
    for (int i = 0; i < R; ++i)
        for (int r = 0; r < M; ++r) acc[i][r] = _mm512_setzero_ps();
    const int64_t full = cols - cols % kVec;
    tileSteps<R, M, Row, PrefetchBytes>(x, xStride, w, rowStride, 0, full, acc);
    tileFinish<R, M, Row>(x, xStride, w, rowStride, full, cols, acc, y, yStride);
}

// The panel kernel's tiles (PanelLoops.h) for W rows of Row: the same sums, taken a block of k at
// a time, the accumulators kept in `spill` between blocks (acc[i][r] at
// spill[(r * spillStride + i) * 16]); storing and reloading a register changes no bit.
template <class Row>
struct PanelTiles {
    using T = typename Row::T;
    static constexpr int kLanes = kVec;
    // 6 x rows take 4 W rows a tile (24 accumulators, 10 loads per 24 multiply-adds); 5 x 5 was
    // slower.
    static constexpr int kXRows = 6;
    // k per block (a multiple of 16): fewer blocks, fewer trips of the accumulators through `spill`
    // (both measured: docs/benchmarks.md, "How the kernels' constants were chosen").
    static constexpr int64_t kDepth = 2048;
    static constexpr int tileRows(int m) { return kvsteer::kernels::detail::tileRows(m); }
    template <int R, int M>
    static void run(const float* x, int64_t xStride, const T* w, int64_t rowStride, int64_t k0, int64_t k1, int64_t cols,
                    bool first, bool last, float* spill, int64_t spillStride, float* y, int64_t yStride) {
        __m512 acc[R][M];
        for (int i = 0; i < R; ++i)
            for (int r = 0; r < M; ++r)
                acc[i][r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(spill + (r * spillStride + i) * kVec);
        tileSteps<R, M, Row, 0>(x, xStride, w, rowStride, k0, k1, acc);
        if (last) {
            tileFinish<R, M, Row>(x, xStride, w, rowStride, k1, cols, acc, y, yStride);
            return;
        }
        for (int i = 0; i < R; ++i)
            for (int r = 0; r < M; ++r) _mm512_storeu_ps(spill + (r * spillStride + i) * kVec, acc[i][r]);
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

void skinnyAvx512(const float* x, int64_t m, int64_t xStride, const WeightView& w, int64_t n0, int64_t n1,
                  float* y, int64_t yStride) {
    switch (w.type) {
    case WeightType::F32: return skinnyRows<F32Row>(x, m, xStride, w, n0, n1, y, yStride);
    case WeightType::F16: return skinnyRows<F16Row>(x, m, xStride, w, n0, n1, y, yStride);
    case WeightType::BF16: return skinnyRows<BF16Row>(x, m, xStride, w, n0, n1, y, yStride);
    }
}

void panelAvx512(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride, float* spill) {
    panelOfType<PanelTiles, F32Row, F16Row, BF16Row>(x, m, xStride, w, y, yStride, spill);
}

// dst[i] = float(src[i]), i < n.
template <class Row>
void widen(const void* src, int64_t n, float* dst) {
    const typename Row::T* s = static_cast<const typename Row::T*>(src);
    int64_t i = 0;
    for (; i + kVec <= n; i += kVec) _mm512_storeu_ps(dst + i, Row::load(s + i));
    if (i < n) {
        const __mmask16 mask = firstLanes(n - i);
        _mm512_mask_storeu_ps(dst + i, mask, Row::loadMasked(s + i, mask));
    }
}

void widenRowAvx512(const void* src, WeightType type, int64_t n, float* dst) {
    switch (type) {
    case WeightType::F32: return widen<F32Row>(src, n, dst);
    case WeightType::F16: return widen<F16Row>(src, n, dst);
    case WeightType::BF16: return widen<BF16Row>(src, n, dst);
    }
}

int64_t argmaxAvx512(const float* v, int64_t n) { return argmaxByKeys(v, n); }

// e^x in each lane (see kExpTaylor in KernelTable.h); 0 below kExpUnderflow and for -inf.
__m512 exp16(__m512 x) {
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2High), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Low), r);
    __m512 poly = _mm512_set1_ps(kExpTaylor[7]);
    for (int i = 6; i >= 0; --i) poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(kExpTaylor[i]));
    // 2^n: n + 127 as a float's exponent bits (n >= -126 wherever the lane is kept).
    const __m512i biased = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    const __m512 result = _mm512_mul_ps(poly, _mm512_castsi512_ps(_mm512_slli_epi32(biased, 23)));
    const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpUnderflow), _CMP_LT_OQ);
    return _mm512_mask_mov_ps(result, under, _mm512_setzero_ps());
}

void softmaxAvx512(float* p, int64_t n) {
    const __m512 lowest = _mm512_set1_ps(-__builtin_inff());
    __m512 max = lowest;
    int64_t s = 0;
    for (; s + kVec <= n; s += kVec) max = _mm512_max_ps(_mm512_loadu_ps(p + s), max);   // a NaN lane keeps max
    if (s < n) max = _mm512_max_ps(_mm512_mask_loadu_ps(lowest, firstLanes(n - s), p + s), max);
    const __m512 shift = _mm512_set1_ps(_mm512_reduce_max_ps(max));
    __m512 sum = _mm512_setzero_ps();
    for (s = 0; s + kVec <= n; s += kVec) {
        const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(p + s), shift));
        _mm512_storeu_ps(p + s, e);
        sum = _mm512_add_ps(sum, e);
    }
    if (s < n) {
        const __mmask16 tail = firstLanes(n - s);
        const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, p + s), shift));
        _mm512_mask_storeu_ps(p + s, tail, e);
        sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(tail, e));
    }
    const __m512 inverse = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (s = 0; s + kVec <= n; s += kVec) _mm512_storeu_ps(p + s, _mm512_mul_ps(_mm512_loadu_ps(p + s), inverse));
    if (s < n) {
        const __mmask16 tail = firstLanes(n - s);
        _mm512_mask_storeu_ps(p + s, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, p + s), inverse));
    }
}

// out[c0 .. c0 + width) of the weighted sum, V registers of accumulators (width <= 16 V): every
// v row's slice is loaded once and added in while the accumulators stay in registers.
template <int V>
void weightedSlice(const float* p, const float* v, int64_t vStride, int64_t n, int64_t width, float* out) {
    const __mmask16 last = firstLanes(width - (V - 1) * kVec);
    __m512 acc[V];
    for (int j = 0; j < V; ++j) acc[j] = _mm512_setzero_ps();
    // One value row into the accumulators (acc += p[s] * row s).
    auto addRow = [&](__m512* into, int64_t s) {
        const __m512 weight = _mm512_set1_ps(p[s]);
        const float* row = v + s * vStride;
        for (int j = 0; j < V - 1; ++j) into[j] = _mm512_fmadd_ps(weight, _mm512_loadu_ps(row + j * kVec), into[j]);
        into[V - 1] = _mm512_fmadd_ps(weight, _mm512_maskz_loadu_ps(last, row + (V - 1) * kVec), into[V - 1]);
    };
    int64_t s = 0;
    if (V <= 4) {   // few accumulators: a second set takes the odd rows, so two FMA chains overlap
        __m512 odd[V];
        for (int j = 0; j < V; ++j) odd[j] = _mm512_setzero_ps();
        for (; s + 2 <= n; s += 2) {
            addRow(acc, s);
            addRow(odd, s + 1);
        }
        for (int j = 0; j < V; ++j) acc[j] = _mm512_add_ps(acc[j], odd[j]);
    }
    for (; s < n; ++s) addRow(acc, s);
    for (int j = 0; j < V - 1; ++j) _mm512_storeu_ps(out + j * kVec, acc[j]);
    _mm512_mask_storeu_ps(out + (V - 1) * kVec, last, acc[V - 1]);
}

void weightedSumAvx512(const float* p, const float* v, int64_t vStride, int64_t n, int64_t hd, float* out) {
    constexpr int64_t kSlice = 8 * kVec;   // 8 accumulators: a 128-wide head in one pass over v
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

const KernelTable* avx512Table() {
    static const KernelTable table{skinnyAvx512, panelAvx512, widenRowAvx512, argmaxAvx512, softmaxAvx512, weightedSumAvx512, xorRowsLoop};
    return &table;
}

} // namespace kvsteer::kernels::detail

#else   // not x86-64: no AVX-512 kernels (bestIsa() never reports Avx512 there)

namespace kvsteer::kernels::detail {
const KernelTable* avx512Table() { return nullptr; }
} // namespace kvsteer::kernels::detail

#endif
