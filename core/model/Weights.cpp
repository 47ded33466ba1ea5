#include "model/Weights.h"

#include "Error.h"
#include "model/Checkpoint.h"

#include <ATen/ops/linear.h>

namespace kvsteer {

at::Tensor loadWeight(const Checkpoint& ckpt, const std::string& name, const std::vector<int64_t>& shape,
                      const WeightFormat& format) {
    at::Tensor t = ckpt.load(name, shape);
    if (t.scalar_type() == format.storage && format.device.is_cpu()) return t;   // mmap view, no copy
    return t.to(format.device, format.storage).contiguous();
}

at::Tensor applyLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
    if (weight.scalar_type() == x.scalar_type()) return at::linear(x, weight, bias);
    at::Tensor b = bias.defined() ? bias.to(x.scalar_type()) : bias;
    return at::linear(x, weight.to(x.scalar_type()), b);
}

c10::ScalarType parseDtype(const std::string& name) {
    if (name == "f32" || name == "float32") return c10::ScalarType::Float;
    if (name == "f16" || name == "float16") return c10::ScalarType::Half;
    if (name == "bf16" || name == "bfloat16") return c10::ScalarType::BFloat16;
    throw Error("dtype '" + name + "' is not supported (expected f32, f16 or bf16)");
}

} // namespace kvsteer
