#include "generate/Prompt.h"

#include "Error.h"
#include "models/llava/LlavaModel.h"

#include <ATen/ops/from_blob.h>

namespace kvsteer {

namespace {

const std::string kImageTag = "<image>";

size_t countOccurrences(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
    return n;
}

} // namespace

std::string applyChatTemplate(const std::string& question, bool withImage) {
    return withImage ? "USER: " + kImageTag + "\n" + question + " ASSISTANT:" : "USER: " + question + " ASSISTANT:";
}

Prompt buildPrompt(const LlavaModel& model, const std::string& text, bool raw, const ImageU8* image) {
    const ModelConfig& config = model.config();
    if (image && !config.hasVision)
        throw Error("model " + config.name + " is text-only (model_type llama): it cannot take an image");

    Prompt p;
    p.hasImage = image != nullptr;
    if (!raw && countOccurrences(text, kImageTag) > 0)
        throw Error("prompt: the question contains \"<image>\"; the template inserts it already (use --raw-prompt to place it yourself)");
    p.text = raw ? text : applyChatTemplate(text, p.hasImage);
    const size_t tags = countOccurrences(p.text, kImageTag);
    if (p.hasImage && tags != 1)
        throw Error("prompt: expected exactly one \"<image>\" with an image, found " + std::to_string(tags));
    if (!p.hasImage && tags != 0)
        throw Error("prompt: contains \"<image>\" but no image was given");

    // Tokenize with the single placeholder, then expand it: the same ids the LLaVA processor gets
    // by repeating the "<image>" string, because added tokens split the text either way.
    const std::vector<int64_t> compact = model.tokenizer().encode(p.text, true);
    for (int64_t id : compact) {
        if (p.hasImage && id == config.imageTokenIndex) {
            p.span.start = static_cast<int64_t>(p.ids.size());
            p.ids.insert(p.ids.end(), config.imageSeqLength(), config.imageTokenIndex);
        } else {
            p.ids.push_back(id);
        }
    }
    if (p.hasImage) {
        // With the "full" strategy the first feature is CLS; the grid starts one later.
        if (config.visionFeatureSelectStrategy == "full") p.span.start += 1;
        p.span.length = config.vision.numPatches();
        p.span.gridHeight = p.span.gridWidth = config.vision.gridSize();
    }
    const int64_t context = config.text.maxPositionEmbeddings;
    if (static_cast<int64_t>(p.ids.size()) >= context)
        throw Error("prompt: " + std::to_string(p.ids.size()) + " tokens do not fit the model's context of " +
                    std::to_string(context) + " tokens (max_position_embeddings), leaving no room to answer");

    if (p.hasImage) {
        p.image = clipPreprocess(*image, model.imageConfig());
        const int64_t h = p.image.cropped.height, w = p.image.cropped.width;
        p.pixels = at::from_blob(p.image.pixels.data(), {1, 3, h, w}, at::TensorOptions().dtype(at::kFloat)).clone();
    }
    return p;
}

} // namespace kvsteer
