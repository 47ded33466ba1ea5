#pragma once
// LlavaModel: everything loaded from one model directory — config, tokenizer, image
// preprocessing, the CLIP tower, the projector and the Llama decoder — plus the LLaVA merge of
// image features into the prompt's embeddings. Immutable after load; share it between sessions.
#include "models/llava/ClipVision.h"
#include "io/Config.h"
#include "io/Image.h"
#include "models/llava/Llama.h"
#include "text/Tokenizer.h"
#include "nn/Linear.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvsteer {

struct LoadOptions {
    std::string device = "cpu";   // "cpu" or "cuda[:N]"
    // auto | f32 | f16 | bf16. On CPU the weights' storage (auto: each tensor as in the checkpoint;
    // compute is float32 either way); on CUDA the compute dtype (auto: float32).
    std::string dtype = "auto";
    int threads = 0;              // threads of the one pool; 0 = all cores
    // Tokens to be generated after a prompt (--max-new-tokens): the memory check's KV estimate.
    int64_t reserveTokens = 256;
    // Called as weights are mapped or converted, with stored bytes done and in all; returning
    // false cancels the load (LlavaModel::load then throws LoadCancelled).
    std::function<bool(int64_t done, int64_t total)> progress;
};

// Thrown by LlavaModel::load when LoadOptions::progress asked to stop. Not an error.
struct LoadCancelled {};

class LlavaModel {
public:
    static std::shared_ptr<LlavaModel> load(const std::string& directory, const LoadOptions& options = {});

    const ModelConfig& config() const { return config_; }
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    const ClipPreprocessConfig& imageConfig() const { return imageConfig_; }
    const Llama& llama() const { return *llama_; }
    const WeightFormat& format() const { return format_; }
    const std::string& directory() const { return directory_; }
    double loadMs() const { return loadMs_; }
    bool hasVision() const { return vision_ != nullptr; }

    // pixels [1, 3, S, S] (float32, CLIP-normalised) -> image features [imageSeqLength, D]:
    // the selected CLIP hidden state (CLS dropped for "default") through the projector.
    at::Tensor encodeImage(const at::Tensor& pixels) const;
    // The selected CLIP hidden state before the projector, CLS included ([1, 1 + patches, Dv]).
    at::Tensor visionHidden(const at::Tensor& pixels, at::Tensor* embeddings = nullptr) const;
    at::Tensor project(const at::Tensor& selected) const;

    // Prompt embeddings [1, L, D]: token embeddings with the image features written over the
    // image-token positions, in order. Throws if the counts disagree.
    at::Tensor embedPrompt(const std::vector<int64_t>& ids, const at::Tensor& imageFeatures) const;

    int64_t parameterCount() const { return parameterCount_; }
    // The dtype most weight bytes are kept in.
    std::string weightsDtype() const { return weightsDtype_; }
    std::string describe() const;   // architecture, sizes, dtypes, parameter count (for `inspect`)

private:
    LlavaModel() = default;
    std::string directory_;
    ModelConfig config_;
    std::optional<Tokenizer> tokenizer_;   // optional only because Tokenizer has no empty state
    ClipPreprocessConfig imageConfig_;
    WeightFormat format_;
    std::unique_ptr<ClipVision> vision_;
    at::Tensor proj1Weight_, proj1Bias_, proj2Weight_, proj2Bias_;
    std::unique_ptr<Llama> llama_;
    int64_t parameterCount_ = 0;
    std::map<std::string, int64_t> diskDtypes_;
    size_t shardCount_ = 0;
    std::string weightsDtype_;
    double loadMs_ = 0;
};

} // namespace kvsteer
