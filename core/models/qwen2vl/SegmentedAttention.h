#pragma once
// The Qwen vision towers' attention (Qwen2-VL, Qwen2.5-VL, Qwen3-VL): every row attends, both
// ways, to the rows of its own segment only — a frame, or a Qwen2.5-VL window — so the scores
// are block-diagonal. Queries go in chunks, so a large image's scores stay bounded (a 2B tower's
// 16 heads over a 1000 x 1000 image's 5000 patches would otherwise take 1.6 GB at once).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace kvsteer {

// q, k, v [heads, N, d] (RoPE already applied); `segments` the lengths of consecutive runs of
// rows, summing to N -> [heads, N, d] in q's dtype. Softmax in float32 with scores / sqrt(d).
at::Tensor segmentedAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::vector<int64_t>& segments);

} // namespace kvsteer
