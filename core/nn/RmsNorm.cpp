#include "nn/RmsNorm.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/rsqrt.h>

namespace kvsteer {

at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
    at::Tensor h = x.to(at::kFloat);
    h = h * at::rsqrt(h.pow(2).mean(-1, true) + eps);
    return weight * h.to(x.scalar_type());
}

} // namespace kvsteer
