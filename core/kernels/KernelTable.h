#pragma once
// Internal to the kernels: the per-ISA function table that Kernels.cpp dispatches through, and the
// exact scalar conversions every kernel file shares.
//
// Each ISA lives in its own .cpp compiled with its own -m flags (KernelsAvx2.cpp with AVX2/FMA/F16C,
// KernelsAvx512.cpp with AVX-512), and only Kernels.cpp chooses which one runs, after asking the
// CPU. So nothing in this header may be an inline function with external linkage: if one were
// compiled into an AVX-512 file, the linker could keep that copy for the whole program and a
// portable caller would crash on an older CPU. The helpers below are `static inline` (one private
// copy per file) for that reason.
#include "kernels/Kernels.h"

#include <climits>
#include <cstdint>
#include <cstring>

namespace kvsteer::kernels::detail {

// y[r, n] = dot(x row r, W row n) for r < m and rows n in [n0, n1) of W.
//   x [m, w.cols] float32, row stride xStride; y [m, w.rows] float32, row stride yStride.
// m is 1..kSkinnyMaxRows: each W row is loaded once and used for all m x rows.
using SkinnyFn = void (*)(const float* x, int64_t m, int64_t xStride, const WeightView& w,
                          int64_t n0, int64_t n1, float* y, int64_t yStride);
// y[r, n] = dot(x row r, W row n) for r < m (any m) and every row n of w, W read in its own dtype:
// the panel kernel, in the skinny kernel's summation order (PanelLoops.h). spill is scratch of
// panelSpillFloats(m) floats.
using PanelFn = void (*)(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride,
                         float* spill);
// dst[i] = float(src[i]) for i < n, src of type t.
using WidenFn = void (*)(const void* src, WeightType t, int64_t n, float* dst);
// The index of the first largest of v[0..n), a NaN counting as the largest.
using ArgmaxFn = int64_t (*)(const float* v, int64_t n);

// In place: p[s] = exp(p[s] - max) / sum for s < n.
using SoftmaxFn = void (*)(float* p, int64_t n);
// out[i] = sum over s < n of p[s] * v[s * vStride + i], for i < hd.
using WeightedSumFn = void (*)(const float* p, const float* v, int64_t vStride, int64_t n, int64_t hd, float* out);
// The xor of every 8-byte word of `rows` rows of rowBytes bytes, row r at data + r * strideBytes
// (a row's last word zero-padded): reads the bytes and nothing else.
using XorRowsFn = uint64_t (*)(const char* data, int64_t rowBytes, int64_t strideBytes, int64_t rows);

struct KernelTable {
    SkinnyFn skinny = nullptr;
    PanelFn panel = nullptr;
    WidenFn widenRow = nullptr;
    ArgmaxFn argmax = nullptr;
    SoftmaxFn softmax = nullptr;
    WeightedSumFn weightedSum = nullptr;
    XorRowsFn xorRows = nullptr;
};

// One table per ISA. The x86 getters return nullptr when the project is built for another
// architecture (bestIsa() is then Portable, so they are never asked for).
const KernelTable* portableTable();
const KernelTable* avx2Table();
const KernelTable* avx512Table();

// "avx512" | "avx2" | "portable" (any case) -> true and *out; anything else (or null) -> false.
// Used for KVSTEER_ISA; declared here so the tests can check the parsing without the environment.
bool parseIsaName(const char* name, Isa* out);

// ---- exact scalar conversions (static inline: see the note at the top) ----

static inline float floatFromBits(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// IEEE binary16 -> binary32. Every half value is a float value, so this is exact: re-bias the
// exponent (15 -> 127) and move the 10 mantissa bits to the top of float's 23.
static inline float halfToFloatScalar(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1fu)   // inf (mantissa 0) or NaN (payload kept)
        return floatFromBits(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0)       // normal: 2^(e-15) * 1.m
        return floatFromBits(sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13));
    if (mantissa == 0)       // +-0
        return floatFromBits(sign);
    // Subnormal half, mantissa * 2^-24: normal as a float. Shift the leading 1 up to bit 10 (the
    // implicit bit) and lower the exponent once per shift.
    int shifts = 0;
    while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        ++shifts;
    }
    const uint32_t floatExponent = static_cast<uint32_t>(127 - 14 - shifts);
    return floatFromBits(sign | (floatExponent << 23) | ((mantissa & 0x3ffu) << 13));
}

