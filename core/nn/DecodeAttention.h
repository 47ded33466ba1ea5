#pragma once
// Attention of one new token per batch row against its cached keys and values (a decode step), on
// CPU in float32, as plain loops over the kernels' SIMD steps (the scores through the skinny
// matmul, then kernels::softmax and kernels::weightedSum per query head).
//
// Why: a decode step's attention is a few small matrix-vector products per layer. As ATen ops
// (two batched matmuls, scale, softmax, reshapes) its dispatch cost a tinyllama step about 3 ms,
// more than the arithmetic. The math is the ATen path's: scores = (q · k) * scale, plus the
// bias, softmax over the keys, the probabilities times the values. Each (row, KV head) is computed
// on its own, so a row gives the same bits alone or batched.
#include <ATen/core/Tensor.h>

namespace kvsteer {

// Whether decodeAttention takes these: CPU float32, one query position, keys/values rows of
// contiguous head_dim, a bias (if any) in float32.
bool decodeAttentionTakes(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values, const at::Tensor& bias);

// Grouped-query attention of one position, the G = H / H_kv query heads of a KV head side by side:
//   q [B, H, 1, hd]; keys, values [B, H_kv, S, hd]; bias [Bb, H_kv or 1, G or 1, 1, S'] with Bb 1 or
//   B, added to the first S' scores, or undefined.
// -> out [B, H, hd]; with probs non-null also *probs = the softmax [B, H_kv, G, S].
at::Tensor decodeAttention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values, const at::Tensor& bias,
                           double scale, at::Tensor* probs);

} // namespace kvsteer
