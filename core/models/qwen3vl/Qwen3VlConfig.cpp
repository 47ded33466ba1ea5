#include "models/qwen3vl/Qwen3VlConfig.h"

#include "Error.h"
#include "io/ConfigJson.h"

#include <cmath>

namespace kvsteer {

using namespace configjson;

namespace {

// Qwen3VLTextConfig's defaults (Qwen3-VL-4B-like sizes; head_dim 128 whatever hidden / heads).
TextConfig qwen3TextDefaults() {
    TextConfig t;
    t.vocabSize = 151936;
    t.hiddenSize = 4096;
    t.intermediateSize = 22016;
    t.numLayers = 32;
    t.numHeads = 32;
    t.numKvHeads = 32;
    t.headDim = 128;
    t.hiddenAct = "silu";
    t.rmsNormEps = 1e-6;
    t.ropeTheta = 500000.0;
    t.maxPositionEmbeddings = 128000;
    t.tieWordEmbeddings = false;
    t.bosTokenId = 151643;
    t.eosTokenIds = {151645};
    return t;
}

// The RoPE object of either dialect: rope_parameters (theta inside) or rope_scaling (theta beside
// it, read by parseText). Returns the M-RoPE sections and removes the object from `text`.
std::vector<int> readRope(json& text, const std::string& where, double& ropeTheta) {
    const char* key = text.contains("rope_parameters") && !text["rope_parameters"].is_null() ? "rope_parameters" : "rope_scaling";
    std::vector<int> sections{24, 20, 20};
    auto it = text.find(key);
    if (it == text.end() || it->is_null()) return sections;
    const std::string w = where + " (" + key + ")";
    if (!it->is_object()) throw Error(w + ": must be an object");
    readKey(*it, "mrope_section", sections, w);
    readKey(*it, "rope_theta", ropeTheta, w);
    bool interleaved = true;   // transformers interleaves qwen3_vl's axes whatever this says
    readKey(*it, "mrope_interleaved", interleaved, w);
    std::string type = "default", ropeType = "default";
    readKey(*it, "type", type, w);
    readKey(*it, "rope_type", ropeType, w);
    requireOneOf(type, {"default", "mrope"}, "type", w);
    requireOneOf(ropeType, {"default", "mrope"}, "rope_type", w);   // no scaled variants
    if (sections.size() != 3) throw Error(w + ": mrope_section must list 3 sections (t, h, w), got " + std::to_string(sections.size()));
    for (int s : sections) requirePositive(s, "mrope_section", w);
    text.erase(key);
    return sections;
}

Qwen3VisionConfig parseVisionConfig(const json& j, const std::string& where) {
    const std::string w = where + " (vision_config)";
    if (!j.is_object()) throw Error(w + ": must be an object");
    Qwen3VisionConfig v;
    readKey(j, "depth", v.depth, w);
    readKey(j, "hidden_size", v.hiddenSize, w);
    readKey(j, "intermediate_size", v.intermediateSize, w);
    readKey(j, "num_heads", v.numHeads, w);
    readKey(j, "in_channels", v.inChannels, w);
    readKey(j, "patch_size", v.patchSize, w);
    readKey(j, "temporal_patch_size", v.temporalPatchSize, w);
    readKey(j, "spatial_merge_size", v.spatialMergeSize, w);
    readKey(j, "out_hidden_size", v.outHiddenSize, w);
    readKey(j, "num_position_embeddings", v.numPositionEmbeddings, w);
    readKey(j, "deepstack_visual_indexes", v.deepstackVisualIndexes, w);
    readKey(j, "hidden_act", v.hiddenAct, w);
    for (auto [value, name] : {std::pair{v.depth, "depth"}, {v.hiddenSize, "hidden_size"}, {v.intermediateSize, "intermediate_size"},
                               {v.numHeads, "num_heads"}, {v.patchSize, "patch_size"}, {v.temporalPatchSize, "temporal_patch_size"},
                               {v.spatialMergeSize, "spatial_merge_size"}, {v.outHiddenSize, "out_hidden_size"},
                               {v.numPositionEmbeddings, "num_position_embeddings"}})
        requirePositive(value, name, w);
    if (v.inChannels != 3) throw Error(w + ": in_channels must be 3 (RGB), got " + std::to_string(v.inChannels));
    requireOneOf(v.hiddenAct, {"gelu_pytorch_tanh", "gelu"}, "hidden_act", w);
    if (v.hiddenSize % v.numHeads != 0 || v.headDim() % 4 != 0)
        throw Error(w + ": hidden_size / num_heads = " + std::to_string(v.hiddenSize) + " / " + std::to_string(v.numHeads) +
                    " must be a whole head_dim that is a multiple of 4 (the 2D rotary embedding)");
    if (v.positionSide() * v.positionSide() != v.numPositionEmbeddings || v.positionSide() < 2)
        throw Error(w + ": num_position_embeddings " + std::to_string(v.numPositionEmbeddings) +
                    " must be a square of at least 2 x 2 (the learned position table is side x side)");
    for (int b : v.deepstackVisualIndexes)
        if (b < 0 || b >= v.depth)
            throw Error(w + ": deepstack_visual_indexes lists block " + std::to_string(b) + "; the tower has blocks 0.." +
                        std::to_string(v.depth - 1));
    return v;
}

std::string canonicalJson(const Qwen3VlConfig& q) {
    const ModelConfig& c = q.model;
    const TextConfig& t = c.text;
    const Qwen3VisionConfig& v = q.vision;
    const json j = {{"model_type", c.modelType},
                    {"text", {t.vocabSize, t.hiddenSize, t.intermediateSize, t.numLayers, t.numHeads, t.numKvHeads, t.headDim,
                              t.rmsNormEps, t.ropeTheta, t.maxPositionEmbeddings, t.tieWordEmbeddings, t.attentionBias, t.mropeSection}},
                    {"vision", {v.depth, v.hiddenSize, v.intermediateSize, v.numHeads, v.patchSize, v.temporalPatchSize,
                                v.spatialMergeSize, v.outHiddenSize, v.numPositionEmbeddings, v.deepstackVisualIndexes, v.hiddenAct,
                                c.imageTokenIndex}}};
    return j.dump();
}

} // namespace

int Qwen3VisionConfig::positionSide() const { return static_cast<int>(std::lround(std::sqrt(double(numPositionEmbeddings)))); }

Qwen3VlConfig parseQwen3VlConfig(const std::string& jsonText, const std::string& where) {
    const json top = parseObject(jsonText, where);
    Qwen3VlConfig q;
    ModelConfig& c = q.model;
    readKey(top, "_name_or_path", c.name, where);
    readKey(top, "model_type", c.modelType, where);
    requireOneOf(c.modelType, {"qwen3_vl"}, "model_type", where);
    if (!top.contains("text_config") && top.contains("hidden_size"))
        throw Error(where + ": hidden_size is at the top level; a qwen3_vl config keeps the decoder's fields in text_config "
                            "(transformers would ignore them and build its default decoder)");

    const std::string textWhere = where + " (text_config)";
    json text = subObject(top, "text_config", where);
    if (!text.is_object()) throw Error(textWhere + ": must be an object");
    TextConfig defaults = qwen3TextDefaults();
    readKey(text, "rope_theta", defaults.ropeTheta, textWhere);
    c.text.mropeSection = readRope(text, textWhere, defaults.ropeTheta);
    text.erase("rope_theta");
    text.erase("tie_word_embeddings");   // only the top level's counts
    const std::vector<int> sections = c.text.mropeSection;
    c.text = parseText(text, textWhere, defaults);
    c.text.mropeSection = sections;
    c.text.mropeInterleaved = true;
    c.text.qkNorm = true;
    readKey(top, "tie_word_embeddings", c.text.tieWordEmbeddings, where);
    requireOneOf(c.text.hiddenAct, {"silu"}, "hidden_act", textWhere);
    c.hasVision = true;
    q.vision = parseVisionConfig(subObject(top, "vision_config", where), where);
    if (q.vision.outHiddenSize != c.text.hiddenSize)
        throw Error(where + ": vision_config.out_hidden_size " + std::to_string(q.vision.outHiddenSize) + " contradicts text_config.hidden_size " +
                    std::to_string(c.text.hiddenSize) + " (the mergers write image features into the decoder's rows)");
    if (int(q.vision.deepstackVisualIndexes.size()) > c.text.numLayers)
        throw Error(where + ": " + std::to_string(q.vision.deepstackVisualIndexes.size()) +
                    " DeepStack features need as many decoder layers to follow; the decoder has " + std::to_string(c.text.numLayers));
    c.imageTokenIndex = 151655;
    readKey(top, "image_token_id", c.imageTokenIndex, where);
    readKey(top, "vision_start_token_id", q.visionStartTokenId, where);
    readKey(top, "video_token_id", q.videoTokenId, where);
    if (c.imageTokenIndex < 0 || c.imageTokenIndex >= c.text.vocabSize)
        throw Error(where + ": image_token_id " + std::to_string(c.imageTokenIndex) + " is outside the vocabulary");

    // The tower as ModelConfig describes towers (the memory estimate, `inspect`), as the other Qwen
    // families do: patch_size is one visual token's cell; the grid follows each image (imageSize is
    // set from max_pixels at load).
    VisionConfig& v = c.vision;
    v.hiddenSize = q.vision.hiddenSize;
    v.intermediateSize = q.vision.intermediateSize;
    v.numLayers = q.vision.depth;
    v.numHeads = q.vision.numHeads;
    v.patchSize = q.vision.patchSize * q.vision.spatialMergeSize;
    v.imageSize = v.patchSize;
    v.hiddenAct = q.vision.hiddenAct;
    c.configHash = semanticHash(canonicalJson(q));
    return q;
}

} // namespace kvsteer