// bfloat16 is the top half of a float32: put the 16 bits back on top.
static inline float bfloat16ToFloatScalar(uint16_t b) {
    return floatFromBits(static_cast<uint32_t>(b) << 16);
}

// ---- argmax, as plain loops every ISA file compiles with its own flags (static inline: see the
// note at the top) ----
//
// A float compare-and-keep-the-index loop does not vectorise. So each float becomes an int32 key
// that orders as the floats do, the largest key is found (an integer max, which the compiler
// turns into SIMD at any width), and then its first index. The keys: the magnitude bits, negated
// for a negative float (so -0 and +0 tie, as they compare equal); any NaN the largest key of all,
// so the first NaN wins, as at::argmax lets it. Branch-free, so the loops vectorise.

using FloatBits = int32_t __attribute__((may_alias));   // a float read as its bits

static inline int32_t orderKey(int32_t bits) {
    const int32_t sign = bits >> 31;                      // 0, or -1 for a negative float
    const int32_t magnitude = bits & 0x7fffffff;
    const int32_t key = (magnitude ^ sign) - sign;        // -magnitude when negative
    const int32_t nan = (0x7f800000 - magnitude) >> 31;   // -1 for a NaN (magnitude above infinity's)
    return (key & ~nan) | (nan & INT32_MAX);
}

static inline int64_t argmaxByKeys(const float* values, int64_t n) {
    const FloatBits* v = reinterpret_cast<const FloatBits*>(values);
    int32_t best = INT32_MIN;
    for (int64_t i = 0; i < n; ++i) {
        const int32_t key = orderKey(v[i]);
        best = key > best ? key : best;   // not std::max: an inline with external linkage (see the top)
    }
    // Its first index: a block at a time (a vectorised "is it here?"), then within the block.
    constexpr int64_t kBlock = 256;
    int64_t i = 0;
    for (;; i += kBlock) {
        if (i + kBlock >= n) break;
        int32_t here = 0;
        for (int64_t j = i; j < i + kBlock; ++j) here |= orderKey(v[j]) == best;
        if (here) break;
    }
    for (; i < n; ++i)
        if (orderKey(v[i]) == best) return i;
    return 0;   // n == 0
}

// ---- how far ahead the weight reads prefetch (shared by the skinny tiles and the read loop) ----
//
// A tile reads R rows of W side by side, R streams at once, which the hardware prefetcher follows
// less far ahead than one; asking for the line kWeightPrefetchBytes ahead in each row keeps the
// loads fed (512 bytes streamed fastest on both ISAs: docs/benchmarks.md, "How the kernels'
// constants were chosen"). Prefetches never fault, so asking past the end of a row or of W is
// harmless; the address is formed as an integer because pointer arithmetic past the end of W
// would not be.
constexpr uintptr_t kWeightPrefetchBytes = 512;

// ---- one and two x rows (a decode step, the side-by-side pair): two streams far apart ----
//
// For m <= kTwoStreamMaxRows a thread reads its rows of W as two sequential streams: the first half
// of its rows and the second half side by side, one row of each per tile, so each stream runs on
// through consecutive rows. Neighbouring rows read side by side are 4 KiB apart for 2048 f16
// columns (8 KiB for 4096), and that pattern streamed slower the fewer rows a tile took; two far
// streams were the fastest, three or four slower. From 3 rows up the x rows are re-read per W
// vector and the 8-row tile stays. The line 4 KiB ahead is prefetched (the measurements:
// docs/benchmarks.md, "How the kernels' constants were chosen"). Each sum keeps its one chain, so
// the bits are those of any other tile.
constexpr int64_t kTwoStreamMaxRows = 2;
constexpr uintptr_t kTwoStreamPrefetchBytes = 4096;

