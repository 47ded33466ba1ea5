#include "model/LlavaModel.h"

#include "Error.h"
#include "Runtime.h"
#include "model/Checkpoint.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/tensor.h>

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
    f.storage = dtype;
    // CPU computes in float32 whatever the storage (see Weights.h); CUDA computes in the dtype asked for.
    f.compute = f.device.is_cpu() ? c10::ScalarType::Float : dtype;
    return f;
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
    const Checkpoint ckpt = Checkpoint::open(directory);
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
    o << "runtime      device " << format_.device.str() << ", weights " << c10::toString(format_.storage) << ", compute "
      << c10::toString(format_.compute) << ", threads " << currentThreads() << "\n";
    const int64_t kvBytesPerToken = int64_t(2) * t.numLayers * t.numKvHeads * t.headDim * c10::elementSize(format_.compute);
    o << "kv cache     " << kvBytesPerToken << " bytes per token\n";
    return o.str();
}

} // namespace kvsteer
