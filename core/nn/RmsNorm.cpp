#include "nn/RmsNorm.h"

#include "ThreadPool.h"
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/rsqrt.h>

#include <algorithm>
#include <cmath>

namespace kvsteer {

namespace {

// One row: out[i] = weight[i] * (x[i] / sqrt(mean(x²) + eps)), d elements, all float32. The sum
// of squares is kept in double, so it is at least as exact as ATen's float32 reduction.
void rmsNormRow(const float* x, const float* weight, int64_t d, float eps, float* out) {
    double sumOfSquares = 0;
    for (int64_t i = 0; i < d; ++i) sumOfSquares += double(x[i]) * double(x[i]);
    const float inverse = 1.0f / std::sqrt(float(sumOfSquares / double(d)) + eps);
    for (int64_t i = 0; i < d; ++i) out[i] = weight[i] * (x[i] * inverse);
}

} // namespace

at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
    const bool plainLoop = x.device().is_cpu() && x.scalar_type() == at::kFloat && weight.device().is_cpu() &&
                           weight.scalar_type() == at::kFloat && weight.dim() == 1 && weight.size(0) == x.size(-1);
    if (!plainLoop) {   // CUDA, or 16-bit compute: ATen, in float32 all the same
        at::Tensor h = x.to(at::kFloat);
        h = h * at::rsqrt(h.pow(2).mean(-1, true) + eps);
        return weight * h.to(x.scalar_type());
    }
    // On CPU a decode step norms one row of a few thousand floats, 2 norms a layer: as ATen ops
    // (pow, mean, add, rsqrt, two muls) each costs more in dispatch than in arithmetic.
    const at::Tensor in = x.contiguous(), w = weight.contiguous();
    at::Tensor out = at::empty_like(in);
    const int64_t d = in.size(-1), rows = d > 0 ? in.numel() / d : 0;
    const float* src = in.data_ptr<float>();
    const float* wp = w.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    parallelFor(0, rows, std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, d)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) rmsNormRow(src + r * d, wp, d, float(eps), dst + r * d);
    });
    return out;
}

} // namespace kvsteer
