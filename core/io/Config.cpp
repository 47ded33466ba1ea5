#include "io/Config.h"
#include "io/ConfigJson.h"

#include "Error.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace kvsteer {

using nlohmann::json;
using namespace configjson;

namespace configjson {

json parseObject(const std::string& text, const std::string& where) {
    json j;
    try {
        j = json::parse(text);
    } catch (const std::exception& e) {
        throw Error(where + ": not valid JSON (" + e.what() + ")");
    }
    if (!j.is_object()) throw Error(where + ": expected a JSON object");
    return j;
}

void requirePositive(int64_t value, const char* key, const std::string& where) {
    if (value <= 0) throw Error(where + ": field '" + std::string(key) + "' must be a positive integer (got " + std::to_string(value) + ")");
}

void requireOneOf(const std::string& value, std::initializer_list<const char*> allowed, const char* key, const std::string& where) {
    std::string list;
    for (const char* a : allowed) {
        if (value == a) return;
        list += (list.empty() ? "" : " or ") + std::string(a);
    }
    throw Error(where + ": " + key + " '" + value + "' is not supported (expected " + list + ")");
}

const json& subObject(const json& j, const char* key, const std::string& where) {
    static const json empty = json::object();
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return empty;
    if (!it->is_object()) throw Error(where + ": " + key + " must be an object");
    return *it;
}

VisionConfig parseVision(const json& j, const std::string& where, VisionConfig v) {
    if (!j.is_object()) throw Error(where + ": vision_config must be an object");
    const std::string w = where + " (vision_config)";   // errors say which sub-config holds the field
    readKey(j, "hidden_size", v.hiddenSize, w);
    readKey(j, "intermediate_size", v.intermediateSize, w);
    readKey(j, "num_hidden_layers", v.numLayers, w);
    readKey(j, "num_attention_heads", v.numHeads, w);
    readKey(j, "num_channels", v.numChannels, w);
    readKey(j, "image_size", v.imageSize, w);
    readKey(j, "patch_size", v.patchSize, w);
    readKey(j, "hidden_act", v.hiddenAct, w);
    readKey(j, "layer_norm_eps", v.layerNormEps, w);
    requirePositive(v.hiddenSize, "hidden_size", w);
    requirePositive(v.intermediateSize, "intermediate_size", w);
    requirePositive(v.numLayers, "num_hidden_layers", w);
    requirePositive(v.numHeads, "num_attention_heads", w);
    requirePositive(v.imageSize, "image_size", w);
    requirePositive(v.patchSize, "patch_size", w);
    if (v.numChannels != 3) throw Error(w + ": num_channels must be 3 (RGB)");
    if (v.hiddenSize % v.numHeads != 0) throw Error(w + ": hidden_size must be divisible by num_attention_heads");
    if (v.imageSize % v.patchSize != 0) throw Error(w + ": image_size must be a multiple of patch_size");
    return v;
}

// `defaults` as the family's config class has them; numKvHeads 0 means "= num_attention_heads"
// and headDim 0 "= hidden_size / num_attention_heads" (Llama's rules; Gemma has head_dim 256).
TextConfig parseText(const json& j, const std::string& where, TextConfig t) {
    if (!j.is_object()) throw Error(where + ": text_config must be an object");
    readKey(j, "vocab_size", t.vocabSize, where);
    readKey(j, "hidden_size", t.hiddenSize, where);
    readKey(j, "intermediate_size", t.intermediateSize, where);
    readKey(j, "num_hidden_layers", t.numLayers, where);
    readKey(j, "num_attention_heads", t.numHeads, where);
    readKey(j, "num_key_value_heads", t.numKvHeads, where);
    requirePositive(t.hiddenSize, "hidden_size", where);
    requirePositive(t.numHeads, "num_attention_heads", where);
    if (t.numKvHeads == 0) t.numKvHeads = t.numHeads;
    requirePositive(t.numKvHeads, "num_key_value_heads", where);
    requirePositive(t.numLayers, "num_hidden_layers", where);
    requirePositive(t.intermediateSize, "intermediate_size", where);
    readKey(j, "head_dim", t.headDim, where);
    if (t.headDim == 0) t.headDim = t.hiddenSize / t.numHeads;
    readKey(j, "hidden_act", t.hiddenAct, where);
    readKey(j, "rms_norm_eps", t.rmsNormEps, where);
    readKey(j, "rope_theta", t.ropeTheta, where);
    readKey(j, "max_position_embeddings", t.maxPositionEmbeddings, where);
    readKey(j, "attention_bias", t.attentionBias, where);
    readKey(j, "mlp_bias", t.mlpBias, where);
    readKey(j, "tie_word_embeddings", t.tieWordEmbeddings, where);
    readKey(j, "bos_token_id", t.bosTokenId, where);
    if (auto it = j.find("eos_token_id"); it != j.end() && !it->is_null()) {
        if (it->is_number_integer()) t.eosTokenIds = {it->get<int64_t>()};
        else if (it->is_array()) readKey(j, "eos_token_id", t.eosTokenIds, where);
        else throw Error(where + ": field 'eos_token_id' must be an integer or a list of integers");
    }
    if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null())
        throw Error(where + ": rope_scaling is not supported yet (expected null)");
    requirePositive(t.headDim, "head_dim", where);
    requirePositive(t.maxPositionEmbeddings, "max_position_embeddings", where);
    if (t.vocabSize <= 0) throw Error(where + ": field 'vocab_size' must be positive");
    if (t.numHeads % t.numKvHeads != 0)
        throw Error(where + ": num_attention_heads (" + std::to_string(t.numHeads) + ") must be a multiple of num_key_value_heads (" +
                    std::to_string(t.numKvHeads) + ")");
    if (t.headDim % 2 != 0) throw Error(where + ": head_dim must be even (rotary embedding)");
    if (!(t.rmsNormEps > 0)) throw Error(where + ": field 'rms_norm_eps' must be positive");
    if (!(t.ropeTheta > 0)) throw Error(where + ": field 'rope_theta' must be positive");
    if (t.mlpBias) throw Error(where + ": mlp_bias true is not supported (expected false)");
    return t;
}

} // namespace configjson

