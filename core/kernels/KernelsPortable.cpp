// The portable kernels: plain C++ loops, compiled with no special flags. They are the reference
// the SIMD files are written against and the fallback on CPUs without AVX2 (or not x86 at all).
//
// The same idea as the SIMD kernels, one W row at a time (they take a few rows per tile to reuse
// each x load): a W row is widened to float32 one chunk at a time into a small stack buffer, and
// that chunk is multiplied into all m rows of x before the next one is read, so each weight byte
// is loaded once per call.
#include "kernels/KernelTable.h"

#include <algorithm>
#include <cmath>

namespace kvsteer::kernels::detail {
namespace {

// Elements of a W row widened per step: 1 KiB of floats, in L1 beside the x rows.
constexpr int64_t kChunk = 256;
// Independent partial sums per (x row, W row). One running sum would be a single dependency chain
// (and a compiler may not reorder float adds by itself); kLanes of them let it use SIMD registers
// if it can.
constexpr int kLanes = 8;

void widenChunk(const void* src, WeightType type, int64_t n, float* dst) {
    switch (type) {
    case WeightType::F32: {
        const float* s = static_cast<const float*>(src);
        for (int64_t i = 0; i < n; ++i) dst[i] = s[i];
        break;
    }
    case WeightType::F16: {
        const uint16_t* s = static_cast<const uint16_t*>(src);
        for (int64_t i = 0; i < n; ++i) dst[i] = halfToFloatScalar(s[i]);
        break;
    }
    case WeightType::BF16: {
        const uint16_t* s = static_cast<const uint16_t*>(src);
        for (int64_t i = 0; i < n; ++i) dst[i] = bfloat16ToFloatScalar(s[i]);
        break;
    }
    }
}

int64_t elementBytes(WeightType type) { return type == WeightType::F32 ? 4 : 2; }

// acc[r][lane] += sum over this chunk of x[r, k] * wChunk[k - k0], k = k0 + lane (mod kLanes).
//   x [M, cols] stride xStride; wChunk [n] float32 (the widened slice W[row, k0:k0+n]).
template <int M>
void accumulateChunk(const float* x, int64_t xStride, int64_t k0, const float* wChunk, int64_t n,
                     float (&acc)[M][kLanes]) {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int r = 0; r < M; ++r) {
            const float* xr = x + r * xStride + k0 + i;
            for (int lane = 0; lane < kLanes; ++lane) acc[r][lane] += xr[lane] * wChunk[i + lane];
        }
    for (; i < n; ++i)   // the last < kLanes elements of the row
        for (int r = 0; r < M; ++r) acc[r][i % kLanes] += x[r * xStride + k0 + i] * wChunk[i];
}

// y[r, n] = dot(x row r, W row n) for r < M, n in [n0, n1).
template <int M>
void skinnyM(const float* x, int64_t xStride, const WeightView& w, int64_t n0, int64_t n1, float* y,
             int64_t yStride) {
    const char* base = static_cast<const char*>(w.data);
    const int64_t rowBytes = w.rowStride * elementBytes(w.type);
    const int64_t elemBytes = elementBytes(w.type);
    float chunk[kChunk];
    for (int64_t n = n0; n < n1; ++n) {
        const char* row = base + n * rowBytes;
        float acc[M][kLanes] = {};
        for (int64_t k0 = 0; k0 < w.cols; k0 += kChunk) {
            const int64_t len = w.cols - k0 < kChunk ? w.cols - k0 : kChunk;
            widenChunk(row + k0 * elemBytes, w.type, len, chunk);
            accumulateChunk<M>(x, xStride, k0, chunk, len, acc);
        }
        for (int r = 0; r < M; ++r) {
            float sum = 0.0f;
            for (int lane = 0; lane < kLanes; ++lane) sum += acc[r][lane];
            y[r * yStride + n] = sum;
        }
    }
}

void skinnyPortable(const float* x, int64_t m, int64_t xStride, const WeightView& w, int64_t n0,
                    int64_t n1, float* y, int64_t yStride) {
    switch (m) {   // m becomes a compile-time constant, so acc[][] lives in registers
    case 1: return skinnyM<1>(x, xStride, w, n0, n1, y, yStride);
    case 2: return skinnyM<2>(x, xStride, w, n0, n1, y, yStride);
    case 3: return skinnyM<3>(x, xStride, w, n0, n1, y, yStride);
    case 4: return skinnyM<4>(x, xStride, w, n0, n1, y, yStride);
    case 5: return skinnyM<5>(x, xStride, w, n0, n1, y, yStride);
    case 6: return skinnyM<6>(x, xStride, w, n0, n1, y, yStride);
    case 7: return skinnyM<7>(x, xStride, w, n0, n1, y, yStride);
    case 8: return skinnyM<8>(x, xStride, w, n0, n1, y, yStride);
    default: return;   // the caller splits x into blocks of at most kSkinnyMaxRows
    }
}

// The panel kernel is the skinny one here: it already widens W a chunk at a time, for any m in
// blocks of kSkinnyMaxRows, and the order of its sums does not depend on m.
void panelPortable(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride, float*) {
    for (int64_t r = 0; r < m; r += kSkinnyMaxRows)
        skinnyPortable(x + r * xStride, m - r < kSkinnyMaxRows ? m - r : kSkinnyMaxRows, xStride, w, 0, w.rows, y + r * yStride, yStride);
}

void widenRowPortable(const void* src, WeightType type, int64_t n, float* dst) {
    widenChunk(src, type, n, dst);
}

int64_t argmaxPortable(const float* v, int64_t n) { return argmaxByKeys(v, n); }

// The reference softmax: libm's expf, the sum in double.
void softmaxPortable(float* p, int64_t n) {
    float max = -INFINITY;
    for (int64_t s = 0; s < n; ++s) max = std::max(max, p[s]);
    double sum = 0;
    for (int64_t s = 0; s < n; ++s) {
        p[s] = std::exp(p[s] - max);
        sum += p[s];
    }
    const float inverse = float(1.0 / sum);
    for (int64_t s = 0; s < n; ++s) p[s] *= inverse;
}

void weightedSumPortable(const float* p, const float* v, int64_t vStride, int64_t n, int64_t hd, float* out) {
    for (int64_t i = 0; i < hd; ++i) out[i] = 0.0f;
    for (int64_t s = 0; s < n; ++s)
        for (int64_t i = 0; i < hd; ++i) out[i] += p[s] * v[s * vStride + i];
}

} // namespace

const KernelTable* portableTable() {
    static const KernelTable table{skinnyPortable, panelPortable, widenRowPortable, argmaxPortable, softmaxPortable, weightedSumPortable, xorRowsLoop};
    return &table;
}

} // namespace kvsteer::kernels::detail
