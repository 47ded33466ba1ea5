#pragma once
// A box drawn on an image (x0, y0, x1, y1 in the original image's pixels) as a strength map on
// the model's grid for that image: the box is carried through the family's processor (the resize,
// then the centre crop where there is one) and each cell gets the fraction of its area the box
// covers. So LLaVA's 24x24 crop, PaliGemma's squashed square and Qwen2-VL's per-image grid all
// steer the same part of the picture.
#include "models/Prompt.h"

#include <ATen/core/Tensor.h>

#include <array>

namespace kvsteer {

// `original` is the image as loaded, `prompt` the prompt built from it (its processed image and
// span). Throws kvsteer::Error for a box outside the image or one the crop cuts away entirely.
at::Tensor boxStrength(const std::array<double, 4>& box, const ImageU8& original, const Prompt& prompt);

} // namespace kvsteer
