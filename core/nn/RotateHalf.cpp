#include "nn/RotateHalf.h"

#include "ThreadPool.h"
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>

#include <algorithm>

namespace kvsteer {

namespace {

// One vector of hd floats at one position: the same float operations, in the same order, as
// x * cos + [-x2, x1] * sin in ATen (each product rounded, then the sum), so both paths agree bit
// for bit.
void rotateRow(const float* x, int64_t xStep, const float* cos, const float* sin, int64_t hd, float* out) {
    const int64_t half = hd / 2;
    for (int64_t i = 0; i < half; ++i) {
        const float x1 = x[i * xStep], x2 = x[(i + half) * xStep];
        const float c1 = x1 * cos[i], s1 = -x2 * sin[i];
        const float c2 = x2 * cos[i + half], s2 = x1 * sin[i + half];
        out[i] = c1 + s1;
        out[i + half] = c2 + s2;
    }
}

bool plainLoopTakes(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    auto cpuFloat = [](const at::Tensor& t) { return t.device().is_cpu() && t.scalar_type() == at::kFloat; };
    return cpuFloat(x) && cpuFloat(cos) && cpuFloat(sin) && x.dim() >= 2 && x.size(-1) % 2 == 0 && cos.dim() == 2 &&
           cos.sizes() == sin.sizes() && cos.size(0) == x.size(-2) && cos.size(1) == x.size(-1);
}

} // namespace

at::Tensor rotateHalf(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    if (!plainLoopTakes(x, cos, sin)) {
        const int64_t half = x.size(-1) / 2;
        const at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
        return x * cos + rotated * sin;
    }
    // On CPU, q and k of a decode step are a few vectors per layer: five ATen ops each (neg, cat,
    // two muls, an add) cost more in dispatch than the arithmetic. One loop over the vectors.
    const int64_t t = x.size(-2), hd = x.size(-1), vectors = x.numel() / std::max<int64_t>(1, hd);
    const at::Tensor xs = x.reshape({-1, t, hd});   // a view whenever the leading dims merge (q and k do)
    const at::Tensor c = cos.contiguous(), s = sin.contiguous();
    at::Tensor out = at::empty({vectors, hd}, x.options());
    const float* xp = xs.data_ptr<float>();
    const float* cp = c.data_ptr<float>();
    const float* sp = s.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const int64_t stride0 = xs.stride(0), stride1 = xs.stride(1), stride2 = xs.stride(2);
    parallelFor(0, vectors, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, hd)), [&](int64_t v0, int64_t v1) {
        for (int64_t v = v0; v < v1; ++v) {
            const int64_t lead = v / t, pos = v % t;
            rotateRow(xp + lead * stride0 + pos * stride1, stride2, cp + pos * hd, sp + pos * hd, hd, op + v * hd);
        }
    });
    return out.view(x.sizes());
}

} // namespace kvsteer
