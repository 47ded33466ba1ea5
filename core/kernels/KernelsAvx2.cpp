// The AVX2 kernels: 8 floats per register, FMA for the multiply-adds, F16C for float16 -> float32.
// Compiled with -mavx2 -mfma -mf16c (core/CMakeLists.txt); Kernels.cpp only calls in here after
// checking the CPU has all three. The scalar reference is KernelsPortable.cpp.
//
// No standard-library templates or external inline functions are used here: a copy of one
// compiled with AVX2 could be the one the linker keeps for the whole program (see KernelTable.h).
#include "kernels/KernelTable.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/RowLoops.h"
#include "kernels/TileLoops.h"

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

// The vector type and the steps of the tiles (TileLoops.h) and the row loops (RowLoops.h) that are
// AVX2's own.
struct Avx2 {
    using Vec = __m256;
    static constexpr int kLanes = kVec;
    static Vec zero() { return _mm256_setzero_ps(); }
    static Vec load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
    static Vec fma(Vec w, Vec x, Vec acc) { return _mm256_fmadd_ps(w, x, acc); }
    static constexpr bool kPrefetchOncePerLine = true;

    // The row loops' lanes and arithmetic.
    using Mask = __m256i;
    // The first `count` lanes (0..8), as _mm256_maskload_ps / maskstore take them.
    static Mask firstLanes(int64_t count) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static Vec loadFirst(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
    static Vec loadFirstOr(Vec fill, const float* p, Mask m) { return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m)); }
    static void storeFirst(float* p, Mask m, Vec v) { _mm256_maskstore_ps(p, m, v); }
    static Vec keepFirst(Mask m, Vec v) { return _mm256_and_ps(v, _mm256_castsi256_ps(m)); }
    static Vec set1(float f) { return _mm256_set1_ps(f); }
    static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
    static Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
    static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
    static Vec max(Vec a, Vec b) { return _mm256_max_ps(a, b); }
    static float sumLanes(Vec v) { return horizontalSum(v); }
    static float maxLanes(Vec v) { return horizontalMax(v); }
    static Vec exp(Vec v) { return exp8(v); }

    // How many W rows one tile takes for M x rows. A tile keeps R*M accumulators, R widened W
    // vectors and one x vector in the 16 ymm registers. Taking several W rows at once matters
    // twice: each x vector loaded is used R times (for m >= 2 the x rows outgrow L1, and reloading
    // them for every W vector made the kernel L2-bound, not memory-bound), and R*M independent FMA
    // chains hide the FMA latency. For m = 7, 8 only one row fits: M chains are enough then.
    static constexpr int tileRows(int m) {
        const int byRegisters = 14 / (m + 1);
        return byRegisters < 4 ? byRegisters : 4;
    }
    // The panel: 4 x rows take 3 W rows a tile (12 accumulators, 3 W vectors and the x vector in
    // use fill the 16 registers, 7 loads per 12 multiply-adds), k in blocks of 1024: 4 x rows and
    // 3 W rows of 1024 floats fill L1; deeper blocks were slower (docs/benchmarks.md, "How the
    // kernels' constants were chosen").
    static constexpr int kPanelXRows = 4;
    static constexpr int64_t kPanelDepth = 1024;
    static constexpr int panelTileRows(int m) { return m == 4 ? 3 : tileRows(m); }

    // The last cols - k (< 8) products: one more step on zero-padded copies.
    template <int R, int M, class Row>
    static void addTail(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t k, int64_t cols,
                        Vec (&acc)[R][M]) {
        const int tailLen = static_cast<int>(cols - k);
        typename Row::T wTail[R][kVec] = {};
        float xTail[kVec] = {};
        Vec wv[R];
        for (int i = 0; i < R; ++i) {
            for (int j = 0; j < tailLen; ++j) wTail[i][j] = w[i * rowStride + k + j];
            wv[i] = Row::load(wTail[i]);
        }
        for (int r = 0; r < M; ++r) {
            for (int j = 0; j < tailLen; ++j) xTail[j] = x[r * xStride + k + j];
            const Vec xv = _mm256_loadu_ps(xTail);
            for (int i = 0; i < R; ++i) acc[i][r] = _mm256_fmadd_ps(wv[i], xv, acc[i][r]);
        }
    }

    template <int R, int M>
    static void storeSums(Vec (&acc)[R][M], float* y, int64_t yStride) {
        for (int i = 0; i < R; ++i)
            for (int r = 0; r < M; ++r) y[r * yStride + i] = horizontalSum(acc[i][r]);
    }

    template <class Row>
    static void widenTail(const typename Row::T* s, int64_t i, int64_t n, float* dst) {
        for (; i < n; ++i) dst[i] = Row::scalar(s + i);
    }
};

using Tiles = TileKernels<Avx2, F32Row, F16Row, BF16Row>;

int64_t argmaxAvx2(const float* v, int64_t n) { return argmaxByKeys(v, n); }

} // namespace

const KernelTable* avx2Table() {
    static const KernelTable table{Tiles::skinny, Tiles::panel, Tiles::widenRow, argmaxAvx2, softmaxRow<Avx2>, weightedSumRows<Avx2>, xorRowsLoop};
    return &table;
}

} // namespace kvsteer::kernels::detail

#else   // not x86-64: no AVX2 kernels (bestIsa() never reports Avx2 there)

namespace kvsteer::kernels::detail {
const KernelTable* avx2Table() { return nullptr; }
} // namespace kvsteer::kernels::detail

#endif