std::string readConfigJson(const std::string& directory) {
    const std::string path = directory + "/config.json";
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("config " + path + ": cannot open (missing config.json?)");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string fnv1aHex(const std::string& bytes) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 1099511628211ull;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

// The hash covers what the numbers mean, not how config.json was written: a trimmed or re-saved
// config of the same model hashes the same, any architectural change does not.
std::string semanticHash(const ModelConfig& config) {
    ModelConfig anonymous = config;
    anonymous.name.clear();
    return fnv1aHex(anonymous.toJsonText());
}

std::string semanticHash(const std::string& canonicalJson) { return fnv1aHex(canonicalJson); }

int ModelConfig::imageSeqLength() const {
    if (!hasVision) return 0;
    if (maxImageTokens > 0) return maxImageTokens;
    return vision.numPatches() + (visionFeatureSelectStrategy == "full" ? 1 : 0);
}

int ModelConfig::visionLayersNeeded() const {
    // hidden_states has numLayers + 1 entries (the embeddings first); a negative index counts from the end.
    const int n = vision.numLayers;
    return visionFeatureLayer < 0 ? n + 1 + visionFeatureLayer : visionFeatureLayer;
}

std::string ModelConfig::toJsonText() const {
    json text = {
        {"model_type", "llama"},
        {"vocab_size", this->text.vocabSize},
        {"hidden_size", this->text.hiddenSize},
        {"intermediate_size", this->text.intermediateSize},
        {"num_hidden_layers", this->text.numLayers},
        {"num_attention_heads", this->text.numHeads},
        {"num_key_value_heads", this->text.numKvHeads},
        {"head_dim", this->text.headDim},
        {"hidden_act", this->text.hiddenAct},
        {"rms_norm_eps", this->text.rmsNormEps},
        {"rope_theta", this->text.ropeTheta},
        {"max_position_embeddings", this->text.maxPositionEmbeddings},
        {"tie_word_embeddings", this->text.tieWordEmbeddings},
        {"bos_token_id", this->text.bosTokenId},
        {"eos_token_id", this->text.eosTokenIds.size() == 1 ? json(this->text.eosTokenIds[0]) : json(this->text.eosTokenIds)},
    };
    const RopeScaling& r = this->text.ropeScaling;
    if (!r.type.empty())   // only when set: the hash of every config without it stays what it was
        text["rope_scaling"] = {{"rope_type", r.type},
                                {"factor", r.factor},
                                {"low_freq_factor", r.lowFreqFactor},
                                {"high_freq_factor", r.highFreqFactor},
                                {"original_max_position_embeddings", r.originalMaxPositions}};
    if (!hasVision) {
        if (!name.empty()) text["_name_or_path"] = name;
        return text.dump(2);
    }
    json j = {
        {"_name_or_path", name},
        {"architectures", {"LlavaForConditionalGeneration"}},
        {"model_type", "llava"},
        {"image_token_index", imageTokenIndex},
        {"ignore_index", -100},
        {"pad_token_id", imageTokenIndex + 1},
        {"image_seq_length", imageSeqLength()},
        {"projector_hidden_act", projectorHiddenAct},
        {"vision_feature_layer", visionFeatureLayer},
        {"vision_feature_select_strategy", visionFeatureSelectStrategy},
        {"text_config", text},
        {"vision_config",
         {{"model_type", "clip_vision_model"},
          {"hidden_size", vision.hiddenSize},
          {"intermediate_size", vision.intermediateSize},
          {"num_hidden_layers", vision.numLayers},
          {"num_attention_heads", vision.numHeads},
          {"num_channels", vision.numChannels},
          {"image_size", vision.imageSize},
          {"patch_size", vision.patchSize},
          {"hidden_act", vision.hiddenAct},
          {"layer_norm_eps", vision.layerNormEps}}},
    };
    return j.dump(2);
}

} // namespace kvsteer
