#pragma once
// The two products of attention over a prompt — scores = q · kᵀ and out = probs · v — with the
// summation order kvsteer owns (core/kernels): on CPU in float32 each is a stack of matrices that
// kernels::matmul multiplies one by one, so an output's bits depend on its own row and the
// contraction length only — never on how many rows or matrices are batched, the thread count, or
// the BLAS the process loaded (docs/internals.md "Determinism"). Elsewhere (CUDA, other dtypes)
// ATen's matmul.
#include <ATen/core/Tensor.h>

namespace kvsteer {

// a · bᵀ: a [..., M, K], b [..., N, K] with the same leading dims -> [..., M, N].
at::Tensor matmulTransposed(const at::Tensor& a, const at::Tensor& b);
// a · b: a [..., M, K], b [..., K, N] with the same leading dims -> [..., M, N].
at::Tensor matmulPlain(const at::Tensor& a, const at::Tensor& b);

} // namespace kvsteer
