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

#include "kernels/RowLoops.h"
#include "kernels/TileLoops.h"

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

// The vector type and the steps of the tiles (TileLoops.h) and the row loops (RowLoops.h) that are
// AVX-512's own.
struct Avx512 {
    using Vec = __m512;
    static constexpr int kLanes = kVec;
    static Vec zero() { return _mm512_setzero_ps(); }
    static Vec load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
    static Vec fma(Vec w, Vec x, Vec acc) { return _mm512_fmadd_ps(w, x, acc); }
    static constexpr bool kPrefetchOncePerLine = false;

    // The row loops' lanes and arithmetic.
    using Mask = __mmask16;
    static Mask firstLanes(int64_t count) { return static_cast<__mmask16>((1u << count) - 1u); }   // the low count (0..16)
    static Vec loadFirst(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
    static Vec loadFirstOr(Vec fill, const float* p, Mask m) { return _mm512_mask_loadu_ps(fill, m, p); }
    static void storeFirst(float* p, Mask m, Vec v) { _mm512_mask_storeu_ps(p, m, v); }
    static Vec keepFirst(Mask m, Vec v) { return _mm512_maskz_mov_ps(m, v); }
    static Vec set1(float f) { return _mm512_set1_ps(f); }
    static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
    static Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
    static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
    static Vec max(Vec a, Vec b) { return _mm512_max_ps(a, b); }
    static float sumLanes(Vec v) { return _mm512_reduce_add_ps(v); }
    static float maxLanes(Vec v) { return _mm512_reduce_max_ps(v); }
    static Vec exp(Vec v) { return exp16(v); }

    // How many W rows one tile takes for M x rows. A tile keeps R*M accumulators, R widened W
    // vectors and one x vector in the 32 zmm registers. Taking several W rows at once matters
    // twice: each x vector loaded is used R times (for m >= 2 the x rows outgrow L1, and reloading
    // them for every W vector made the kernel L2-bound, not memory-bound), and R*M independent FMA
    // chains hide the FMA latency. Up to 8 rows (7 for m = 3, 5 for m = 4): with the 512-byte
    // prefetch (KernelTable.h), 8 rows read faster than 4. The AVX2 path keeps 4: there it was no
    // faster. The panel tiles use these sizes for every m.
    static constexpr int tileRows(int m) {
        const int byRegisters = 28 / (m + 1);
        return byRegisters < 8 ? byRegisters : 8;
    }
    // The panel: 6 x rows take 4 W rows a tile (24 accumulators, 10 loads per 24 multiply-adds;
    // 5 x 5 was slower), k in blocks of 2048: fewer blocks, fewer trips of the accumulators
    // through `spill` (both measured: docs/benchmarks.md, "How the kernels' constants were chosen").
    static constexpr int kPanelXRows = 6;
    static constexpr int64_t kPanelDepth = 2048;
    static constexpr int panelTileRows(int m) { return tileRows(m); }

    // The last cols - k (< 16) products: one masked step (masked-off lanes load as 0).
    template <int R, int M, class Row>
    static void addTail(const float* x, int64_t xStride, const typename Row::T* w, int64_t rowStride, int64_t k, int64_t cols,
                        Vec (&acc)[R][M]) {
        const __mmask16 mask = firstLanes(cols - k);
        Vec wv[R];
        for (int i = 0; i < R; ++i) wv[i] = Row::loadMasked(w + i * rowStride + k, mask);
        for (int r = 0; r < M; ++r) {
            const Vec xv = _mm512_maskz_loadu_ps(mask, x + r * xStride + k);
            for (int i = 0; i < R; ++i) acc[i][r] = _mm512_fmadd_ps(wv[i], xv, acc[i][r]);
        }
    }

    // Each accumulator's lanes added: one at a time for a few, else 16 at a time (reduce16, the
    // same bits), the last group padded with zero accumulators.
    template <int R, int M>
    static void storeSums(Vec (&acc)[R][M], float* y, int64_t yStride) {
        if (R * M < 16) {
            for (int i = 0; i < R; ++i)
                for (int r = 0; r < M; ++r) y[r * yStride + i] = _mm512_reduce_add_ps(acc[i][r]);
            return;
        }
        constexpr int kCount = R * M;
        for (int first = 0; first < kCount; first += 16) {
            Vec group[16];
            for (int j = 0; j < 16; ++j) group[j] = first + j < kCount ? acc[(first + j) / M][(first + j) % M] : _mm512_setzero_ps();
            float sums[16];
            _mm512_storeu_ps(sums, reduce16(group));
            for (int j = 0; j < 16 && first + j < kCount; ++j) y[((first + j) % M) * yStride + (first + j) / M] = sums[j];
        }
    }

    template <class Row>
    static void widenTail(const typename Row::T* s, int64_t i, int64_t n, float* dst) {
        const __mmask16 mask = firstLanes(n - i);
        _mm512_mask_storeu_ps(dst + i, mask, Row::loadMasked(s + i, mask));
    }
};

using Tiles = TileKernels<Avx512, F32Row, F16Row, BF16Row>;

int64_t argmaxAvx512(const float* v, int64_t n) { return argmaxByKeys(v, n); }

} // namespace

const KernelTable* avx512Table() {
    static const KernelTable table{Tiles::skinny, Tiles::panel, Tiles::widenRow, argmaxAvx512, softmaxRow<Avx512>, weightedSumRows<Avx512>, xorRowsLoop};
    return &table;
}

} // namespace kvsteer::kernels::detail

#else   // not x86-64: no AVX-512 kernels (bestIsa() never reports Avx512 there)

namespace kvsteer::kernels::detail {
const KernelTable* avx512Table() { return nullptr; }
} // namespace kvsteer::kernels::detail

#endif
