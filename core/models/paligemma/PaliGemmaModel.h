#pragma once
// PaliGemma (google/paligemma-3b-pt-224/-448/-896): a SigLIP tower (no CLS, post_layernorm
// applied), one linear projector, a Gemma decoder ((1 + w) RMSNorm, GeGLU, inputs scaled by
// sqrt(hidden), multi-query attention, tied LM head). Three things LLaVA does not do:
//   layout     the image tokens come first: "<image>" x N, <bos>, the prefix, "\n"
//   prefill    prefix-LM: every prompt token attends to every other one (bidirectional);
//              only generated tokens are causal
//   positions  RoPE positions start at 1
// Grids are 16x16, 32x32 or 64x64 (224 / 448 / 896 px at patch 14).
#include "io/Image.h"
#include "models/Model.h"
#include "models/common/VisionTransformer.h"

#include <memory>

namespace kvsteer {

class PaliGemmaModel : public Model {
public:
    static std::shared_ptr<PaliGemmaModel> load(const std::string& directory, const LoadOptions& options = {});

    std::string familyName() const override { return "PaliGemma"; }
    // "<image><bos>{prefix}\n": the processor's string (the placeholder is expanded later).
    std::string applyTemplate(const std::string& prefix, bool withImage) const override;
    PreprocessedImage preprocessImage(const ImageU8& image) const override;
    // pixels -> SigLIP last_hidden_state -> projector -> ÷ sqrt(hidden_size): [tokens, D].
    at::Tensor encodeImage(const at::Tensor& pixels) const override;
    PromptAttention promptAttention() const override { return PromptAttention::Bidirectional; }
    void assignPositions(Prompt& prompt) const override { prompt.positionOffset = 1; }
    std::string positionRule() const override { return "1, 2, 3, ... (the cache index + 1)"; }

    // The stages encodeImage runs, for parity checks: SigLIP's output [1, patches, Dv] (and its
    // embeddings), and the projector before the ÷ sqrt(hidden_size).
    at::Tensor visionHidden(const at::Tensor& pixels, at::Tensor* embeddings = nullptr) const;
    at::Tensor project(const at::Tensor& visionHidden) const;

protected:
    std::string describeVision() const override;

private:
    PaliGemmaModel() = default;
    ClipPreprocessConfig imageConfig_;
    std::unique_ptr<VisionTransformer> vision_;
    LinearWeight projWeight_;
    at::Tensor projBias_;
    int64_t featureScaleHidden_ = 0;
};

} // namespace kvsteer
