#include "models/qwen2vl/Qwen2VlModel.h"

#include "Error.h"
#include "io/Checkpoint.h"
#include "models/qwen2vl/MropePositions.h"
#include "models/qwen2vl/Qwen2VlConfig.h"
#include "models/qwen2vl/QwenChatTemplate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

namespace kvsteer {

namespace fs = std::filesystem;

std::shared_ptr<Qwen2VlModel> Qwen2VlModel::load(const std::string& directory, const LoadOptions& options) {
    if (!fs::is_directory(directory)) throw Error("model directory " + directory + ": does not exist or is not a directory");
    const std::string where = "config " + (fs::path(directory) / "config.json").string();
    return loadParsed(directory, options, parseQwen2VlConfig(readConfigJson(directory), where));
}

std::shared_ptr<Qwen2VlModel> Qwen2VlModel::loadParsed(const std::string& directory, const LoadOptions& options, Qwen2VlConfig parsed) {
    std::shared_ptr<Qwen2VlModel> m(new Qwen2VlModel());
    if (parsed.model.hasVision) {
        const fs::path pre = fs::path(directory) / "preprocessor_config.json";
        m->imageConfig_ = fs::exists(pre) ? Qwen2VlImageProcessorConfig::fromJsonFile(pre.string()) : Qwen2VlImageProcessorConfig{};
        if (options.maxPixels > 0) {
            if (options.maxPixels < m->imageConfig_.minPixels)
                throw Error("max_pixels " + std::to_string(options.maxPixels) + " is below the processor's min_pixels " +
                            std::to_string(m->imageConfig_.minPixels));
            m->imageConfig_.maxPixels = options.maxPixels;
        }
        if (m->imageConfig_.factor() != parsed.model.vision.patchSize)
            throw Error(pre.string() + ": patch_size x merge_size " + std::to_string(m->imageConfig_.factor()) +
                        " contradicts the vision tower's patch_size x spatial_merge_size " + std::to_string(parsed.model.vision.patchSize));
        // The largest image the processor makes, for the memory check.
        const int side = std::max(1, int(std::sqrt(double(m->imageConfig_.maxPixels)) / parsed.model.vision.patchSize));
        parsed.model.vision.imageSize = side * parsed.model.vision.patchSize;
    }
    Checkpoint ckpt = m->beginLoad(directory, parsed.model, options);
    m->visionStartTokenId_ = parsed.visionStartTokenId;
    m->systemMessage_ = options.systemMessage ? *options.systemMessage : qwenDefaultSystemMessage(directory);
    if (m->config_.hasVision) m->vision_ = std::make_unique<Qwen2VisionTower>(parsed.vision, ckpt, m->format_);
    m->decoder_ = std::make_unique<TransformerDecoder>(m->config_.text, ckpt, m->format_);
    m->finishLoad();
    return m;
}

std::string Qwen2VlModel::applyTemplate(const std::string& question, bool withImage) const {
    // The chat template's default system message, one user turn (image first), the generation prompt.
    return "<|im_start|>system\n" + systemMessage_ + "<|im_end|>\n<|im_start|>user\n" +
           std::string(withImage ? "<|vision_start|><|image_pad|><|vision_end|>" : "") + question +
           "<|im_end|>\n<|im_start|>assistant\n";
}

PreprocessedImage Qwen2VlModel::preprocessImage(const ImageU8& image) const {
    return qwen2VlResizeAndNormalize(image, imageConfig_);
}

ImageLayout Qwen2VlModel::imageLayout(const PreprocessedImage& image) const {
    // One visual token per merged 28x28 cell, row-major: a non-square grid in general.
    const int cell = imageConfig_.factor();
    ImageLayout layout;
    layout.gridHeight = image.cropped.height / cell;
    layout.gridWidth = image.cropped.width / cell;
    layout.tokens = int64_t(layout.gridHeight) * layout.gridWidth;
    return layout;
}

at::Tensor Qwen2VlModel::encodeImage(const at::Tensor& pixels) const {
    if (!vision_) throw Error("model " + config_.name + " has no vision tower (a text-only model)");
    // pixels [1, 3, H, W] (normalised) -> the processor's patch rows [N, 1176] -> merged features.
    const int64_t h = pixels.size(2), w = pixels.size(3);
    const at::Tensor chw = pixels.select(0, 0).to(at::kCPU).to(at::kFloat).contiguous();
    const std::vector<float> values(chw.data_ptr<float>(), chw.data_ptr<float>() + chw.numel());
    const at::Tensor patches = flattenPatches(values, int(h), int(w), imageConfig_);
    const GridThw grid{1, h / imageConfig_.patchSize, w / imageConfig_.patchSize};
    return vision_->forward(patches.to(format_.device, format_.compute), grid);
}

void Qwen2VlModel::assignPositions(Prompt& p) const {
    if (config_.text.mropeSection.empty()) p.positionOffset = 0;   // Qwen2 text: the cache index
    else assignMropePositions(p);
}

std::string Qwen2VlModel::positionRule() const {
    return config_.text.mropeSection.empty() ? "0, 1, 2, ... (the cache index)" : mropePositionRule();
}

std::string Qwen2VlModel::describeVision() const {
    std::ostringstream o;
    const Qwen2VisionConfig& v = vision_->config();
    o << "vision       " << familyName() << " ViT: dynamic resolution (" << imageConfig_.minPixels << " .. " << imageConfig_.maxPixels
      << " px, sides multiples of " << imageConfig_.factor() << "), patch " << v.patchSize << " x " << v.temporalPatchSize
      << " frames; hidden " << v.embedDim << ", " << (v.rmsNormSwiGlu ? "RMSNorm, SwiGLU MLP " : "MLP ") << v.mlpHidden() << ", "
      << v.depth << " blocks, " << v.numHeads << " heads, 2D RoPE\n";
    if (v.windowSize > 0) {
        o << "windows      attention inside " << v.windowSide() << "x" << v.windowSide() << "-cell windows (" << v.windowSize
          << " px), whole image in blocks";
        for (int b : v.fullAttentionBlocks) o << " " << b;
        o << "\n";
    }
    o << "merger       2x2 patches -> " << (v.rmsNormSwiGlu ? "RMSNorm" : "LayerNorm") << " -> Linear -> GELU -> Linear(" << v.hiddenSize
      << "); grid h/28 x w/28, up to " << config_.imageSeqLength() << " tokens\n";
    return o.str();
}

} // namespace kvsteer
