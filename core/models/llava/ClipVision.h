#pragma once
// The CLIP ViT vision tower of LLaVA (CLIPVisionModel), up to the hidden state LLaVA selects.
//   pixels [B,3,S,S] -> patch embedding (a 14x14 stride-14 conv) + CLS + positions
//   -> pre_layrnorm -> encoder layers (pre-LN attention and quick_gelu MLP)
// Only the layers up to vision_feature_layer are loaded and run: LLaVA never uses the rest.
#include "io/Config.h"
#include "nn/Linear.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace kvsteer {

class ClipVision {
public:
    ClipVision(const VisionConfig& config, int layersToRun, const Checkpoint& ckpt, const WeightFormat& format);

    // Returns hidden_states[layersToRun] ([B, 1 + patches, hidden], CLS first). If `embeddings` is
    // given it receives hidden_states[0] (the output of pre_layrnorm).
    at::Tensor forward(const at::Tensor& pixels, at::Tensor* embeddings = nullptr) const;

    int layersToRun() const { return static_cast<int>(layers_.size()); }

private:
    struct Layer {
        at::Tensor ln1Weight, ln1Bias, qWeight, qBias, kWeight, kBias, vWeight, vBias, outWeight, outBias;
        at::Tensor ln2Weight, ln2Bias, fc1Weight, fc1Bias, fc2Weight, fc2Bias;
    };
    at::Tensor encoderLayer(const at::Tensor& x, const Layer& layer) const;

    VisionConfig config_;
    at::Tensor patchWeight_;      // [hidden, 3, patch, patch]
    at::Tensor classEmbedding_;   // [hidden]
    at::Tensor positionEmbedding_;// [1 + patches, hidden]
    at::Tensor preLnWeight_, preLnBias_;
    std::vector<Layer> layers_;
};

} // namespace kvsteer
