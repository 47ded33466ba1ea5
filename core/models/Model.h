#pragma once
// Model: the seam between a model family and everything after loading. The Session, the
// steering engine, the heatmaps, the CLI and the studio talk to this and nothing else: the
// decoder, the tokenizer, the prompt layout (template, image tokens, the visual span and its
// grid), the image encoder and the prefill semantics. Each family is a folder under models/
// that derives from it (llava/: LLaVA-1.5 and Llama-2 style text; llama3/: Llama-3 text;
// paligemma/; qwen2vl/: Qwen2-VL and Qwen2/Qwen2.5 text), registered by model_type in ModelRegistry.
// Immutable after load; share it between sessions.
#include "io/Config.h"
#include "io/Image.h"
#include "models/Prompt.h"
#include "models/common/TransformerDecoder.h"
#include "nn/Linear.h"
#include "text/Tokenizer.h"

#include <ATen/core/Tensor.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvsteer {

class Checkpoint;

struct LoadOptions {
    std::string device = "cpu";   // "cpu" or "cuda[:N]"
    // auto | f32 | f16 | bf16. On CPU the weights' storage (auto: each tensor as in the checkpoint;
    // compute is float32 either way); on CUDA the storage and compute dtype (auto: the checkpoint's
    // own, as torch_dtype="auto"). models/ModelMemory.h: chooseWeightFormat.
    std::string dtype = "auto";
    int threads = 0;              // threads of the one pool; 0 = all cores
    // Tokens to be generated after a prompt (--max-new-tokens): the memory check's KV estimate.
    int64_t reserveTokens = 256;
    // Called as weights are mapped or converted, with stored bytes done and in all; returning
    // false cancels the load (the loader then throws LoadCancelled).
    std::function<bool(int64_t done, int64_t total)> progress;
    // The system message a chat-template family's prompts carry (Model::takesSystemMessage);
    // unset: the checkpoint's default (Qwen's template has one, Llama-3's none).
    std::optional<std::string> systemMessage;
    // Qwen2-VL / Qwen2.5-VL: the processor's max_pixels instead of preprocessor_config.json's (0:
    // the file's). It caps the image's tokens: larger images are scaled down to fit, as the
    // processor's own max_pixels argument does. Other families take fixed-size images.
    int64_t maxPixels = 0;
};

// Thrown by a model load when LoadOptions::progress asked to stop. Not an error.
struct LoadCancelled {};

// How the prompt's tokens see each other in the prefill.
enum class PromptAttention {
    Causal,        // LLaVA: each token sees the ones before it
    Bidirectional, // PaliGemma (prefix-LM): every prompt token sees every other one
};

// Where an image's tokens go: `tokens` ids replace the one <image> placeholder; grid cell
// (r, c) is token gridOffset + r * gridWidth + c among them.
// With views (LLaVA-NeXT), the span is all `tokens` and the grid the finest view's (VisualSpan).
struct ImageLayout {
    int64_t tokens = 0;
    int64_t gridOffset = 0;
    int gridHeight = 0, gridWidth = 0;
    std::vector<SpanView> views;
};

class Model {
public:
    virtual ~Model() = default;

    const ModelConfig& config() const { return config_; }
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    const TransformerDecoder& decoder() const { return *decoder_; }
    const WeightFormat& format() const { return format_; }
    const std::string& directory() const { return directory_; }
    double loadMs() const { return loadMs_; }
    bool hasVision() const { return config_.hasVision; }
    int64_t parameterCount() const { return parameterCount_; }
    std::string weightsDtype() const { return weightsDtype_; }   // the dtype most weight bytes are kept in

    // --- What a family defines.
    virtual std::string familyName() const = 0;   // "LLaVA-1.5", "PaliGemma", ...
    // The family's own layout around a question (what --prompt means; --raw-prompt skips it).
    // Contains "<image>" once when withImage.
    virtual std::string applyTemplate(const std::string& question, bool withImage) const = 0;
    // Whether the template has a system message LoadOptions::systemMessage sets (chat templates:
    // Qwen, Llama-3); LLaVA's and PaliGemma's layouts have none.
    virtual bool takesSystemMessage() const { return false; }
    // For `inspect`: where the template comes from and which layout it is ("" when the family's
    // layout is fixed, as LLaVA's).
    virtual std::string describeTemplate() const { return ""; }
    // The placeholder the template (and a --raw-prompt) marks the image with, once.
    virtual std::string imageTag() const { return "<image>"; }
    // Resize / crop / normalise one image the way the family's processor does.
    virtual PreprocessedImage preprocessImage(const ImageU8& image) const = 0;
    // pixels [1, 3, H, W] -> image features [tokens, D], exactly what enters the decoder's rows.
    virtual at::Tensor encodeImage(const at::Tensor& pixels) const = 0;
    // A prompt's image features: what the Session calls. Families whose features depend on more
    // than the pixels (LLaVA-NeXT: the picture's size) or are more than one tensor (Qwen3-VL's
    // DeepStack rows) override it.
    virtual ImageFeatures encodePromptImage(const Prompt& prompt) const { return encodeImage(prompt.pixels); }
    virtual PromptAttention promptAttention() const { return PromptAttention::Causal; }
    // The prompt's RoPE positions (Prompt::positionOffset / positionIds): LLaVA counts from 0,
    // PaliGemma from 1. positionRule() says it in words for `inspect`.
    virtual void assignPositions(Prompt& prompt) const { prompt.positionOffset = 0; }
    virtual std::string positionRule() const { return "0, 1, 2, ... (the cache index)"; }
    // How a preprocessed image is laid out as tokens (default: the config's fixed square grid).
    virtual ImageLayout imageLayout(const PreprocessedImage& image) const;
    // The grid every image gets (default: the config's image_size / patch_size, square). The
    // families here have one grid per checkpoint; a family whose grid follows the image would
    // override imageLayout and this together.
    virtual PatchGrid patchGrid() const;

    // --- Shared by every family.
    // Prompt embeddings [1, L, D]: token embeddings with the image features written over the
    // image-token positions, in order. Throws if the counts disagree.
    at::Tensor embedPrompt(const std::vector<int64_t>& ids, const at::Tensor& imageFeatures) const;
    // Architecture, sizes, dtypes, parameter count (for `inspect`).
    std::string describe() const;

protected:
    Model() = default;
    // The steps every family's load shares: config (already parsed by the family), tokenizer,
    // weight format, the memory check before a byte is read, the progress observer. Returns
    // the open checkpoint the family then loads its tensors from.
    Checkpoint beginLoad(const std::string& directory, ModelConfig config, const LoadOptions& options);
    // The vision lines of describe().
    virtual std::string describeVision() const = 0;
    void finishLoad() { loadMs_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - loadStart_).count(); }

    std::string directory_;
    ModelConfig config_;
    std::optional<Tokenizer> tokenizer_;   // optional only because Tokenizer has no empty state
    WeightFormat format_;
    std::unique_ptr<TransformerDecoder> decoder_;

private:
    std::chrono::steady_clock::time_point loadStart_;
    int64_t parameterCount_ = 0;
    std::map<std::string, int64_t> diskDtypes_;
    size_t shardCount_ = 0;
    std::string weightsDtype_;
    double loadMs_ = 0;
};

} // namespace kvsteer