// y[r, n] = dot(x row r, W row n) for r < M, n in [n0, n1): rows n and n + half in one tile of two
// (tile2), then the odd last row (tile1). The tiles are the ISA file's skinny tile for W's dtype,
// y[r, i] at y[r * yStride + i], prefetching kTwoStreamPrefetchBytes ahead.
template <int M, class T>
static inline void skinnyTwoStreams(void (*tile2)(const float*, int64_t, const T*, int64_t, int64_t, float*, int64_t),
                                    void (*tile1)(const float*, int64_t, const T*, int64_t, int64_t, float*, int64_t),
                                    const float* x, int64_t xStride, const WeightView& w, int64_t n0, int64_t n1, float* y,
                                    int64_t yStride) {
    const T* base = static_cast<const T*>(w.data);
    const int64_t half = (n1 - n0) / 2;
    for (int64_t n = n0; n < n0 + half; ++n) {
        float sums[M][2];   // tile2's y, stride 2: x row r's pair at sums[r]
        tile2(x, xStride, base + n * w.rowStride, half * w.rowStride, w.cols, &sums[0][0], 2);
        for (int r = 0; r < M; ++r) {
            y[r * yStride + n] = sums[r][0];
            y[r * yStride + n + half] = sums[r][1];
        }
    }
    if ((n1 - n0) % 2 != 0) tile1(x, xStride, base + (n1 - 1) * w.rowStride, w.rowStride, w.cols, y + n1 - 1, yStride);
}

// ---- the read roofline's loop, compiled by every ISA file with its own flags (static inline: see
// the note at the top) ----
//
// Reads as the skinny kernels read W for one x row: two streams, the first and the second half of
// the rows side by side, 64 bytes of each a step, with the line kTwoStreamPrefetchBytes ahead in
// each prefetched. The loads are 16-byte vectors, which GCC keeps in xmm registers on
// every ISA; a 64-byte vector type spilled to the stack with AVX2, and a memcpy into an array of
// them left dead stores in the loop, either way a slower read than the matmul it is the roofline of.
typedef uint64_t Words2 __attribute__((vector_size(16)));
typedef uint64_t UnalignedWords2 __attribute__((vector_size(16), aligned(1), may_alias));   // a load from any address
// The n rows at row[0..n) side by side, 64 bytes of each a step, then the bytes past the last
// whole 64 of each.
static inline void xorRowsSideBySide(const char* const* row, int n, int64_t rowBytes, Words2& acc, uint64_t& rest) {
    int64_t i = 0;
    for (; i + 64 <= rowBytes; i += 64)
        for (int r = 0; r < n; ++r) {
            __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(row[r] + i) + kTwoStreamPrefetchBytes));
            const UnalignedWords2* v = reinterpret_cast<const UnalignedWords2*>(row[r] + i);
            acc ^= v[0] ^ v[1] ^ v[2] ^ v[3];
        }
    for (int r = 0; r < n; ++r)
        for (int64_t j = i; j < rowBytes; j += 8) {
            uint64_t word = 0;
            std::memcpy(&word, row[r] + j, static_cast<size_t>(rowBytes - j < 8 ? rowBytes - j : 8));
            rest ^= word;
        }
}
static inline uint64_t xorRowsLoop(const char* data, int64_t rowBytes, int64_t strideBytes, int64_t rows) {
    Words2 acc = {0, 0};
    uint64_t rest = 0;
    const int64_t half = rows / 2;
    for (int64_t r = 0; r < half; ++r) {
        const char* pair[2] = {data + r * strideBytes, data + (half + r) * strideBytes};
        xorRowsSideBySide(pair, 2, rowBytes, acc, rest);
    }
    if (rows % 2 != 0) {
        const char* last[1] = {data + (rows - 1) * strideBytes};
        xorRowsSideBySide(last, 1, rowBytes, acc, rest);
    }
    return rest ^ acc[0] ^ acc[1];
}

// ---- exp for the softmax's SIMD paths (constants only: the code is per ISA) ----
//
// e^x = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2, |r| <= ln2 / 2. ln 2 is split in
// two (a high part exact in few bits, so n * kLn2High is exact, and the rest) so r keeps its low
// bits. e^r is its Taylor series to r^7: the first term left out, r^8 / 8!, is below 1e-8 there,
// under half a float ulp of e^r >= 0.7. A softmax only asks for x <= 0 (scores minus their max);
// below kExpUnderflow e^x is under float's smallest normal and the paths return 0, as they do for
// -inf (a masked score).
constexpr float kLog2E = 1.44269504088896341f;
constexpr float kLn2High = 0.693145751953125f;
constexpr float kLn2Low = 1.42860682030941723e-6f;
constexpr float kExpUnderflow = -87.33654475f;   // ln of float's smallest normal, 2^-126
constexpr float kExpTaylor[8] = {1.0f, 1.0f, 1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040};

} // namespace kvsteer::kernels::detail
