#pragma once
// kvsteer's own CPU kernels: y = x · Wᵀ with W kept in the checkpoint's dtype, and the few vector
// steps a decode step repeats many times (argmax, attention's softmax and weighted sum).
//
// Why they exist: libtorch 1.13 has no float16 matmul on CPU and its bfloat16 paths are slow or
// wrong on AVX2, yet a 7B model only fits a 24 GB desktop if its 16-bit weights stay 16-bit. So
// weights stay as they are on disk (mmap views) and these kernels widen them to float32 on the fly;
// f16/bf16 -> f32 is exact, so results equal the widened path up to summation order.
//
// Two shapes of work, two kernels, one summation order:
//   - skinny: 1..8 rows of x (a decode step, the side-by-side pair, a short suffix). Memory-bound:
//     each weight row is read once and multiplied into every x row while it is in registers.
//   - panel: many rows (a prompt, the vision tower). Compute-bound: each thread takes a share of
//     W's rows and runs cache-blocked tiles over them (PanelLoops.h), each W vector widened in
//     registers as the skinny tiles widen it.
// Both add the products of y[r, n] in the same order: vector lanes over k, the tail, the lanes
// added. That order depends on W's cols and the ISA only, so a row of y has the same bits whatever
// m is, whichever kernel ran, whatever else is in the batch, however many threads split the work
// (each output is computed whole by one thread), and whatever BLAS the process has: no BLAS is
// called. Batch-invariant and thread-count-invariant answers rest on this (docs/internals.md
// "Determinism").
// Both split W's rows over the threads of ATen's intra-op pool, the process's one pool (see
// Runtime.h), in blocks that each thread takes as it gets free, so a thread slowed by a neighbour
// does fewer: the panel kernel in panels of a few hundred rows (panelRows), the skinny kernel in
// one block per thread per matrix, which its tiles read as two long streams for one or two rows of
// x (KernelTable.h).
//
// Every SIMD path has a scalar reference beside it; the path is chosen at run time from what the
// CPU has (AVX-512, AVX2+F16C+FMA, or portable C++), and can be forced for tests and comparisons.
// The SIMD files see no libtorch: plain pointers, shapes in comments. Kernels.cpp alone uses
// ATen, for its thread pool.
#include <cstdint>

namespace kvsteer::kernels {

enum class WeightType { F32, F16, BF16 };

// A row-major weight matrix W [rows, cols] in its storage dtype; row r starts at
// data + r * rowStride elements. The memory is not owned (usually an mmap'd checkpoint).
struct WeightView {
    const void* data = nullptr;
    WeightType type = WeightType::F32;
    int64_t rows = 0, cols = 0;
    int64_t rowStride = 0;   // in elements; == cols for a contiguous matrix
};

// The instruction set a kernel runs on, best first.
enum class Isa { Avx512, Avx2, Portable };
Isa bestIsa();               // what this CPU supports
Isa activeIsa();             // what the kernels use: bestIsa(), or KVSTEER_ISA=avx512|avx2|portable (capped to bestIsa)
void forceIsa(Isa isa);      // for tests and benchmarks; capped to bestIsa()
const char* isaName(Isa isa);

// The most x rows the skinny kernel takes in one pass.
constexpr int64_t kSkinnyMaxRows = 8;

// y[r, n] = sum_k x[r, k] * W[n, k] for r < m, n < W.rows, k < W.cols.
//   x [m, W.cols] float32, row stride xStride; y [m, W.rows] float32, row stride yStride.
// Any m >= 1: m <= kSkinnyMaxRows uses the skinny kernel, larger m the panel kernel. Since the
// panel kernel reads 16-bit weights in place it is the faster one above about 6 rows; the limit
// stays at 8, the skinny kernel's pass (docs/benchmarks.md, "How the kernels' constants were
// chosen"). Either kernel gives a row the same bits.
void matmul(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride);

// The two kernels on their own (matmul picks between them); exposed for tests and the bench.
void skinnyMatmul(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride);
void panelMatmul(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride);

// y = x · [W_0; W_1; ...]ᵀ for count weights with the same cols: part p fills y's columns after
// those of parts 0..p-1. A fused projection (q, k, v side by side) as one pass over the thread
// pool: one wait for the slowest thread per projection, not one per part. The kernel is chosen as
// matmul chooses it; the panel kernel goes part by part.
void matmulStacked(const float* x, int64_t m, int64_t xStride, const WeightView* parts, int count, float* y, int64_t yStride);
void skinnyMatmulStacked(const float* x, int64_t m, int64_t xStride, const WeightView* parts, int count, float* y,
                         int64_t yStride);

// Reads every byte of the weights once, split over the pool as the skinny kernel splits them, and
// does nothing else: the time it takes is the memory roofline of a decode step (bench). Returns a
// checksum, the same on every ISA, so that the reads cannot be left out: the xor of every 8-byte
// word of every row (a row's last word zero-padded).
uint64_t readWeights(const WeightView* parts, int count);

// Element conversions (exact), the scalar references the SIMD paths are tested against.
float halfToFloat(uint16_t h);
float bfloat16ToFloat(uint16_t b);
// Widens n elements of a row of type t to float32 with the active ISA's loads, the very ones the
// matmul tiles widen W with in registers (test_kernels checks them on every bit pattern).
void widenRow(const void* src, WeightType t, int64_t n, float* dst);

// The index of the first largest of v[0..n) (0 when n is 0), a NaN counting as the largest: what
// at::argmax gives, at memory speed (greedy decoding runs it over the vocabulary, once per row
// per token; a plain compare loop over 32k logits cost a small model's step 15 %).
int64_t argmax(const float* v, int64_t n);

// A decode step's attention after its scores (nn/DecodeAttention.cpp), one query head at a time.
// As plain loops (libm's expf, a scalar sum) these were most of a small model's attention.
//   softmax, in place: p[s] = exp(p[s] - max) / sum for s < n. The SIMD paths compute exp with a
//   polynomial (about an ulp from libm's) and sum in float lanes; a NaN score is left out of the max.
//   weightedSum: out[i] = sum over s < n of p[s] * v[s * vStride + i], for i < hd (the probabilities
//   times a head's values, each value row read once).
void softmax(float* p, int64_t n);
void weightedSum(const float* p, const float* v, int64_t vStride, int64_t n, int64_t hd, float* out);

} // namespace kvsteer::kernels
