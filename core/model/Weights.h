#pragma once
// How weights are held in memory and the two primitive ops that touch them.
//
// On CPU the compute dtype is float32 (libtorch 1.13 has no fp16 matmul on CPU and its bf16
// paths are slow or inaccurate on AVX2). A 16-bit *storage* dtype is still allowed there: the
// weight is upcast at the moment it is used, trading speed for half the memory (a 7B model fits
// in 24 GiB only that way). On CUDA, storage and compute dtype are the same.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace kvsteer {

class Checkpoint;

struct WeightFormat {
    c10::Device device = c10::Device(c10::kCPU);
    c10::ScalarType storage = c10::ScalarType::Float;   // dtype weights are kept in
    c10::ScalarType compute = c10::ScalarType::Float;   // dtype activations are computed in
};

// Loads a tensor from the checkpoint in the weight format: zero-copy when the file already holds
// that dtype on CPU, converted otherwise.
at::Tensor loadWeight(const Checkpoint& ckpt, const std::string& name, const std::vector<int64_t>& shape,
                      const WeightFormat& format);

// Several [rows_i, cols] weights stacked along rows into one buffer (fused q/k/v, gate/up),
// each converted while copied.
at::Tensor loadFusedWeight(const Checkpoint& ckpt, const std::vector<std::string>& names,
                           const std::vector<std::vector<int64_t>>& shapes, const WeightFormat& format);

// y = x W^T (+ b), with W upcast to x's dtype when stored narrower.
at::Tensor applyLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias = {});

// Parses "f32" | "f16" | "bf16".
c10::ScalarType parseDtype(const std::string& name);

} // namespace kvsteer
