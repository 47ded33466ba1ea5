// Model::beginLoad: the part of loading every family shares — and the memory check that
// refuses a model before it can get the process OOM-killed.
#include "models/Model.h"
#include "models/ModelMemory.h"

#include "Error.h"
#include "MemoryBudget.h"
#include "Runtime.h"
#include "io/Checkpoint.h"
#include "io/SafeTensors.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace kvsteer {

namespace fs = std::filesystem;

namespace {

// The device of --device, checked: a CUDA device this libtorch cannot use is an error now.
c10::Device deviceOf(const LoadOptions& o) {
    c10::Device device(c10::kCPU);
    try {
        device = c10::Device(o.device);
    } catch (const std::exception&) {
        throw Error("device '" + o.device + "' is not valid (expected cpu or cuda[:N])");
    }
    if (device.is_cuda() && !deviceAvailable(device))
        throw Error("device '" + o.device + "' requested but this libtorch has no usable CUDA device");
    return device;
}

// The dtype most of the checkpoint's weight bytes are stored in.
c10::ScalarType storedDtype(const Checkpoint& ckpt) {
    std::map<std::string, int64_t> bytes;
    for (const std::string& name : ckpt.canonicalNames()) bytes[ckpt.diskDtype(name)] += ckpt.bytes(name, c10::ScalarType::Undefined);
    std::string best;
    for (const auto& [dtype, n] : bytes)
        if (best.empty() || n > bytes[best]) best = dtype;
    return best.empty() ? c10::ScalarType::Float : safetensorsDtype(best);
}

// The checkpoint's weights in the storage dtype, then the estimate (ModelMemory.h).
MemoryNeed estimateMemory(const ModelConfig& c, const Checkpoint& ckpt, const WeightFormat& f, int64_t reserveTokens) {
    int64_t weights = 0;
    for (const std::string& name : ckpt.canonicalNames()) weights += ckpt.bytes(name, f.storage);
    return estimateMemory(c, weights, f.compute, reserveTokens);
}

// What would make a refused model fit: keeping 16-bit weights, or a shorter generation (the
// remedies say which; the front end names its own control for each).
std::string memoryAdvice(const ModelConfig& c, const Checkpoint& ckpt, const WeightFormat& f, const MemoryNeed& need,
                         std::vector<Remedy>* remedies) {
    std::string advice;
    if (f.storage != c10::ScalarType::Undefined) {
        const int64_t asStored = ckpt.storedBytes();
        if (asStored < need.weights) {
            advice = "keeping the checkpoint's own dtypes needs less (weights " + formatBytes(asStored) + "); ";
            remedies->push_back(Remedy::KeepStoredDtype);
        }
    }
    remedies->push_back(Remedy::FewerNewTokens);
    // Qwen's processors size the image budget by max_pixels: a real checkpoint's allows 16k tokens.
    if (c.hasVision && (c.modelType == "qwen2_vl" || c.modelType == "qwen2_5_vl" || c.modelType == "qwen3_vl")) {
        remedies->push_back(Remedy::SmallerImageBudget);
        advice += "a smaller image budget (max_pixels; up to " + std::to_string(c.imageSeqLength()) +
                  " image tokens now) shrinks the KV cache and the prefill; ";
    }
    return advice + "fewer new tokens shrink the KV cache (" + formatBytes(need.kvCache / std::max<int64_t>(need.contextTokens, 1)) +
           " per token); or close other programs";
}

} // namespace

Checkpoint Model::beginLoad(const std::string& directory, ModelConfig config, const LoadOptions& options) {
    loadStart_ = std::chrono::steady_clock::now();
    setThreads(options.threads);
    directory_ = directory;
    config_ = std::move(config);
    if (config_.name.empty()) config_.name = fs::path(directory).lexically_normal().filename().string();
    if (config_.name.empty()) config_.name = fs::path(directory).lexically_normal().parent_path().filename().string();
    tokenizer_ = Tokenizer::loadFromDirectory(directory);
    if (config_.hasVision && tokenizer_->imageTokenId() != config_.imageTokenIndex)
        throw Error("tokenizer in " + directory + ": <image> has id " + std::to_string(tokenizer_->imageTokenId()) +
                    " but config.json says image_token_index " + std::to_string(config_.imageTokenIndex));
    if (tokenizer_->vocabSize() > config_.text.vocabSize)
        throw Error("tokenizer in " + directory + ": " + std::to_string(tokenizer_->vocabSize()) +
                    " tokens do not fit the model's vocab_size " + std::to_string(config_.text.vocabSize));

    const c10::Device device = deviceOf(options);
    Checkpoint ckpt = Checkpoint::open(directory);
    const c10::ScalarType stored = storedDtype(ckpt);
    format_ = chooseWeightFormat(device, parseDtype(options.dtype), stored);
    // Memory is checked before a byte of weights is touched: refuse rather than be OOM-killed.
    const MemoryNeed need = estimateMemory(config_, ckpt, format_, options.reserveTokens);
    std::vector<Remedy> remedies;
    const std::string advice = memoryAdvice(config_, ckpt, format_, need, &remedies);
    requireMemory(need, memoryBudget(format_.device), "model " + directory, advice, remedies);
    // The dtype most weight bytes are kept in, for the status bar and `inspect`.
    weightsDtype_ = dtypeName(format_.storage != c10::ScalarType::Undefined ? format_.storage : stored);
    if (options.progress) {
        const int64_t total = ckpt.storedBytes();
        if (!options.progress(0, total)) throw LoadCancelled{};
        auto done = std::make_shared<int64_t>(0);
        ckpt.setLoadObserver([done, total, progress = options.progress](int64_t bytes) {
            *done += bytes;
            if (!progress(std::min(*done, total), total)) throw LoadCancelled{};
        });
    }
    parameterCount_ = ckpt.parameterCount();
    diskDtypes_ = ckpt.parametersByDtype();
    shardCount_ = ckpt.fileCount();
    return ckpt;
}

WeightFormat chooseWeightFormat(const c10::Device& device, c10::ScalarType requested, c10::ScalarType stored) {
    WeightFormat f;
    f.device = device;
    if (device.is_cpu()) {
        f.storage = requested;
        f.compute = c10::ScalarType::Float;
    } else {
        f.storage = f.compute = requested != c10::ScalarType::Undefined ? requested : stored;
    }
    return f;
}

MemoryNeed estimateMemory(const ModelConfig& c, int64_t weightBytes, c10::ScalarType compute, int64_t reserveTokens) {
    MemoryNeed need;
    need.weights = weightBytes;

    const TextConfig& t = c.text;
    const int64_t act = static_cast<int64_t>(c10::elementSize(compute));
    const int64_t prompt = (c.hasVision ? c.imageSeqLength() : 0) + 128;
    need.contextTokens = std::min<int64_t>(prompt + std::max<int64_t>(reserveTokens, 1), t.maxPositionEmbeddings);
    // K and V of every layer; three caches at the peak: the kept snapshot and the side-by-side
    // pair's batch of two (the steered row is edited in place there, see prepareSteeredRun).
    const int64_t perToken = 2 * int64_t(t.numLayers) * t.numKvHeads * t.headDim * act;
    need.kvCache = 3 * perToken * need.contextTokens;

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

} // namespace kvsteer
