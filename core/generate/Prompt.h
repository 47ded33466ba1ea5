#pragma once
// Turning a question (and maybe an image) into the model's input: the chat template, the
// <image> placeholder expanded to one id per visual token, and the span those ids occupy.
#include "cache/VisualSpan.h"
#include "io/Image.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace kvsteer {

class LlavaModel;

struct Prompt {
    std::string text;               // the full prompt text, template applied
    std::vector<int64_t> ids;       // BOS + tokens, <image> expanded to imageSeqLength ids
    VisualSpan span;                // where the visual tokens are (invalid without an image)
    bool hasImage = false;
    PreprocessedImage image;        // resized / cropped uint8 and CHW float pixels
    at::Tensor pixels;              // [1, 3, S, S] float32 (undefined without an image)
};

// LLaVA-1.5's conversation template: "USER: <image>\n{question} ASSISTANT:" (text-only: "USER: {question} ASSISTANT:").
std::string applyChatTemplate(const std::string& question, bool withImage);

// Builds and validates a prompt. With `raw`, `text` is used as is and must contain "<image>"
// exactly once when an image is given (and never otherwise). Throws kvsteer::Error with a
// readable message for every mismatch, and when the prompt does not fit the context
// (leaving room for at least one generated token).
Prompt buildPrompt(const LlavaModel& model, const std::string& text, bool raw, const ImageU8* image);

} // namespace kvsteer
