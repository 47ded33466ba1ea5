#include "models/paligemma/PaliGemmaConfig.h"

#include "io/ConfigJson.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace kvsteer {

using namespace configjson;
namespace fs = std::filesystem;

namespace {

// GemmaConfig's defaults (what a text_config dict is filled in with).
TextConfig gemmaDefaults() {
    TextConfig t;
    t.vocabSize = 256000;
    t.hiddenSize = 3072;
    t.intermediateSize = 24576;
    t.numLayers = 28;
    t.numHeads = 16;
    t.numKvHeads = 16;
    t.headDim = 256;
    t.hiddenAct = "gelu_pytorch_tanh";
    t.rmsNormEps = 1e-6;
    t.ropeTheta = 10000.0;
    t.maxPositionEmbeddings = 8192;
    t.tieWordEmbeddings = true;
    t.bosTokenId = 2;
    t.eosTokenIds = {1};
    return t;
}

// What PaliGemmaConfig builds when text_config is absent (PaliGemma-3B's decoder).
json paliGemmaDefaultText() {
    return {{"hidden_size", 2048}, {"num_hidden_layers", 18}, {"intermediate_size", 16384},
            {"num_attention_heads", 8}, {"num_key_value_heads", 1}, {"vocab_size", 257152}};
}

// SiglipVisionConfig's defaults, and what PaliGemmaConfig builds when vision_config is absent.
VisionConfig siglipDefaults() {
    VisionConfig v;
    v.hiddenSize = 768;
    v.intermediateSize = 3072;
    v.numLayers = 12;
    v.numHeads = 12;
    v.imageSize = 224;
    v.patchSize = 16;
    v.hiddenAct = "gelu_pytorch_tanh";
    v.layerNormEps = 1e-6;
    return v;
}

json paliGemmaDefaultVision() {
    return {{"intermediate_size", 4096}, {"hidden_size", 1152}, {"patch_size", 14}, {"image_size", 224},
            {"num_hidden_layers", 27}, {"num_attention_heads", 16}};
}

TextConfig parseGemma(const json& j, const std::string& where) {
    std::string type = "gemma";
    readKey(j, "model_type", type, where);
    requireOneOf(type, {"gemma"}, "text_config.model_type", where);
    TextConfig t = parseText(j, where, gemmaDefaults());
    // Gemma's MLP reads hidden_activation (hidden_act is a leftover); unset means the tanh GELU.
    t.hiddenAct = "gelu_pytorch_tanh";
    readKey(j, "hidden_activation", t.hiddenAct, where);
    requireOneOf(t.hiddenAct, {"gelu_pytorch_tanh"}, "text_config.hidden_activation", where);
    t.normAddsOne = true;
    t.scaleEmbeddings = true;
    return t;
}

// Everything the numbers depend on, in one canonical form: what steering files are tied to.
std::string canonicalJson(const PaliGemmaConfig& p) {
    const ModelConfig& c = p.model;
    const TextConfig& t = c.text;
    const VisionConfig& v = c.vision;
    json j = {{"model_type", "paligemma"},
              {"image_token_index", c.imageTokenIndex},
              {"feature_scale_hidden", p.featureScaleHidden},
              {"text", {t.vocabSize, t.hiddenSize, t.intermediateSize, t.numLayers, t.numHeads, t.numKvHeads, t.headDim, t.hiddenAct,
                        t.rmsNormEps, t.ropeTheta, t.maxPositionEmbeddings, t.tieWordEmbeddings}},
              {"vision", {v.hiddenSize, v.intermediateSize, v.numLayers, v.numHeads, v.imageSize, v.patchSize, v.hiddenAct, v.layerNormEps}}};
    return j.dump();
}

} // namespace

