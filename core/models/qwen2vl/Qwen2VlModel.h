#pragma once
// Qwen2-VL (Qwen/Qwen2-VL-2B-Instruct, ...) and Qwen2 / Qwen2.5 text models. Qwen2-VL: a ViT with
// 2D RoPE over dynamic-resolution patches, a 2x2 merger, and the Qwen2 decoder (GQA, q/k/v biases,
// tied or untied head) with M-RoPE. What differs from LLaVA:
//   template   the chat template with its default system prompt; the image is
//              <|vision_start|><|image_pad|>×N<|vision_end|> in the user turn
//   grid       dynamic and not square: the image is resized to multiples of 28 within
//              min/max pixels, visual token k is merged cell (k / w', k % w')
//   positions  M-RoPE: image token k at (t, h, w) = (s, s + k / w', s + k % w'); the text after
//              the image resumes at the largest position + 1. Decoding continues at
//              cache index + rope delta (kept with the cache as positionOffset).
// Prefill is causal over the whole prompt, image tokens included. A "qwen2" directory is the
// same decoder alone with plain RoPE (text only). A "qwen2_5_vl" directory (Qwen2.5-VL) is this
// model with Qwen2.5-VL's tower: RMSNorm, SwiGLU and window attention (Qwen2VisionTower.h).
#include "models/Model.h"
#include "models/qwen2vl/Qwen2VisionTower.h"
#include "models/qwen2vl/Qwen2VlConfig.h"
#include "models/qwen2vl/Qwen2VlImageProcessor.h"

#include <memory>

namespace kvsteer {

class Qwen2VlModel : public Model {
public:
    static std::shared_ptr<Qwen2VlModel> load(const std::string& directory, const LoadOptions& options = {});
    // The same with the config already read (Qwen2.5-VL's reader: qwen25vl/Qwen25VlModel.h).
    static std::shared_ptr<Qwen2VlModel> loadParsed(const std::string& directory, const LoadOptions& options, Qwen2VlConfig parsed);

    std::string familyName() const override {
        return config_.modelType == "qwen2_5_vl" ? "Qwen2.5-VL" : config_.hasVision ? "Qwen2-VL" : "Qwen2";
    }
    std::string imageTag() const override { return "<|image_pad|>"; }
    std::string applyTemplate(const std::string& question, bool withImage) const override;
    bool takesSystemMessage() const override { return true; }
    PreprocessedImage preprocessImage(const ImageU8& image) const override;
    ImageLayout imageLayout(const PreprocessedImage& image) const override;
    at::Tensor encodeImage(const at::Tensor& pixels) const override;
    void assignPositions(Prompt& prompt) const override;
    std::string positionRule() const override;
    PatchGrid patchGrid() const override { return {}; }   // depends on each image

    const Qwen2VisionTower& visionTower() const { return *vision_; }
    const Qwen2VlImageProcessorConfig& imageConfig() const { return imageConfig_; }

protected:
    std::string describeVision() const override;

private:
    Qwen2VlModel() = default;
    Qwen2VlImageProcessorConfig imageConfig_;
    std::unique_ptr<Qwen2VisionTower> vision_;
    int64_t visionStartTokenId_ = -1;
    std::string systemMessage_;   // LoadOptions::systemMessage, else the chat template's default (QwenChatTemplate.h)
};

} // namespace kvsteer
