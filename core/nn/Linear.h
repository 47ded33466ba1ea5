#pragma once
// How weights are held in memory and the one op that multiplies by them.
//
// On CPU the compute dtype is float32, and by default every weight keeps the dtype it has in the
// checkpoint: a float16 or bfloat16 tensor stays a zero-copy view of the mmap'd file (a 7B model
// fits a 24 GB desktop only that way), and kvsteer's own kernels (core/kernels) widen it to float32
// inside the matmul. f16/bf16 -> f32 is exact, so results equal the widened model's up to summation
// order. `--dtype f32` widens once at load instead (twice the memory). On CUDA, storage and compute
// dtype are the same and ATen does the work.
#include "kernels/Kernels.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace kvsteer {

class Checkpoint;

struct WeightFormat {
    c10::Device device = c10::Device(c10::kCPU);
    // Dtype weights are kept in; Undefined = as in the checkpoint (each tensor its own).
    c10::ScalarType storage = c10::ScalarType::Undefined;
    c10::ScalarType compute = c10::ScalarType::Float;   // dtype activations are computed in
};

// The weight of one linear layer, [out, in]: one matrix, or several stacked along `out` (fused
// q/k/v, gate/up). Stacked parts stay separate tensors when they are mmap views, so fusing never
// copies a checkpoint; applyLinear writes each part's outputs into its own block of columns.
struct LinearWeight {
    std::vector<at::Tensor> parts;
    int64_t outFeatures() const;
};

// Loads a tensor from the checkpoint in the weight format: zero-copy when the file already holds
// that dtype on CPU, converted otherwise.
at::Tensor loadWeight(const Checkpoint& ckpt, const std::string& name, const std::vector<int64_t>& shape,
                      const WeightFormat& format);
LinearWeight loadLinear(const Checkpoint& ckpt, const std::string& name, const std::vector<int64_t>& shape,
                        const WeightFormat& format);

// Several [rows_i, cols] weights stacked along rows (fused q/k/v, gate/up): mmap views side by side
// when no conversion is needed, else one converted buffer.
LinearWeight loadFusedLinear(const Checkpoint& ckpt, const std::vector<std::string>& names,
                             const std::vector<std::vector<int64_t>>& shapes, const WeightFormat& format);

// y = x W^T (+ b), x [..., in] in the compute dtype -> y [..., out]. On CPU with float32
// activations every weight dtype goes through kvsteer's kernels; elsewhere through ATen.
at::Tensor applyLinear(const at::Tensor& x, const LinearWeight& weight, const at::Tensor& bias = {});
at::Tensor applyLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias = {});

// A CPU weight [rows, cols] (f32, f16 or bf16, rows of unit stride) as kvsteer's kernels see it.
kernels::WeightView weightViewOf(const at::Tensor& w);

// Reads every byte of the weights once and computes nothing (kernels::readWeights): the bench's
// memory roofline. CPU weights only.
uint64_t readWeights(const std::vector<const LinearWeight*>& weights);

// Parses "auto" (the checkpoint's own dtypes) | "f32" | "f16" | "bf16"; auto gives Undefined.
c10::ScalarType parseDtype(const std::string& name);
// "as stored" for Undefined, else "float32" etc.
std::string dtypeName(c10::ScalarType type);

} // namespace kvsteer
