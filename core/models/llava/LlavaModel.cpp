#include "models/llava/LlavaModel.h"

#include "Error.h"
#include "models/llava/LlavaConfig.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/gelu.h>

#include <filesystem>
#include <sstream>

namespace kvsteer {

namespace fs = std::filesystem;

std::shared_ptr<LlavaModel> LlavaModel::load(const std::string& directory, const LoadOptions& options) {
    if (!fs::is_directory(directory)) throw Error("model directory " + directory + ": does not exist or is not a directory");
    std::shared_ptr<LlavaModel> m(new LlavaModel());
    const std::string where = "config " + (fs::path(directory) / "config.json").string();
    m->loadParts(directory, parseLlavaConfig(readConfigJson(directory), where), options);
    m->finishLoad();
    return m;
}

Checkpoint LlavaModel::loadParts(const std::string& directory, ModelConfig config, const LoadOptions& options) {
    Checkpoint ckpt = beginLoad(directory, std::move(config), options);
    const ModelConfig& c = config_;
    if (c.hasVision) {
        const fs::path pre = fs::path(directory) / "preprocessor_config.json";
        imageConfig_ = fs::exists(pre) ? ClipPreprocessConfig::fromJsonFile(pre.string()) : ClipPreprocessConfig{};
        if (imageConfig_.cropWidth != c.vision.imageSize || imageConfig_.cropHeight != c.vision.imageSize)
            throw Error("preprocessor_config.json in " + directory + ": crop size " + std::to_string(imageConfig_.cropWidth) + "x" +
                        std::to_string(imageConfig_.cropHeight) + " does not match the vision tower's image_size " +
                        std::to_string(c.vision.imageSize));
        VisionTowerSpec clip;   // CLS, pre_layrnorm, no patch bias; read at vision_feature_layer
        clip.layersToRun = c.visionLayersNeeded();
        vision_ = std::make_unique<VisionTransformer>(c.vision, clip, ckpt, format_);
        WeightFormat small = format_;
        small.storage = format_.compute;
        const int64_t dv = c.vision.hiddenSize, d = c.text.hiddenSize;
        proj1Weight_ = loadWeight(ckpt, "projector.linear_1.weight", {d, dv}, format_);
        proj1Bias_ = loadWeight(ckpt, "projector.linear_1.bias", {d}, small);
        proj2Weight_ = loadWeight(ckpt, "projector.linear_2.weight", {d, d}, format_);
        proj2Bias_ = loadWeight(ckpt, "projector.linear_2.bias", {d}, small);
    }
    decoder_ = std::make_unique<TransformerDecoder>(c.text, ckpt, format_);
    return ckpt;
}

std::string LlavaModel::applyTemplate(const std::string& question, bool withImage) const {
    return withImage ? "USER: <image>\n" + question + " ASSISTANT:" : "USER: " + question + " ASSISTANT:";
}

PreprocessedImage LlavaModel::preprocessImage(const ImageU8& image) const { return clipPreprocess(image, imageConfig_); }

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

std::string LlavaModel::describeVision() const {
    std::ostringstream o;
    const VisionConfig& v = config_.vision;
    const int64_t d = config_.text.hiddenSize;
    o << "vision       CLIP ViT: image " << v.imageSize << " px, patch " << v.patchSize << " -> " << v.gridSize() << "x" << v.gridSize()
      << " = " << v.numPatches() << " patches; hidden " << v.hiddenSize << ", MLP " << v.intermediateSize << ", " << v.numLayers
      << " layers (" << config_.visionLayersNeeded() << " used, feature layer " << config_.visionFeatureLayer << "), " << v.numHeads
      << " heads, " << v.hiddenAct << "\n";
    o << "projector    Linear(" << v.hiddenSize << " -> " << d << ") -> GELU -> Linear(" << d << " -> " << d << ")\n";
    return o.str();
}

} // namespace kvsteer
