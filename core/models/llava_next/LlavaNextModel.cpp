#include "models/llava_next/LlavaNextModel.h"

#include "Error.h"
#include "models/llava_next/LlavaNextConfig.h"
#include "models/llava_next/LlavaNextImageProcessor.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/stack.h>

#include <filesystem>
#include <sstream>

namespace kvsteer {

namespace fs = std::filesystem;

std::shared_ptr<LlavaNextModel> LlavaNextModel::load(const std::string& directory, const LoadOptions& options) {
    if (!fs::is_directory(directory)) throw Error("model directory " + directory + ": does not exist or is not a directory");
    std::shared_ptr<LlavaNextModel> m(new LlavaNextModel());
    const std::string where = "config " + (fs::path(directory) / "config.json").string();
    LlavaNextConfig config = parseLlavaNextConfig(readConfigJson(directory), where);
    m->pinpoints_ = config.pinpoints;
    m->textModelType_ = config.textModelType;
    Checkpoint ckpt = m->loadParts(directory, std::move(config.model), options);
    WeightFormat small = m->format_;
    small.storage = m->format_.compute;
    m->imageNewline_ = loadWeight(ckpt, "image_newline", {m->config_.text.hiddenSize}, small);
    m->finishLoad();
    return m;
}

std::string LlavaNextModel::applyTemplate(const std::string& question, bool withImage) const {
    const std::string image = withImage ? "<image>\n" : "";
    if (textModelType_ == "mistral") return "[INST] " + image + question + " [/INST]";
    return "USER: " + image + question + " ASSISTANT:";
}

AnyresGrid LlavaNextModel::gridFor(Resolution picture) const {
    const VisionConfig& v = config_.vision;
    return anyresGrid(picture, pinpoints_, v.imageSize, v.patchSize);
}

PreprocessedImage LlavaNextModel::preprocessImage(const ImageU8& image) const {
    return llavaNextPreprocess(image, imageConfig_, pinpoints_, config_.vision.patchSize);
}

at::Tensor LlavaNextModel::encodeImage(const at::Tensor&) const {
    throw Error("LLaVA-NeXT: image features depend on the picture's size; encode a prompt's image (encodePromptImage)");
}

ImageFeatures LlavaNextModel::encodePromptImage(const Prompt& prompt) const {
    if (!prompt.image) throw Error("LLaVA-NeXT: the prompt's image was not through this model's processor");
    return encodeImage(prompt.pixels, {prompt.image->sourceHeight, prompt.image->sourceWidth});
}

at::Tensor LlavaNextModel::encodeImage(const at::Tensor& pixels, Resolution picture) const {
    const AnyresGrid grid = gridFor(picture);
    const int64_t g = grid.cellsPerView;
    if (pixels.dim() != 4 || pixels.size(0) != grid.views() || pixels.size(2) != grid.viewSize || pixels.size(3) != grid.viewSize)
        throw Error("LLaVA-NeXT: pixels must be [" + std::to_string(grid.views()) + ", 3, " + std::to_string(grid.viewSize) + ", " +
                    std::to_string(grid.viewSize) + "] for a " + std::to_string(picture.width) + "x" + std::to_string(picture.height) +
                    " picture");
    // One view at a time through CLIP (CLS dropped) and the projector: [g * g, D] each.
    std::vector<at::Tensor> views;
    for (int64_t i = 0; i < pixels.size(0); ++i) {
        const at::Tensor selected = visionHidden(pixels.narrow(0, i, 1));
        views.push_back(project(selected.narrow(1, 1, selected.size(1) - 1)).squeeze(0));
    }
    const at::Tensor base = views.front();
    const int64_t d = base.size(1);
    // The crops stitched as the picture: [cropRows, cropCols, g, g, D] -> [cropRows * g, cropCols * g, D].
    at::Tensor crops = at::stack(std::vector<at::Tensor>(views.begin() + 1, views.end()))
                           .reshape({grid.cropRows, grid.cropCols, g, g, d})
                           .permute({0, 2, 1, 3, 4})
                           .reshape({grid.cropRows * g, grid.cropCols * g, d});
    crops = crops.narrow(0, grid.rowOffset, grid.rows).narrow(1, grid.colOffset, grid.cols);   // unpadded
    const at::Tensor newline = imageNewline_.to(crops.scalar_type()).reshape({1, 1, d}).expand({grid.rows, 1, d});
    const at::Tensor rows = at::cat({crops, newline}, 1).reshape({int64_t(grid.rows) * (grid.cols + 1), d});
    return at::cat({base, rows}, 0);
}

std::vector<SpanView> anyresViews(const AnyresGrid& grid) {
    const int g = grid.cellsPerView;
    SpanView base;
    base.name = "base";
    base.rows = base.cols = base.rowStride = g;
    base.cellWidth = base.cellHeight = 1.0 / g;
    // The crops' cells on the fitted picture: the padding's offset taken off, in its fractions.
    const double cellPx = double(grid.viewSize) / g;
    SpanView crops;
    crops.name = "crops";
    crops.offset = grid.baseTokens();
    crops.rows = grid.rows;
    crops.cols = grid.cols;
    crops.rowStride = grid.cols + 1;
    crops.left = (grid.colOffset * cellPx - grid.padLeft) / grid.fitted.width;
    crops.top = (grid.rowOffset * cellPx - grid.padTop) / grid.fitted.height;
    crops.cellWidth = cellPx / grid.fitted.width;
    crops.cellHeight = cellPx / grid.fitted.height;
    return {base, crops};
}

ImageLayout LlavaNextModel::imageLayout(const PreprocessedImage& image) const {
    const AnyresGrid grid = gridFor({image.sourceHeight, image.sourceWidth});
    // transformers unpads such a sliver to no cells at all (only newline tokens): nothing would
    // be left to paint on, so it is refused here rather than steered silently nowhere.
    if (grid.rows == 0 || grid.cols == 0)
        throw Error("LLaVA-NeXT: a " + std::to_string(image.sourceWidth) + "x" + std::to_string(image.sourceHeight) +
                    " picture keeps no crop cells once unpadded (" + std::to_string(grid.rows) + "x" + std::to_string(grid.cols) +
                    "): its aspect ratio is too extreme; crop or pad it nearer to square");
    ImageLayout layout;
    layout.tokens = grid.tokens();
    layout.gridHeight = grid.rows;
    layout.gridWidth = grid.cols;
    layout.views = anyresViews(grid);
    return layout;
}

std::string LlavaNextModel::describeVision() const {
    std::ostringstream o;
    o << LlavaModel::describeVision();
    o << "anyres       base view " << config_.vision.gridSize() << "x" << config_.vision.gridSize() << " + crops of "
      << config_.vision.imageSize << " px at the best of";
    for (const Resolution& r : pinpoints_) o << " " << r.height << "x" << r.width;
    o << " (HxW); crop grid unpadded, image_newline after each row; up to " << config_.maxImageTokens << " tokens\n";
    return o.str();
}

} // namespace kvsteer
