#include "models/qwen3vl/Qwen3VlModel.h"

#include "Error.h"
#include "io/Checkpoint.h"
#include "models/qwen2vl/MropePositions.h"
#include "models/qwen2vl/QwenChatTemplate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

namespace kvsteer {

namespace fs = std::filesystem;

Qwen2VlImageProcessorConfig qwen3VlProcessorDefaults() {
    Qwen2VlImageProcessorConfig c;
    c.patchSize = 16;
    c.minPixels = 65536;
    c.maxPixels = 16777216;
    std::fill(c.mean, c.mean + 3, 0.5f);
    std::fill(c.std, c.std + 3, 0.5f);
    return c;
}

namespace {

// The processor: preprocessor_config.json (or the hub's defaults), --max-pixels over it, checked
// against the tower's cell size.
Qwen2VlImageProcessorConfig readProcessor(const std::string& directory, const LoadOptions& options, const Qwen3VisionConfig& vision) {
    const fs::path file = fs::path(directory) / "preprocessor_config.json";
    Qwen2VlImageProcessorConfig c = fs::exists(file) ? Qwen2VlImageProcessorConfig::fromJsonFile(file.string()) : qwen3VlProcessorDefaults();
    if (options.maxPixels > 0) {
        if (options.maxPixels < c.minPixels)
            throw Error("max_pixels " + std::to_string(options.maxPixels) + " is below the processor's min_pixels " + std::to_string(c.minPixels));
        c.maxPixels = options.maxPixels;
    }
    const int cell = vision.patchSize * vision.spatialMergeSize;
    if (c.factor() != cell || c.temporalPatchSize != vision.temporalPatchSize)
        throw Error(file.string() + ": patch_size x merge_size " + std::to_string(c.factor()) + " (temporal " +
                    std::to_string(c.temporalPatchSize) + ") contradicts the vision tower's patch_size x spatial_merge_size " +
                    std::to_string(cell) + " (temporal " + std::to_string(vision.temporalPatchSize) + ")");
    return c;
}

} // namespace

std::shared_ptr<Qwen3VlModel> Qwen3VlModel::load(const std::string& directory, const LoadOptions& options) {
    if (!fs::is_directory(directory)) throw Error("model directory " + directory + ": does not exist or is not a directory");
    Qwen3VlConfig parsed = parseQwen3VlConfig(readConfigJson(directory), "config " + (fs::path(directory) / "config.json").string());
    std::shared_ptr<Qwen3VlModel> m(new Qwen3VlModel());
    m->imageConfig_ = readProcessor(directory, options, parsed.vision);
    // The largest image the processor makes, for the memory check: a square of max_pixels.
    const int cell = m->imageConfig_.factor();
    const int side = std::max(1, int(std::sqrt(double(m->imageConfig_.maxPixels)) / cell));
    parsed.model.vision.imageSize = side * cell;
    Checkpoint ckpt = m->beginLoad(directory, parsed.model, options);
    m->systemMessage_ = options.systemMessage ? options.systemMessage : qwenTemplateSystemMessage(directory);
    m->videoTokenId_ = parsed.videoTokenId;
    m->vision_ = std::make_unique<Qwen3VisionTower>(parsed.vision, ckpt, m->format_);
    m->decoder_ = std::make_unique<TransformerDecoder>(m->config_.text, ckpt, m->format_);
    m->finishLoad();
    return m;
}

std::string Qwen3VlModel::applyTemplate(const std::string& question, bool withImage) const {
    // Qwen3-VL Instruct's chat template: a system turn only when one is given, one user turn
    // (image first), the generation prompt.
    const std::string system = systemMessage_ ? "<|im_start|>system\n" + *systemMessage_ + "<|im_end|>\n" : "";
    return system + "<|im_start|>user\n" + std::string(withImage ? "<|vision_start|><|image_pad|><|vision_end|>" : "") + question +
           "<|im_end|>\n<|im_start|>assistant\n";
}

std::string Qwen3VlModel::describeTemplate() const {
    return systemMessage_ ? "Qwen3-VL chat template, system message \"" + *systemMessage_ + "\""
                          : "Qwen3-VL chat template, no system message (none by default; --system sets one)";
}

PreprocessedImage Qwen3VlModel::preprocessImage(const ImageU8& image) const { return qwen2VlResizeAndNormalize(image, imageConfig_); }

ImageLayout Qwen3VlModel::imageLayout(const PreprocessedImage& image) const {
    // One visual token per merged 32 x 32 cell, row-major: a non-square grid in general.
    ImageLayout layout;
    layout.gridHeight = image.cropped.height / imageConfig_.factor();
    layout.gridWidth = image.cropped.width / imageConfig_.factor();
    layout.tokens = int64_t(layout.gridHeight) * layout.gridWidth;
    return layout;
}

ImageFeatures Qwen3VlModel::encodePixels(const at::Tensor& pixels, Qwen3VisionTower::Trace* trace) const {
    // pixels [1, 3, H, W] (normalised) -> the processor's patch rows [N, 1536] -> the tower.
    const int64_t h = pixels.size(2), w = pixels.size(3);
    const at::Tensor chw = pixels.select(0, 0).to(at::kCPU).to(at::kFloat).contiguous();
    const std::vector<float> values(chw.data_ptr<float>(), chw.data_ptr<float>() + chw.numel());
    const at::Tensor patches = flattenPatches(values, int(h), int(w), imageConfig_);
    const GridThw grid{1, h / imageConfig_.patchSize, w / imageConfig_.patchSize};
    return vision_->forward(patches, grid, trace);
}

at::Tensor Qwen3VlModel::encodeImage(const at::Tensor& pixels) const { return encodePixels(pixels).tokens; }

ImageFeatures Qwen3VlModel::encodePromptImage(const Prompt& prompt) const { return encodePixels(prompt.pixels); }

void Qwen3VlModel::assignPositions(Prompt& prompt) const {
    // A video's frames each take their own timestamps and vision_start ... vision_end: not read yet.
    if (std::find(prompt.ids.begin(), prompt.ids.end(), videoTokenId_) != prompt.ids.end())
        throw Error("prompt: holds a video token (" + tokenizer_->piece(videoTokenId_) + ", id " + std::to_string(videoTokenId_) +
                    "); kvsteer reads Qwen3-VL images only, not videos");
    assignMropePositions(prompt);
}

std::string Qwen3VlModel::positionRule() const { return mropePositionRule() + "; the axes interleaved over the frequencies"; }

std::string Qwen3VlModel::describeVision() const {
    std::ostringstream o;
    const Qwen3VisionConfig& v = vision_->config();
    o << "vision       Qwen3-VL ViT: dynamic resolution (" << imageConfig_.minPixels << " .. " << imageConfig_.maxPixels
      << " px, sides multiples of " << imageConfig_.factor() << "), patch " << v.patchSize << " x " << v.temporalPatchSize
      << " frames; hidden " << v.hiddenSize << ", MLP " << v.intermediateSize << " (" << v.hiddenAct << "), " << v.depth << " blocks, "
      << v.numHeads << " heads, 2D RoPE, learned positions (" << v.positionSide() << "x" << v.positionSide() << ", interpolated)\n";
    o << "merger       2x2 patches -> LayerNorm -> Linear -> GELU -> Linear(" << v.outHiddenSize << "); grid h/" << imageConfig_.factor()
      << " x w/" << imageConfig_.factor() << ", up to " << config_.imageSeqLength() << " tokens\n";
    if (v.deepstackVisualIndexes.empty()) return o.str() + "deepstack    none\n";
    o << "deepstack    blocks";
    for (int b : v.deepstackVisualIndexes) o << " " << b;
    o << " -> their own mergers -> added at the image positions after decoder layers 0.." << v.deepstackVisualIndexes.size() - 1 << "\n";
    return o.str();
}

} // namespace kvsteer
