// The AVX-512 kernels: 16 floats per register, and masked loads, so the tail of a row (cols not a
// multiple of 16) is one more masked step instead of a scalar loop. Compiled with -mavx512f
// -mavx512bw -mavx512vl (core/CMakeLists.txt): F for the 512-bit arithmetic and conversions, BW+VL
// for the masked 16-bit load of a half-width (256-bit) vector of f16/bf16 weights. Kernels.cpp only
// calls in here after checking the CPU has them. The scalar reference is KernelsPortable.cpp.
//
// No standard-library templates or external inline functions are used here: a copy of one
// compiled with AVX-512 could be the one the linker keeps for the whole program (see KernelTable.h).
#include "kernels/KernelTable.h"

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
// latency even for m = 1.
constexpr int tileRows(int m) {
    const int byRegisters = 28 / (m + 1);
    return byRegisters < 4 ? byRegisters : 4;
}

// A tile reads R rows of W side by side, R streams at once, which the hardware prefetcher follows
// less far ahead than one; asking for the bytes 2 KiB ahead in each row keeps the loads fed
// (measured with AVX-512 on the f16 4096 x 11008 matrix: 1.1x for m = 1, 1.3x for m = 8).
// Prefetches never fault, so asking past the end of a row or of W is harmless; the address is
// formed as an integer because pointer arithmetic past the end of W would not be.
constexpr uintptr_t kPrefetchBytes = 2048;
template <class T>
void prefetchAhead(const T* p) {
    _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + kPrefetchBytes), _MM_HINT_T0);
}

// One tile: y[r, i] = dot(x row r, W row i) for r < M, i < R.
//   x [M, cols] stride xStride; w: R rows of Row::T, stride rowStride; y [M, R] stride yStride.
// Each W vector is loaded (and widened) once and multiplied into all M x rows.
template <int R, int M, class Row>
void tile(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t cols,
          float* y, int64_t yStride) {
    __m512 acc[R][M];
    for (int i = 0; i < R; ++i)
        for (int r = 0; r < M; ++r) acc[i][r] = _mm512_setzero_ps();

    int64_t k = 0;
    for (; k + kVec <= cols; k += kVec) {
        __m512 wv[R];
        for (int i = 0; i < R; ++i) {
            prefetchAhead(w + i * rowStride + k);
            wv[i] = Row::load(w + i * rowStride + k);
        }
        for (int r = 0; r < M; ++r) {
            const __m512 xv = _mm512_loadu_ps(x + r * xStride + k);
            for (int i = 0; i < R; ++i) acc[i][r] = _mm512_fmadd_ps(wv[i], xv, acc[i][r]);
        }
    }
    if (k < cols) {   // tail: the last cols % 16 elements, masked (masked-off lanes load as 0)
        const __mmask16 mask = firstLanes(cols - k);
        __m512 wv[R];
        for (int i = 0; i < R; ++i) wv[i] = Row::loadMasked(w + i * rowStride + k, mask);
        for (int r = 0; r < M; ++r) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x + r * xStride + k);
            for (int i = 0; i < R; ++i) acc[i][r] = _mm512_fmadd_ps(wv[i], xv, acc[i][r]);
        }
    }

    for (int i = 0; i < R; ++i)
        for (int r = 0; r < M; ++r) y[r * yStride + i] = _mm512_reduce_add_ps(acc[i][r]);
}

// y[r, n] = dot(x row r, W row n) for r < M, n in [n0, n1): whole tiles, then the last rows one
// at a time.
template <int M, class Row>
void skinnyM(const float* x, int64_t xStride, const WeightView& w, int64_t n0, int64_t n1, float* y,
             int64_t yStride) {
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

} // namespace

const KernelTable* avx512Table() {
    static const KernelTable table{skinnyAvx512, widenRowAvx512, argmaxAvx512};
    return &table;
}

} // namespace kvsteer::kernels::detail

#else   // not x86-64: no AVX-512 kernels (bestIsa() never reports Avx512 there)

namespace kvsteer::kernels::detail {
const KernelTable* avx512Table() { return nullptr; }
} // namespace kvsteer::kernels::detail

#endif
