#include "models/qwen2vl/Qwen2VisionRope.h"

#include "Error.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>

#include <cmath>
#include <string>

namespace kvsteer {

at::Tensor visionInverseFrequencies(int headDim) {
    if (headDim <= 0 || headDim % 4 != 0)
        throw Error("vision rotary embedding: head_dim " + std::to_string(headDim) + " must be a positive multiple of 4");
    const int dim = headDim / 2;   // the rotary dims; half of them are rows, half columns
    at::Tensor inv = at::empty({dim / 2}, at::kFloat);
    float* out = inv.data_ptr<float>();
    for (int i = 0; i < dim / 2; ++i) {
        // float32 exponent, the power rounded once to float32, then a float32 reciprocal.
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
        const float power = static_cast<float>(std::pow(10000.0, static_cast<double>(exponent)));
        out[i] = 1.0f / power;
    }
    return inv;
}

at::Tensor visionRotaryAngles(const at::Tensor& positions, int headDim) {
    if (positions.dim() != 2 || positions.size(1) != 2 || positions.scalar_type() != at::kLong)
        throw Error("visionRotaryAngles: expected int64 (row, col) positions [N, 2]");
    const at::Tensor inv = visionInverseFrequencies(headDim);
    const int64_t n = positions.size(0), f = inv.size(0);
    const at::Tensor pos = positions.cpu().contiguous();
    const int64_t* p = pos.data_ptr<int64_t>();
    const float* freq = inv.data_ptr<float>();
    at::Tensor angles = at::empty({n, 2 * f}, at::kFloat);   // [N, head_dim / 2]
    float* a = angles.data_ptr<float>();
    for (int64_t r = 0; r < n; ++r)
        for (int64_t axis = 0; axis < 2; ++axis)   // rows first, then columns
            for (int64_t i = 0; i < f; ++i) *a++ = static_cast<float>(p[2 * r + axis]) * freq[i];
    return angles;
}

at::Tensor applyVisionRope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    const int64_t half = x.size(-1) / 2;
    const at::Tensor xf = x.to(at::kFloat);
    const at::Tensor x1 = xf.narrow(-1, 0, half), x2 = xf.narrow(-1, half, half);   // [N, heads, half]
    const at::Tensor c = cos.unsqueeze(1), s = sin.unsqueeze(1);                     // [N, 1, half]
    // x * [cos, cos] + rotate_half(x) * [sin, sin] with rotate_half(x) = [-x2, x1].
    return at::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1).to(x.scalar_type());
}

} // namespace kvsteer