PaliGemmaConfig parsePaliGemmaConfig(const std::string& text, const std::string& where) {
    const json j = parseObject(text, where);
    PaliGemmaConfig p;
    ModelConfig& c = p.model;
    readKey(j, "_name_or_path", c.name, where);
    readKey(j, "model_type", c.modelType, where);
    if (c.modelType != "paligemma") throw Error(where + ": model_type '" + c.modelType + "' is not a PaliGemma config");
    c.hasVision = true;
    c.imageTokenIndex = 256000;
    readKey(j, "image_token_index", c.imageTokenIndex, where);
    readKey(j, "hidden_size", p.featureScaleHidden, where);
    requirePositive(p.featureScaleHidden, "hidden_size", where);

    const json& textJson = subObject(j, "text_config", where);
    c.text = parseGemma(textJson.empty() ? paliGemmaDefaultText() : textJson, where + " (text_config)");
    const json& visionJson = subObject(j, "vision_config", where);
    c.vision = parseVision(visionJson.empty() ? paliGemmaDefaultVision() : visionJson, where, siglipDefaults());
    requireOneOf(c.vision.hiddenAct, {"gelu_pytorch_tanh"}, "vision_config.hidden_act", where);
    c.visionFeatureLayer = -1;   // SigLIP's last layer, after post_layernorm
    c.visionFeatureSelectStrategy = "default";

    // The projector maps vision hidden -> projection_dim, which must be the decoder's width.
    int64_t projectionDim = 2048;
    readKey(j, "projection_dim", projectionDim, where);
    if (projectionDim != c.text.hiddenSize)
        throw Error(where + ": projection_dim " + std::to_string(projectionDim) + " contradicts text_config.hidden_size " +
                    std::to_string(c.text.hiddenSize) + " (the projector writes image features into the decoder's rows)");
    const int64_t patches = c.vision.numPatches();
    for (const auto& [sub, name] : {std::pair{&textJson, "text_config"}, std::pair{&visionJson, "vision_config"}}) {
        int64_t stated = patches;
        readKey(*sub, "num_image_tokens", stated, where + " (" + name + ")");
        if (stated != patches)
            throw Error(where + ": " + name + ".num_image_tokens " + std::to_string(stated) + " contradicts vision_config (image_size " +
                        std::to_string(c.vision.imageSize) + " / patch_size " + std::to_string(c.vision.patchSize) + " gives " +
                        std::to_string(patches) + ")");
    }
    if (c.imageTokenIndex < 0 || c.imageTokenIndex >= c.text.vocabSize)
        throw Error(where + ": image_token_index " + std::to_string(c.imageTokenIndex) + " is outside the vocabulary (vocab_size " +
                    std::to_string(c.text.vocabSize) + ")");
    c.configHash = semanticHash(canonicalJson(p));
    return p;
}

ClipPreprocessConfig siglipPreprocessConfig(const std::string& directory, int imageSize) {
    const fs::path path = fs::path(directory) / "preprocessor_config.json";
    json j = json::object();
    if (fs::exists(path)) {
        std::ifstream in(path, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        j = parseObject(ss.str(), path.string());
    }
    // SiglipImageProcessor's defaults where the file is silent; it never crops.
    if (!j.contains("size")) j["size"] = {{"height", imageSize}, {"width", imageSize}};
    if (!j.contains("image_mean")) j["image_mean"] = {0.5, 0.5, 0.5};
    if (!j.contains("image_std")) j["image_std"] = {0.5, 0.5, 0.5};
    if (j.contains("do_center_crop") && j["do_center_crop"] == true)
        throw Error(path.string() + ": do_center_crop true is not what SiglipImageProcessor does (expected false or absent)");
    j["do_center_crop"] = false;
    ClipPreprocessConfig cfg = ClipPreprocessConfig::fromJsonString(j.dump(), path.string());
    if (!cfg.doResize || cfg.shortestEdge != 0 || cfg.resizeWidth != imageSize || cfg.resizeHeight != imageSize)
        throw Error(path.string() + ": size must be {\"height\": " + std::to_string(imageSize) + ", \"width\": " + std::to_string(imageSize) +
                    "} with do_resize true (the vision tower's image_size)");
    cfg.cropWidth = cfg.cropHeight = imageSize;
    return cfg;
}

} // namespace kvsteer
