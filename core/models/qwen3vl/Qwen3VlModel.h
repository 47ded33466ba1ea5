#pragma once
// Qwen3-VL (Qwen/Qwen3-VL-2B-Instruct, -4B, -8B, -32B; model_type "qwen3_vl"), images only. What it
// keeps from Qwen2-VL (qwen2vl/): smart_resize and the patch order, the 2 x 2 merged grid (visual
// token k = merged cell (k / w', k % w')), M-RoPE's position rule and rope delta, the byte-level
// BPE tokenizer. What is new:
//   processor  patch 16 (cells of 32 x 32 pixels), mean = std = 0.5
//   tower      Conv3d with a bias, a learned position table interpolated to the grid, LayerNorm
//              blocks with a tanh GELU and no windows (Qwen3VisionTower.h)
//   DeepStack  features of a few intermediate blocks, each through its own merger, added to the
//              image positions' hidden states right after decoder layers 0, 1, 2, ...: the K/V of
//              layer 0 carry only the main features, those of every later layer DeepStack's too
//   decoder    Qwen3: no q/k/v biases, RMSNorm over each head's q and k before RoPE, head_dim read
//              from the config (not hidden / heads)
//   M-RoPE     the t, h, w axes interleaved over the frequencies (TransformerDecoder.h)
//   template   Qwen3-VL Instruct's: no default system prompt
// Prefill is causal. Steering edits the cached K/V as they are (DeepStack included); a recompute of
// image positions adds the DeepStack rows again (Session::recomputePrompt).
#include "models/Model.h"
#include "models/qwen2vl/Qwen2VlImageProcessor.h"
#include "models/qwen3vl/Qwen3VisionTower.h"
#include "models/qwen3vl/Qwen3VlConfig.h"

#include <memory>
#include <optional>

namespace kvsteer {

class Qwen3VlModel : public Model {
public:
    static std::shared_ptr<Qwen3VlModel> load(const std::string& directory, const LoadOptions& options = {});

    std::string familyName() const override { return "Qwen3-VL"; }
    std::string imageTag() const override { return "<|image_pad|>"; }
    std::string applyTemplate(const std::string& question, bool withImage) const override;
    bool takesSystemMessage() const override { return true; }
    std::string describeTemplate() const override;
    PreprocessedImage preprocessImage(const ImageU8& image) const override;
    ImageLayout imageLayout(const PreprocessedImage& image) const override;
    at::Tensor encodeImage(const at::Tensor& pixels) const override;   // the tokens alone
    ImageFeatures encodePromptImage(const Prompt& prompt) const override;   // tokens and DeepStack rows
    // M-RoPE positions (qwen2vl/MropePositions.h); refuses a prompt holding a video's token.
    void assignPositions(Prompt& prompt) const override;
    std::string positionRule() const override;
    PatchGrid patchGrid() const override { return {}; }   // depends on each image

    // The whole tower on pixels [1, 3, H, W] (normalised), its stages in `trace`.
    ImageFeatures encodePixels(const at::Tensor& pixels, Qwen3VisionTower::Trace* trace = nullptr) const;
    const Qwen3VisionTower& visionTower() const { return *vision_; }
    const Qwen2VlImageProcessorConfig& imageConfig() const { return imageConfig_; }

protected:
    std::string describeVision() const override;

private:
    Qwen3VlModel() = default;
    Qwen2VlImageProcessorConfig imageConfig_;
    std::unique_ptr<Qwen3VisionTower> vision_;
    std::optional<std::string> systemMessage_;   // LoadOptions::systemMessage, else the template's (none in Qwen3-VL's)
    int64_t videoTokenId_ = -1;
};

// preprocessor_config.json's defaults when a Qwen3-VL directory has none: the hub's (patch 16,
// merge 2, mean = std = 0.5, 65,536 .. 16,777,216 pixels).
Qwen2VlImageProcessorConfig qwen3VlProcessorDefaults();

} // namespace kvsteer
