#pragma once
// RMSNorm as transformers computes it (LlamaRMSNorm, Qwen2RMSNorm): in float32 whatever the
// compute dtype, x / sqrt(mean(x^2) + eps), back to x's dtype, times the weight. The decoder's
// norms and Qwen2.5-VL's vision norms both go through it.
#include <ATen/core/Tensor.h>

namespace kvsteer {

at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);

} // namespace kvsteer
