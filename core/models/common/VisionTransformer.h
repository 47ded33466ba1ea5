#pragma once
// The ViT vision tower the families share: CLIP (LLaVA) and SigLIP (PaliGemma) are the same
// pre-norm encoder and differ only in a few switches around it:
//                     CLIP (CLIPVisionModel)        SigLIP (SiglipVisionModel)
//   patch conv        no bias                       with bias
//   class token       yes, first                    none
//   before layers     pre_layrnorm                  -
//   MLP activation    quick_gelu                    gelu_pytorch_tanh
//   after layers      - (a middle layer is taken)   post_layernorm
//   pixels [B,3,S,S] -> patch embedding (a p x p stride-p conv), row-major over the grid
//   (patch i = grid cell (i / g, i % g)) + learned positions -> encoder layers (pre-LN
//   attention and MLP). Only the layers the family uses are loaded and run.
#include "io/Config.h"
#include "nn/Linear.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace kvsteer {

struct VisionTowerSpec {
    int layersToRun = 0;          // encoder layers loaded and run
    bool classToken = true;       // CLIP's CLS embedding in front of the patches
    bool patchBias = false;       // the patch conv has a bias
    bool preLayerNorm = true;     // CLIP's pre_layrnorm on the embeddings
    bool postLayerNorm = false;   // SigLIP's post_layernorm on the last layer run
};

class VisionTransformer {
public:
    VisionTransformer(const VisionConfig& config, const VisionTowerSpec& spec, const Checkpoint& ckpt, const WeightFormat& format);

    // Returns the hidden state after spec.layersToRun layers (and post_layernorm when the spec
    // has it): [B, (1 +) patches, hidden], CLS first if any. If `embeddings` is given it receives
    // hidden_states[0] (the embeddings, after pre_layrnorm when the spec has it).
    at::Tensor forward(const at::Tensor& pixels, at::Tensor* embeddings = nullptr) const;

    int layersToRun() const { return static_cast<int>(layers_.size()); }

private:
    struct Layer {
        at::Tensor ln1Weight, ln1Bias, qWeight, qBias, kWeight, kBias, vWeight, vBias, outWeight, outBias;
        at::Tensor ln2Weight, ln2Bias, fc1Weight, fc1Bias, fc2Weight, fc2Bias;
    };
    at::Tensor encoderLayer(const at::Tensor& x, const Layer& layer) const;
    at::Tensor activation(const at::Tensor& x) const;

    VisionConfig config_;
    VisionTowerSpec spec_;
    at::Tensor patchWeight_, patchBias_;   // [hidden, 3, patch, patch], [hidden] or undefined
    at::Tensor classEmbedding_;            // [hidden] or undefined
    at::Tensor positionEmbedding_;         // [(1 +) patches, hidden]
    at::Tensor preLnWeight_, preLnBias_, postLnWeight_, postLnBias_;
    std::vector<Layer> layers_;
};

} // namespace kvsteer
