#pragma once
// LLaVA-1.5 (llava-hf): a CLIP ViT-L/14 tower read at a middle layer, a two-layer GELU projector
// and a Llama decoder; "USER: <image>\n{question} ASSISTANT:" with the 576 image tokens where
// <image> stands; causal prefill, positions from 0. A directory with model_type "llama" is the
// same decoder without the vision half.
#include "io/Image.h"
#include "models/Model.h"
#include "io/Checkpoint.h"
#include "models/common/VisionTransformer.h"

#include <memory>

namespace kvsteer {

class LlavaModel : public Model {
public:
    static std::shared_ptr<LlavaModel> load(const std::string& directory, const LoadOptions& options = {});

    std::string familyName() const override { return config_.hasVision ? "LLaVA-1.5" : "Llama"; }
    std::string applyTemplate(const std::string& question, bool withImage) const override;
    PreprocessedImage preprocessImage(const ImageU8& image) const override;
    // pixels [1, 3, S, S] (float32, CLIP-normalised) -> image features [imageSeqLength, D]:
    // the selected CLIP hidden state (CLS dropped for "default") through the projector.
    at::Tensor encodeImage(const at::Tensor& pixels) const override;

    // The selected CLIP hidden state before the projector, CLS included ([1, 1 + patches, Dv]).
    at::Tensor visionHidden(const at::Tensor& pixels, at::Tensor* embeddings = nullptr) const;
    at::Tensor project(const at::Tensor& selected) const;
    const ClipPreprocessConfig& imageConfig() const { return imageConfig_; }

protected:
    std::string describeVision() const override;

    LlavaModel() = default;
    // What load does once a config is parsed: tokenizer, memory check, CLIP tower, projector,
    // decoder. Returns the open checkpoint for what a derived family adds (LLaVA-NeXT's newline).
    Checkpoint loadParts(const std::string& directory, ModelConfig config, const LoadOptions& options);

    ClipPreprocessConfig imageConfig_;
    std::unique_ptr<VisionTransformer> vision_;
    at::Tensor proj1Weight_, proj1Bias_, proj2Weight_, proj2Bias_;
};

} // namespace kvsteer
