#pragma once
// The demo trainer's model (internal to the trainer and its tests): the parameters by their llava-hf
// names, their starting values, and the training forward. The forward is the same math as
// core/models/common/{VisionTransformer,TransformerDecoder}.cpp behind models/llava/LlavaModel.cpp,
// written with ATen ops so that autograd differentiates it, batched over images and over packed
// question segments (see DemoTrainer.h).
#include "io/Config.h"
#include "models/llava/RandomCheckpoint.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvsteer::demo::training {

using at::Tensor;

// Name prefixes of the vision tower's and the language model's tensors.
inline const std::string kV = "vision_tower.vision_model.";
inline const std::string kT = "language_model.model.";

inline bool isVisionTensor(const std::string& name) { return name.compare(0, kV.size(), kV) == 0; }

// The model's tensors by their llava-hf names.
struct Parameters {
    std::vector<TensorSpec> layout;
    std::map<std::string, Tensor> tensors;
    std::vector<Tensor> decay, noDecay;   // trainable ones

    const Tensor& operator()(const std::string& name) const;   // throws Error for an unknown name
};

// Every tensor of the checkpoint layout: random (GPT-2 style, residual projections scaled down),
// norms at one, biases at zero, plus the designed parts of the vision embeddings
// (designVisionInit in TrainingNet.cpp). Parts LLaVA never runs (vision layers past the feature
// layer, post_layernorm) get no gradient.
Parameters initParameters(const ModelConfig& c, uint64_t seed);

// The training forward's pieces over Parameters (which it reads, never owns).
struct Net {
    const ModelConfig& c;
    const Parameters& p;
    Tensor ropeCos, ropeSin;   // [max_positions, head_dim]

    Net(const ModelConfig& config, const Parameters& params);

    // pixels [B, 3, 336, 336] -> hidden_states[-2] without CLS, [B, 576, Dv].
    Tensor visionFeatures(const Tensor& pixels) const;

    // pixels [B, 3, 336, 336] -> projected image features [B, 576, D].
    Tensor encodeImages(const Tensor& pixels) const;

    Tensor rmsNorm(const Tensor& x, const Tensor& w) const;

    // One decoder layer over the packed batch x [B, P+S, D]: P shared prefix tokens then S
    // segment tokens. With `segmentsOnly` (the last layer) only the segment rows are computed
    // past K/V (nothing reads the prefix rows' outputs) and [B, S, D] is returned. With
    // `segmentProbs`, the segment queries' attention probabilities [B, H, S, P+S] are stored there.
    Tensor llamaLayer(const Tensor& x, int i, int64_t prefixLen, const Tensor& cos, const Tensor& sin, const Tensor& prefixMask,
                      const Tensor& segmentMask, bool segmentsOnly, Tensor* segmentProbs = nullptr) const;

private:
    // Encoder layer i of the vision tower.
    Tensor clipLayer(const Tensor& x, int i) const;

    // Rotary position embedding: x [..., hd] rotated by the angles whose cos/sin are given.
    static Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin);

    // The MLP block of decoder layer `l` (its parameter-name prefix), with its norm.
    Tensor mlp(const Tensor& x, const std::string& l) const;

    // GQA attention of queries q [B, H, N, hd] over keys/values [B, H_kv, M, hd] with an additive
    // mask broadcastable to [B, H_kv, G, N, M]. Returns [B, N, H*hd].
    // With `probsOut`, the attention probabilities [B, H, N, M] are stored there.
    Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, Tensor* probsOut = nullptr) const;
};

} // namespace kvsteer::demo::training
