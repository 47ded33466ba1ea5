#include "models/llava/LlavaConfig.h"

#include "io/ConfigJson.h"

#include <algorithm>

namespace kvsteer {

using namespace configjson;

namespace {

// LLaVA-1.5's vision tower when config.json has no vision_config (LlavaConfig's default).
VisionConfig llavaDefaultVision() {
    VisionConfig v;
    v.hiddenSize = 1024;
    v.intermediateSize = 4096;
    v.numLayers = 24;
    v.numHeads = 16;
    v.imageSize = 336;
    v.patchSize = 14;
    return v;
}

// LlamaConfig's defaults: num_key_value_heads and head_dim follow the attention heads.
TextConfig llamaDefaults() {
    TextConfig t;
    t.numKvHeads = 0;
    t.headDim = 0;
    return t;
}

// rope_scaling: null, or Llama-3's {"rope_type": "llama3", ...} (older files say "type").
RopeScaling parseRopeScaling(const json& j, const std::string& where) {
    RopeScaling r;
    const auto it = j.find("rope_scaling");
    if (it == j.end() || it->is_null()) return r;
    if (!it->is_object()) throw Error(where + ": rope_scaling must be null or an object, got " + it->dump());
    readKey(*it, "type", r.type, where);
    readKey(*it, "rope_type", r.type, where);
    if (r.type == "default") return RopeScaling();
    if (r.type != "llama3")
        throw Error(where + ": rope_scaling type '" + r.type + "' is not supported (expected null or \"llama3\", as Llama-3.1 has)");
    for (const char* key : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
        if (!it->contains(key)) throw Error(where + ": rope_scaling." + key + " is missing (a llama3 rope_scaling needs it)");
    readKey(*it, "factor", r.factor, where);
    readKey(*it, "low_freq_factor", r.lowFreqFactor, where);
    readKey(*it, "high_freq_factor", r.highFreqFactor, where);
    readKey(*it, "original_max_position_embeddings", r.originalMaxPositions, where);
    if (!(r.factor >= 1) || !(r.lowFreqFactor > 0) || !(r.highFreqFactor > r.lowFreqFactor) || r.originalMaxPositions <= 0)
        throw Error(where + ": rope_scaling " + it->dump() +
                    " is out of range (expected factor >= 1, 0 < low_freq_factor < high_freq_factor, original_max_position_embeddings > 0)");
    return r;
}

// MistralConfig's defaults (llava-v1.6-mistral's trimmed text_config leans on them): the Llama
// decoder with 8 KV heads, a 14336 MLP and a long context.
TextConfig mistralDefaults() {
    TextConfig t;
    t.intermediateSize = 14336;
    t.numKvHeads = 8;
    t.headDim = 0;
    t.maxPositionEmbeddings = 4096 * 32;
    return t;
}

TextConfig parseLlama(const json& j, const std::string& where) {
    json rest = j;
    const RopeScaling scaling = parseRopeScaling(j, where);
    rest.erase("rope_scaling");   // handled here; the shared reader refuses rope scaling
    std::string type = "llama";
    readKey(j, "model_type", type, where);
    requireOneOf(type, {"llama", "mistral"}, "model_type", where);
    TextConfig t = parseText(rest, where, type == "mistral" ? mistralDefaults() : llamaDefaults());
    t.ropeScaling = scaling;
    requireOneOf(t.hiddenAct, {"silu"}, "hidden_act", where);
    if (type == "mistral") {
        // Mistral's sliding window (default 4096; llava-v1.6-mistral sets null) only matters past
        // its length: the context is capped there, so every prompt sees plain causal attention.
        int64_t window = 4096;
        const auto it = j.find("sliding_window");
        if (it != j.end() && it->is_null()) window = 0;   // no window
        else readKey(j, "sliding_window", window, where);
        if (window > 0) t.maxPositionEmbeddings = std::min(t.maxPositionEmbeddings, window);
    }
    return t;
}

} // namespace

ModelConfig parseLlavaConfig(const std::string& text, const std::string& where) {
    const json j = parseObject(text, where);
    ModelConfig c;
    readKey(j, "_name_or_path", c.name, where);
    readKey(j, "model_type", c.modelType, where);

    if (c.modelType == "llama") {
        c.text = parseLlama(j, where);
        c.hasVision = false;
        c.configHash = semanticHash(c);
        return c;
    }
    if (c.modelType != "llava" && c.modelType != "llava_next")
        throw Error(where + ": model_type '" + c.modelType + "' is not a LLaVA or Llama config");

    c.hasVision = true;
    readKey(j, "image_token_index", c.imageTokenIndex, where);
    readKey(j, "vision_feature_layer", c.visionFeatureLayer, where);
    readKey(j, "vision_feature_select_strategy", c.visionFeatureSelectStrategy, where);
    readKey(j, "projector_hidden_act", c.projectorHiddenAct, where);
    c.vision = j.contains("vision_config") && !j["vision_config"].is_null() ? parseVision(j["vision_config"], where, VisionConfig{})
                                                                             : llavaDefaultVision();
    requireOneOf(c.vision.hiddenAct, {"quick_gelu", "gelu"}, "vision_config.hidden_act", where);
    c.text = parseLlama(subObject(j, "text_config", where), where + " (text_config)");
    requireOneOf(c.visionFeatureSelectStrategy, {"default", "full"}, "vision_feature_select_strategy", where);
    requireOneOf(c.projectorHiddenAct, {"gelu"}, "projector_hidden_act", where);
    const int needed = c.visionLayersNeeded();
    if (needed < 0 || needed > c.vision.numLayers)
        throw Error(where + ": vision_feature_layer " + std::to_string(c.visionFeatureLayer) + " is out of range for " +
                    std::to_string(c.vision.numLayers) + " vision layers");
    if (c.imageTokenIndex < 0 || c.imageTokenIndex >= c.text.vocabSize)
        throw Error(where + ": image_token_index " + std::to_string(c.imageTokenIndex) + " is outside the vocabulary");
    c.configHash = semanticHash(c);
    return c;
}

} // namespace kvsteer
