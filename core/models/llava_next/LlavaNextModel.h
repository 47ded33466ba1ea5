#pragma once
// LLaVA-NeXT (llava-v1.6, llava-hf's LlavaNextForConditionalGeneration): LLaVA-1.5's CLIP tower,
// projector and Llama (vicuna) or Mistral decoder, shown the picture as several views — a base
// view squashed to 336 x 336 and the picture at a higher resolution cut into 336 x 336 crops
// (AnyresGrid). The image's tokens: the base view's 24 x 24, then the crops' stitched, unpadded
// grid with a learned image_newline after each row. Prompt "USER: <image>\n{q} ASSISTANT:"
// (vicuna) or "[INST] <image>\n{q} [/INST]" (mistral); causal prefill, positions from 0.
#include "models/llava/LlavaModel.h"
#include "models/llava_next/AnyresGrid.h"

#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

class LlavaNextModel : public LlavaModel {
public:
    static std::shared_ptr<LlavaNextModel> load(const std::string& directory, const LoadOptions& options = {});

    std::string familyName() const override { return "LLaVA-NeXT"; }
    std::string applyTemplate(const std::string& question, bool withImage) const override;
    PreprocessedImage preprocessImage(const ImageU8& image) const override;
    // Views need the picture's size to be packed: use encodeImage(pixels, picture).
    at::Tensor encodeImage(const at::Tensor& pixels) const override;
    ImageFeatures encodePromptImage(const Prompt& prompt) const override;
    // pixels [1 + crops, 3, 336, 336] of a picture of that size -> features [tokens, D], packed
    // as the prompt holds them (base view, then the unpadded crop grid with newlines).
    at::Tensor encodeImage(const at::Tensor& pixels, Resolution picture) const;
    ImageLayout imageLayout(const PreprocessedImage& image) const override;
    PatchGrid patchGrid() const override { return {}; }   // the crops' grid follows each picture

    const std::vector<Resolution>& pinpoints() const { return pinpoints_; }
    AnyresGrid gridFor(Resolution picture) const;

protected:
    std::string describeVision() const override;

private:
    LlavaNextModel() = default;
    std::vector<Resolution> pinpoints_;
    std::string textModelType_;
    at::Tensor imageNewline_;   // [D]
};

// The span views of a picture laid out on `grid` (base view, then the crops), in span token order.
std::vector<SpanView> anyresViews(const AnyresGrid& grid);

} // namespace kvsteer
