#pragma once
// Qwen2-VL's 2D rotary embedding in the vision tower. Half of each head's dims carry the
// patch's row, the other half its column: with d = head_dim / 2 and
//   inv_freq[i] = 1 / 10000^(2i / d),  i < d / 2          (float32, [1, 0.1, 0.01, 0.001] for d = 8)
// a patch at (row, col) gets the d angles [row * inv_freq, col * inv_freq] (float32 products),
// and dims j and j + d of q and k rotate by angle j (rotate-half RoPE over the head_dim dims).
#include <ATen/core/Tensor.h>

namespace kvsteer {

// [head_dim / 4] float32 inverse frequencies, each the float32 rounding of the exact value (as
// transformers' float32 arithmetic gives it).
at::Tensor visionInverseFrequencies(int headDim);

// positions [N, 2] int64 (row, col) -> angles [N, head_dim / 2] float32 (the reference's
// vision_rotary_angles).
at::Tensor visionRotaryAngles(const at::Tensor& positions, int headDim);

// x [N, heads, head_dim] rotated by the angles' cos / sin ([N, head_dim / 2] float32, on x's
// device). Computed in float32 and returned in x's dtype, as transformers does.
at::Tensor applyVisionRope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

} // namespace kvsteer
