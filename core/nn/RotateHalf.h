#pragma once
// Rotary position embedding in its rotate-half form, as transformers' apply_rotary_pos_emb:
//   x * cos + rotate_half(x) * sin,   rotate_half([x1, x2]) = [-x2, x1] over the head dimension's halves.
// So dims i and i + d/2 turn together by the angle of frequency i (cos/sin tables repeat their
// half-dim angles twice).
#include <ATen/core/Tensor.h>

namespace kvsteer {

// x [..., T, hd] (any strides) with cos, sin [T, hd] -> the rotated x, contiguous, x's dtype.
// Tables of another shape broadcast as ATen would (the ATen path then does the work).
at::Tensor rotateHalf(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

} // namespace kvsteer
