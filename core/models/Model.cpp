// What every family shares once loaded: prompt building over the family's hooks, the merge of
// image features into the prompt's embeddings, and `inspect`'s description.
#include "models/Model.h"

#include "Error.h"
#include "Runtime.h"

#include <ATen/ops/from_blob.h>
#include <ATen/ops/tensor.h>

#include <sstream>

namespace kvsteer {

namespace {

size_t countOccurrences(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
    return n;
}

} // namespace

PatchGrid Model::patchGrid() const {
    if (!config_.hasVision) return {};
    return {config_.vision.gridSize(), config_.vision.gridSize()};
}

ImageLayout Model::imageLayout(const PreprocessedImage&) const {
    ImageLayout layout;
    layout.tokens = config_.imageSeqLength();
    const PatchGrid grid = patchGrid();
    layout.gridHeight = grid.height;
    layout.gridWidth = grid.width;
    // LLaVA's "full" strategy keeps CLS in front of the grid.
    layout.gridOffset = layout.tokens - config_.vision.numPatches();
    return layout;
}

namespace {

// The span fields an image's layout gives (start left to the prompt).
VisualSpan spanOfLayout(const ImageLayout& layout, const PreprocessedImage& image) {
    VisualSpan span;
    span.length = layout.views.empty() ? int64_t(layout.gridHeight) * layout.gridWidth : layout.tokens - layout.gridOffset;
    span.gridHeight = layout.gridHeight;
    span.gridWidth = layout.gridWidth;
    span.views = layout.views;
    if (!layout.views.empty()) {
        span.pictureWidth = image.sourceWidth;
        span.pictureHeight = image.sourceHeight;
    }
    return span;
}

// buildPrompt's work for an image already through the model's processor (or none).
Prompt promptFrom(const Model& model, const std::string& text, bool raw, const PromptImage* image) {
    const ModelConfig& config = model.config();
    Prompt p;
    p.hasImage = image != nullptr;
    const std::string tag = model.imageTag();
    if (!raw && countOccurrences(text, tag) > 0)
        throw Error("prompt: the question contains \"" + tag + "\"; the template inserts it already", {Remedy::RawPrompt});
    p.text = raw ? text : model.applyTemplate(text, p.hasImage);
    const size_t tags = countOccurrences(p.text, tag);
    if (p.hasImage && tags != 1)
        throw Error("prompt: expected exactly one \"" + tag + "\" with an image, found " + std::to_string(tags));
    if (!p.hasImage && tags != 0)
        throw Error("prompt: contains \"" + tag + "\" but no image was given");

    ImageLayout layout;
    if (p.hasImage) {
        p.image = image->processed;
        p.pixels = image->pixels;
        layout = model.imageLayout(*p.image);
    }
    // Tokenize with the single placeholder, then expand it: the same ids the processors get by
    // repeating the "<image>" string, because added tokens split the text either way.
    const std::vector<int64_t> compact = model.tokenizer().encode(p.text, true);
    for (int64_t id : compact) {
        if (p.hasImage && id == config.imageTokenIndex) {
            p.span.start = static_cast<int64_t>(p.ids.size()) + layout.gridOffset;
            p.ids.insert(p.ids.end(), layout.tokens, config.imageTokenIndex);
        } else {
            p.ids.push_back(id);
        }
    }
    if (p.hasImage) {
        const int64_t start = p.span.start;
        p.span = spanOfLayout(layout, *p.image);
        p.span.start = start;
    }
    model.assignPositions(p);
    if (p.ids.size() < 2) throw Error("prompt: needs at least two tokens (got " + std::to_string(p.ids.size()) + ")");
    // Without an image, steering addresses the prompt's tokens: all but the last, which is what
    // the snapshot holds (decoding feeds the last token again, against the edited cache).
    if (!p.hasImage) p.span = VisualSpan::tokenStrip(static_cast<int64_t>(p.ids.size()) - 1);
    const int64_t context = config.text.maxPositionEmbeddings;
    if (static_cast<int64_t>(p.ids.size()) >= context)
        throw Error("prompt: " + std::to_string(p.ids.size()) + " tokens do not fit the model's context of " +
                    std::to_string(context) + " tokens (max_position_embeddings), leaving no room to answer");
    return p;
}

} // namespace

PromptImage prepareImage(const Model& model, const ImageU8& image) {
    if (!model.config().hasVision)
        throw Error("model " + model.config().name + " is text-only (model_type " + model.config().modelType + "): it cannot take an image");
    PreprocessedImage processed = model.preprocessImage(image);
    PromptImage out;
    const bool viewed = processed.views > 1;   // [views, 3, S, S] (LLaVA-NeXT) or [1, 3, H, W]
    const int64_t n = viewed ? processed.views : 1;
    const int64_t h = viewed ? processed.viewSize : processed.cropped.height, w = viewed ? processed.viewSize : processed.cropped.width;
    if (int64_t(processed.pixels.size()) != n * 3 * h * w)
        throw Error("image processor of " + model.familyName() + ": " + std::to_string(processed.pixels.size()) + " pixel values, expected " +
                    std::to_string(n * 3 * h * w));
    out.pixels = at::from_blob(processed.pixels.data(), {n, 3, h, w}, at::TensorOptions().dtype(at::kFloat)).clone();
    processed.pixels = {};
    out.processed = std::make_shared<const PreprocessedImage>(std::move(processed));
    return out;
}

VisualSpan imageSpan(const Model& model, const ImageU8& image) {
    const PreprocessedImage processed = model.preprocessImage(image);
    VisualSpan span = spanOfLayout(model.imageLayout(processed), processed);
    span.start = 0;
    return span;
}

Prompt buildPrompt(const Model& model, const std::string& text, bool raw, const ImageU8* image) {
    if (!image) return promptFrom(model, text, raw, nullptr);
    const PromptImage prepared = prepareImage(model, *image);
    return promptFrom(model, text, raw, &prepared);
}

Prompt buildImagePrompt(const Model& model, const std::string& text, bool raw, const PromptImage& image) {
    return promptFrom(model, text, raw, &image);
}

at::Tensor Model::embedPrompt(const std::vector<int64_t>& ids, const at::Tensor& imageFeatures) const {
    at::Tensor idTensor = at::tensor(ids, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
    at::Tensor embeds = decoder_->embed(idTensor);
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

std::string Model::describe() const {
    std::ostringstream o;
    const TextConfig& t = config_.text;
    o << "model        " << config_.name << "  (" << directory_ << ")\n";
    o << "type         " << config_.modelType << " (" << familyName() << ")\n";
    o << "config hash  " << config_.configHash << "  (what vector files made for this model record)\n";
    if (config_.hasVision) {
        o << describeVision();
        o << "image tokens " << (config_.maxImageTokens > 0 ? "up to " : "") << config_.imageSeqLength() << " per image (id "
          << config_.imageTokenIndex << ")\n";
    }
    // The template on one line: a newline in it shows as \n (PaliGemma's ends with one).
    std::string prompt;
    try {
        for (char c : applyTemplate("{question}", config_.hasVision)) prompt += c == '\n' ? std::string("\\n") : std::string(1, c);
    } catch (const Error&) {
        prompt = "(raw prompts only)";
    }
    if (const std::string tmpl = describeTemplate(); !tmpl.empty()) o << "template     " << tmpl << "\n";
    o << "prompt       " << prompt << "\n";
    o << "text         hidden " << t.hiddenSize << ", MLP " << t.intermediateSize << " (" << (t.hiddenAct == "silu" ? "SwiGLU" : "GeGLU")
      << "), " << t.numLayers << " layers, " << t.numHeads << " heads / " << t.numKvHeads << " KV heads, head_dim " << t.headDim
      << ", vocab " << t.vocabSize << ", context " << t.maxPositionEmbeddings << ", rope_theta " << t.ropeTheta;
    if (!t.ropeScaling.type.empty()) o << " (" << t.ropeScaling.type << " scaling x" << t.ropeScaling.factor << ")";
    o << ", rms_norm_eps " << t.rmsNormEps << (t.normAddsOne ? " (1 + w)" : "") << (t.tieWordEmbeddings ? ", tied lm_head" : "") << "\n";
    o << "prefill      " << (promptAttention() == PromptAttention::Causal ? "causal" : "bidirectional over the prompt (prefix-LM)")
      << "; positions " << positionRule() << "\n";
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
