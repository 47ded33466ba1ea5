#pragma once
// LlavaNextImageProcessor (transformers 4.45, Pillow bicubic), exactly:
//   1. choose the best pinpoint for the picture (AnyresGrid), resize the picture inside it keeping
//      its aspect ratio, pad it with black to the pinpoint (the odd pixel below / right), cut it
//      into view x view crops row by row;
//   2. the base view: the whole picture resized to view x view (aspect not kept);
//   3. each of base, crops through CLIP's preprocessing (rescale, normalise).
// The result's pixels hold 1 + crops views; `cropped` and `resized` are the fitted picture, the
// image the strength map's grid lies on.
#include "io/Image.h"
#include "models/llava_next/AnyresGrid.h"

#include <vector>

namespace kvsteer {

PreprocessedImage llavaNextPreprocess(const ImageU8& picture, const ClipPreprocessConfig& clip, const std::vector<Resolution>& pinpoints,
                                      int patchSize);

} // namespace kvsteer
