#pragma once
// Qwen2-VL's image processor (transformers' Qwen2VLImageProcessor, 4.45, with Pillow 9.4), bit
// for bit on 8-bit images:
//   smart_resize (sides multiples of patch * merge = 28, pixel count in [min_pixels, max_pixels])
//   -> PIL BICUBIC on uint8 straight to that size (no crop) -> float32(u8 * rescale_factor)
//   -> (x - mean) / std in float32 -> the frame repeated temporal_patch_size times -> patches
//   flattened into pixel_values [N, C * T * P * P] in the 2x2-cell order of Qwen2VlGrid.h.
// A pixel_values column is c * T*P*P + f * P*P + y * P + x (channel, frame, y, x in the patch).
#include "io/Image.h"
#include "models/qwen2vl/Qwen2VlGrid.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kvsteer {

struct Qwen2VlImageProcessorConfig {
    // transformers' Qwen2VLImageProcessor defaults. The pixel budget comes from min_pixels /
    // max_pixels, else from "size": {"shortest_edge", "longest_edge"} (transformers 5's form).
    int64_t minPixels = 56 * 56;
    int64_t maxPixels = 28 * 28 * 1280;
    int patchSize = 14;
    int temporalPatchSize = 2;
    int mergeSize = 2;
    bool doResize = true, doRescale = true, doNormalize = true;
    double rescaleFactor = 1.0 / 255.0;
    float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};   // OPENAI_CLIP_MEAN
    float std[3] = {0.26862954f, 0.26130258f, 0.27577711f};   // OPENAI_CLIP_STD

    int factor() const { return patchSize * mergeSize; }   // 28: what both sides are multiples of
    int64_t patchDim() const { return 3LL * temporalPatchSize * patchSize * patchSize; }   // 1176

    // Parses a preprocessor_config.json. Absent keys keep the defaults above; a missing or
    // unparsable file or a bad field throws kvsteer::Error naming the file and the field.
    // resample must be 3 (BICUBIC), the only filter implemented.
    static Qwen2VlImageProcessorConfig fromJsonFile(const std::string& path);
    static Qwen2VlImageProcessorConfig fromJsonString(const std::string& text, const std::string& nameForErrors);
};

// transformers' smart_resize for an image of height x width: the size it is resized to
// (Python's round, half to even; floor in the max_pixels branch, ceil in the min_pixels one).
// Throws kvsteer::Error for a side below `factor`, an aspect ratio above 200, or a result with a
// zero side (max_pixels too small for the aspect ratio; transformers would fail in the resize).
ResizeSize smartResize(int height, int width, int factor, int64_t minPixels, int64_t maxPixels);

// The resized uint8 image (the reference's image_resized_u8): Pillow-exact bicubic to
// smartResize's size, or the image itself when do_resize is false (then its sides must already
// be multiples of factor()).
ImageU8 qwen2VlResize(const ImageU8& img, const Qwen2VlImageProcessorConfig& cfg);

struct Qwen2VlImage {
    PreprocessedImage image;   // resized; cropped = resized; pixels = CHW float32 after rescale/normalise
    at::Tensor pixelValues;    // [N, C*T*P*P] float32, N = t*h*w, rows in the order of Qwen2VlGrid.h
    GridThw grid;              // (1, H' / P, W' / P)
    at::Tensor positions;      // [N, 2] int64: (row, col) of each row of pixelValues
};

// Resize and normalise only (PreprocessedImage: resized = cropped, CHW pixels): what the model's
// prompt keeps; the patch rows are made from these pixels when the image is encoded.
PreprocessedImage qwen2VlResizeAndNormalize(const ImageU8& img, const Qwen2VlImageProcessorConfig& cfg);

// The whole pipeline for one RGB image.
Qwen2VlImage qwen2VlPreprocess(const ImageU8& img, const Qwen2VlImageProcessorConfig& cfg);

// pixel_values of one frame given as CHW float32 (3 x height x width, sides multiples of
// patch * merge), repeated over cfg.temporalPatchSize frames: [N, C*T*P*P].
at::Tensor flattenPatches(const std::vector<float>& chw, int height, int width, const Qwen2VlImageProcessorConfig& cfg);

} // namespace kvsteer
