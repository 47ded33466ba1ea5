#pragma once
// Turning a question (and maybe an image) into a model's input: the family's template, the
// <image> placeholder expanded to one id per visual token, the span those ids occupy, and the
// position the first token gets.
#include "cache/VisualSpan.h"
#include "io/Image.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kvsteer {

class Model;

// What one image becomes for the decoder: the rows written over its tokens and, for Qwen3-VL, the
// DeepStack rows added to the same positions after the first decoder layers (HiddenAdditions).
// A family without DeepStack gives only the tokens (the constructor from a tensor).
struct ImageFeatures {
    ImageFeatures() = default;
    ImageFeatures(at::Tensor rows) : tokens(std::move(rows)) {}   // NOLINT: implicit on purpose
    at::Tensor tokens;                    // [N, D]
    std::vector<at::Tensor> deepstack;    // [k]: [N, D], added after decoder layer k
};

struct Prompt {
    std::string text;               // the full prompt text, template applied
    std::vector<int64_t> ids;       // tokens (BOS where the family puts it), <image> expanded
    VisualSpan span;                // where the visual tokens are; without an image, the token strip
    bool hasImage = false;
    // The image's resized / cropped uint8 (its float `pixels` left empty: see below); null without
    // an image. Shared, with `pixels`, by every prompt built from one PromptImage.
    std::shared_ptr<const PreprocessedImage> image;
    at::Tensor pixels;              // [1, 3, H, W] float32 (undefined without an image)
    // RoPE positions (the family's rule; the Session keeps both with the cache): token i sits at
    // i + positionOffset, or at column i of positionIds [3, L] under M-RoPE (Qwen2-VL: t, h, w).
    int64_t positionOffset = 0;
    at::Tensor positionIds;
};

// Builds and validates a prompt for `model`. Without `raw`, `text` is the question and goes into
// the family's template (LLaVA: "USER: <image>\n{q} ASSISTANT:", PaliGemma: the prefix after
// the image tokens and <bos>). With `raw`, `text` is used as is and must contain "<image>"
// exactly once when an image is given (and never otherwise). Throws kvsteer::Error with a
// readable message for every mismatch, and when the prompt does not fit the context (leaving
// room for at least one generated token).
Prompt buildPrompt(const Model& model, const std::string& text, bool raw, const ImageU8* image);

// An image through the model's processor once, for any number of prompts: several questions
// about one image (eval) resize it once and share its pixels instead of copying 1-2 MB each.
struct PromptImage {
    std::shared_ptr<const PreprocessedImage> processed;   // its float pixels emptied: they are `pixels`
    at::Tensor pixels;                                     // [1, 3, H, W] float32
};
PromptImage prepareImage(const Model& model, const ImageU8& image);
// The span an image's tokens make, counted from 0 (no prompt around them): its grid and, for a
// picture shown in views (LLaVA-NeXT), its views. What a mask for that image is read onto.
VisualSpan imageSpan(const Model& model, const ImageU8& image);
// buildPrompt for an image prepareImage has made.
Prompt buildImagePrompt(const Model& model, const std::string& text, bool raw, const PromptImage& image);

} // namespace kvsteer
