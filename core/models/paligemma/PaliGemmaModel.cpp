#include "models/paligemma/PaliGemmaModel.h"

#include "Error.h"
#include "io/Checkpoint.h"
#include "models/paligemma/PaliGemmaConfig.h"

#include <ATen/TensorOperators.h>

#include <cmath>
#include <filesystem>
#include <sstream>

namespace kvsteer {

namespace fs = std::filesystem;

std::shared_ptr<PaliGemmaModel> PaliGemmaModel::load(const std::string& directory, const LoadOptions& options) {
    if (!fs::is_directory(directory)) throw Error("model directory " + directory + ": does not exist or is not a directory");
    const std::string where = "config " + (fs::path(directory) / "config.json").string();
    const PaliGemmaConfig parsed = parsePaliGemmaConfig(readConfigJson(directory), where);

    std::shared_ptr<PaliGemmaModel> m(new PaliGemmaModel());
    Checkpoint ckpt = m->beginLoad(directory, parsed.model, options);
    const ModelConfig& c = m->config_;
    m->featureScaleHidden_ = parsed.featureScaleHidden;
    m->imageConfig_ = siglipPreprocessConfig(directory, c.vision.imageSize);

    VisionTowerSpec siglip;
    siglip.layersToRun = c.vision.numLayers;
    siglip.classToken = false;
    siglip.patchBias = true;
    siglip.preLayerNorm = false;
    siglip.postLayerNorm = true;
    m->vision_ = std::make_unique<VisionTransformer>(c.vision, siglip, ckpt, m->format_);
    WeightFormat small = m->format_;
    small.storage = m->format_.compute;
    const int64_t dv = c.vision.hiddenSize, d = c.text.hiddenSize;
    m->projWeight_ = loadLinear(ckpt, "projector.linear.weight", {d, dv}, m->format_);
    m->projBias_ = loadWeight(ckpt, "projector.linear.bias", {d}, small);
    m->decoder_ = std::make_unique<TransformerDecoder>(c.text, ckpt, m->format_);
    m->finishLoad();
    return m;
}

std::string PaliGemmaModel::applyTemplate(const std::string& prefix, bool withImage) const {
    return (withImage ? "<image>" : "") + tokenizer().piece(tokenizer().bosId()) + prefix + "\n";
}

PreprocessedImage PaliGemmaModel::preprocessImage(const ImageU8& image) const { return clipPreprocess(image, imageConfig_); }

at::Tensor PaliGemmaModel::visionHidden(const at::Tensor& pixels, at::Tensor* embeddings) const {
    return vision_->forward(pixels.to(format_.device, format_.compute), embeddings);
}

at::Tensor PaliGemmaModel::project(const at::Tensor& hidden) const { return applyLinear(hidden, projWeight_, projBias_); }

at::Tensor PaliGemmaModel::encodeImage(const at::Tensor& pixels) const {
    // transformers 4.45 divides by sqrt(hidden_size) here and the decoder multiplies every row by
    // sqrt(text hidden) again; both happen, in float32, so the rounding is the reference's.
    return (project(visionHidden(pixels)) / std::sqrt(double(featureScaleHidden_))).squeeze(0);
}

std::string PaliGemmaModel::describeVision() const {
    std::ostringstream o;
    const VisionConfig& v = config_.vision;
    o << "vision       SigLIP ViT: image " << v.imageSize << " px, patch " << v.patchSize << " -> " << v.gridSize() << "x" << v.gridSize()
      << " = " << v.numPatches() << " patches; hidden " << v.hiddenSize << ", MLP " << v.intermediateSize << ", " << v.numLayers
      << " layers, " << v.numHeads << " heads, " << v.hiddenAct << ", post_layernorm\n";
    o << "projector    Linear(" << v.hiddenSize << " -> " << config_.text.hiddenSize << "), then / sqrt(" << featureScaleHidden_ << ")\n";
    return o.str();
}

} // namespace kvsteer
