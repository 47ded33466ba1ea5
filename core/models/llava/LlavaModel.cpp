#include "models/llava/LlavaModel.h"

#include "Error.h"
#include "MemoryBudget.h"
#include "Runtime.h"
#include "io/Checkpoint.h"
#include "io/SafeTensors.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/tensor.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>

namespace kvsteer {

namespace fs = std::filesystem;

namespace {

WeightFormat weightFormat(const LoadOptions& o) {
    WeightFormat f;
    try {
        f.device = c10::Device(o.device);
    } catch (const std::exception&) {
        throw Error("device '" + o.device + "' is not valid (expected cpu or cuda[:N])");
    }
    if (f.device.is_cuda() && !deviceAvailable(f.device))
        throw Error("device '" + o.device + "' requested but this libtorch has no usable CUDA device");
    const c10::ScalarType dtype = parseDtype(o.dtype);
    // CPU computes in float32 whatever the storage (see Weights.h); CUDA computes in the dtype
    // asked for, float32 for auto (no kvsteer kernels there to widen 16-bit weights).
    if (f.device.is_cpu()) {
        f.storage = dtype;
        f.compute = c10::ScalarType::Float;
    } else {
        f.storage = f.compute = dtype == c10::ScalarType::Undefined ? c10::ScalarType::Float : dtype;
    }
    return f;
}

// The peak a loaded model reaches, from the config and the checkpoint's headers: weights as kept,
// KV caches for a prompt (image + 128 text tokens) plus the reserved new tokens, and the largest
// prefill buffers. An estimate on the safe side, not an accounting.
MemoryNeed estimateMemory(const ModelConfig& c, const Checkpoint& ckpt, const WeightFormat& f, int64_t reserveTokens) {
    MemoryNeed need;
    for (const std::string& name : ckpt.canonicalNames()) need.weights += ckpt.bytes(name, f.storage);

    const TextConfig& t = c.text;
    const int64_t act = static_cast<int64_t>(c10::elementSize(f.compute));
    const int64_t prompt = (c.hasVision ? c.imageSeqLength() : 0) + 128;
    need.contextTokens = std::min<int64_t>(prompt + std::max<int64_t>(reserveTokens, 1), t.maxPositionEmbeddings);
    // K and V of every layer; four caches at the peak: the kept snapshot, a steered copy and the
    // side-by-side pair (one batch of two).
    const int64_t perToken = 2 * int64_t(t.numLayers) * t.numKvHeads * t.headDim * act;
    need.kvCache = 4 * perToken * need.contextTokens;

    const int64_t tp = std::min(prompt, t.maxPositionEmbeddings);
    const int64_t qkv = int64_t(t.numHeads + 2 * t.numKvHeads) * t.headDim;
    const int64_t decoder = tp * act * (4 * t.hiddenSize + qkv + 3 * t.intermediateSize) +
                            3 * int64_t(t.numHeads) * tp * tp * act + 2 * t.vocabSize * act;
    int64_t vision = 0;
    if (c.hasVision) {
        const VisionConfig& v = c.vision;
        const int64_t tv = v.numPatches() + 1;
        vision = tv * act * (4 * v.hiddenSize + 2 * v.intermediateSize) + 3 * int64_t(v.numHeads) * tv * tv * act;
    }
    const int64_t panels = int64_t(currentThreads()) * (4 << 20);   // the kernels' float32 weight panels
    const int64_t runtime = int64_t(300) << 20;                      // libtorch, code, allocator slack
    need.activations = std::max(decoder, vision) + panels + runtime;
    return need;
}

// What would make a refused model fit: keeping 16-bit weights, or a shorter generation.
std::string memoryAdvice(const Checkpoint& ckpt, const WeightFormat& f, const MemoryNeed& need) {
    std::string advice;
    if (f.storage != c10::ScalarType::Undefined) {
        const int64_t asStored = ckpt.storedBytes();
        if (asStored < need.weights)
            advice = "--dtype auto keeps the checkpoint's own dtypes (weights " + formatBytes(asStored) + "); ";
    }
    return advice + "a shorter --max-new-tokens shrinks the KV cache (" + formatBytes(need.kvCache / std::max<int64_t>(need.contextTokens, 1)) +
           " per token); or close other programs";
}

// The dtype most weight bytes are kept in, for the status bar and `inspect`.
std::string dominantDtype(const Checkpoint& ckpt, const WeightFormat& f) {
    if (f.storage != c10::ScalarType::Undefined) return dtypeName(f.storage);
    std::map<std::string, int64_t> bytes;
    for (const std::string& name : ckpt.canonicalNames()) bytes[ckpt.diskDtype(name)] += ckpt.bytes(name, c10::ScalarType::Undefined);
    std::string best;
    for (const auto& [dtype, n] : bytes)
        if (best.empty() || n > bytes[best]) best = dtype;
    return best.empty() ? best : dtypeName(safetensorsDtype(best));
}

} // namespace

std::shared_ptr<LlavaModel> LlavaModel::load(const std::string& directory, const LoadOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    setThreads(options.threads);
    std::shared_ptr<LlavaModel> m(new LlavaModel());
    m->directory_ = directory;
    if (!fs::is_directory(directory)) throw Error("model directory " + directory + ": does not exist or is not a directory");
    m->config_ = ModelConfig::fromJsonFile((fs::path(directory) / "config.json").string());
    if (m->config_.name.empty()) m->config_.name = fs::path(directory).lexically_normal().filename().string();
    if (m->config_.name.empty()) m->config_.name = fs::path(directory).lexically_normal().parent_path().filename().string();
    m->tokenizer_ = Tokenizer::loadFromDirectory(directory);
    if (m->config_.hasVision) {
        const fs::path pre = fs::path(directory) / "preprocessor_config.json";
        m->imageConfig_ = fs::exists(pre) ? ClipPreprocessConfig::fromJsonFile(pre.string()) : ClipPreprocessConfig{};
        if (m->imageConfig_.cropWidth != m->config_.vision.imageSize || m->imageConfig_.cropHeight != m->config_.vision.imageSize)
            throw Error("preprocessor_config.json in " + directory + ": crop size " + std::to_string(m->imageConfig_.cropWidth) + "x" +
                        std::to_string(m->imageConfig_.cropHeight) + " does not match the vision tower's image_size " +
                        std::to_string(m->config_.vision.imageSize));
        if (m->tokenizer_->imageTokenId() != m->config_.imageTokenIndex)
            throw Error("tokenizer in " + directory + ": <image> has id " + std::to_string(m->tokenizer_->imageTokenId()) +
                        " but config.json says image_token_index " + std::to_string(m->config_.imageTokenIndex));
    }
    if (m->tokenizer_->vocabSize() > m->config_.text.vocabSize)
        throw Error("tokenizer in " + directory + ": " + std::to_string(m->tokenizer_->vocabSize()) +
                    " tokens do not fit the model's vocab_size " + std::to_string(m->config_.text.vocabSize));

    m->format_ = weightFormat(options);
    Checkpoint ckpt = Checkpoint::open(directory);
    // Memory is checked before a byte of weights is touched: refuse rather than be OOM-killed.
    const MemoryNeed need = estimateMemory(m->config_, ckpt, m->format_, options.reserveTokens);
    requireMemory(need, memoryBudget(m->format_.device), "model " + directory, memoryAdvice(ckpt, m->format_, need));
    m->weightsDtype_ = dominantDtype(ckpt, m->format_);
    if (options.progress) {
        const int64_t total = ckpt.storedBytes();
        if (!options.progress(0, total)) throw LoadCancelled{};
        auto done = std::make_shared<int64_t>(0);
        ckpt.setLoadObserver([done, total, progress = options.progress](int64_t bytes) {
            *done += bytes;
            if (!progress(std::min(*done, total), total)) throw LoadCancelled{};
        });
    }
    m->parameterCount_ = ckpt.parameterCount();
    m->diskDtypes_ = ckpt.parametersByDtype();
    m->shardCount_ = ckpt.fileCount();
    if (m->config_.hasVision) {
        const ModelConfig& c = m->config_;
        m->vision_ = std::make_unique<ClipVision>(c.vision, c.visionLayersNeeded(), ckpt, m->format_);
        WeightFormat small = m->format_;
        small.storage = m->format_.compute;
        const int64_t dv = c.vision.hiddenSize, d = c.text.hiddenSize;
        m->proj1Weight_ = loadWeight(ckpt, "projector.linear_1.weight", {d, dv}, m->format_);
        m->proj1Bias_ = loadWeight(ckpt, "projector.linear_1.bias", {d}, small);
        m->proj2Weight_ = loadWeight(ckpt, "projector.linear_2.weight", {d, d}, m->format_);
        m->proj2Bias_ = loadWeight(ckpt, "projector.linear_2.bias", {d}, small);
    }
    m->llama_ = std::make_unique<Llama>(m->config_.text, ckpt, m->format_);
    m->loadMs_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return m;
}

at::Tensor LlavaModel::visionHidden(const at::Tensor& pixels, at::Tensor* embeddings) const {
    if (!vision_) throw Error("model " + config_.name + " has no vision tower (a text-only model)");
    return vision_->forward(pixels.to(format_.device, format_.compute), embeddings);
}

at::Tensor LlavaModel::project(const at::Tensor& selected) const {
    at::Tensor h = at::gelu(applyLinear(selected, proj1Weight_, proj1Bias_));   // exact (erf) GELU
    return applyLinear(h, proj2Weight_, proj2Bias_);
}

at::Tensor LlavaModel::encodeImage(const at::Tensor& pixels) const {
    at::Tensor selected = visionHidden(pixels);
    if (config_.visionFeatureSelectStrategy == "default") selected = selected.narrow(1, 1, selected.size(1) - 1);
    return project(selected).squeeze(0);
}

at::Tensor LlavaModel::embedPrompt(const std::vector<int64_t>& ids, const at::Tensor& imageFeatures) const {
    at::Tensor idTensor = at::tensor(ids, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
    at::Tensor embeds = llama_->embed(idTensor);
    std::vector<int64_t> positions;
    for (size_t i = 0; i < ids.size(); ++i)
        if (config_.hasVision && ids[i] == config_.imageTokenIndex) positions.push_back(static_cast<int64_t>(i));
    const int64_t nFeatures = imageFeatures.defined() ? imageFeatures.size(0) : 0;
    if (static_cast<int64_t>(positions.size()) != nFeatures)
        throw Error("prompt has " + std::to_string(positions.size()) + " image tokens but " + std::to_string(nFeatures) +
                    " image features were given");
    if (nFeatures > 0) {
        at::Tensor index = at::tensor(positions, at::TensorOptions().dtype(at::kLong)).to(format_.device);
        embeds.select(0, 0).index_copy_(0, index, imageFeatures.to(embeds.scalar_type()));
    }
    return embeds;
}

std::string LlavaModel::describe() const {
    std::ostringstream o;
    const TextConfig& t = config_.text;
    o << "model        " << config_.name << "  (" << directory_ << ")\n";
    o << "type         " << config_.modelType << "\n";
    if (config_.hasVision) {
        const VisionConfig& v = config_.vision;
        o << "vision       CLIP ViT: image " << v.imageSize << " px, patch " << v.patchSize << " -> " << v.gridSize() << "x"
          << v.gridSize() << " = " << v.numPatches() << " patches; hidden " << v.hiddenSize << ", MLP " << v.intermediateSize
          << ", " << v.numLayers << " layers (" << config_.visionLayersNeeded() << " used, feature layer "
          << config_.visionFeatureLayer << "), " << v.numHeads << " heads, " << v.hiddenAct << "\n";
        o << "projector    Linear(" << v.hiddenSize << " -> " << t.hiddenSize << ") -> GELU -> Linear(" << t.hiddenSize << " -> "
          << t.hiddenSize << ")\n";
        o << "image tokens " << config_.imageSeqLength() << " per image (id " << config_.imageTokenIndex << ")\n";
    }
    o << "text         Llama: hidden " << t.hiddenSize << ", MLP " << t.intermediateSize << " (SwiGLU), " << t.numLayers
      << " layers, " << t.numHeads << " heads / " << t.numKvHeads << " KV heads, head_dim " << t.headDim << ", vocab "
      << t.vocabSize << ", context " << t.maxPositionEmbeddings << ", rope_theta " << t.ropeTheta << ", rms_norm_eps "
      << t.rmsNormEps << "\n";
    o << "tokenizer    " << tokenizer_->vocabSize() << " tokens (bos " << tokenizer_->bosId() << ", eos " << tokenizer_->eosId() << ")\n";
    o << "parameters   " << parameterCount_ << " (" << shardCount_ << " file" << (shardCount_ == 1 ? "" : "s") << "; on disk:";
    for (const auto& [dtype, n] : diskDtypes_) o << " " << dtype << " " << n;
    o << ")\n";
    o << "runtime      device " << format_.device.str() << ", weights " << weightsDtype_ << ", compute "
      << c10::toString(format_.compute) << ", threads " << currentThreads() << "\n";
    const int64_t kvBytesPerToken = int64_t(2) * t.numLayers * t.numKvHeads * t.headDim * c10::elementSize(format_.compute);
    o << "kv cache     " << kvBytesPerToken << " bytes per token\n";
    return o.str();
}

} // namespace kvsteer
