#include "models/qwen25vl/Qwen25VlConfig.h"

#include "Error.h"


namespace kvsteer {

using namespace configjson;

namespace {

// Qwen2_5_VLVisionConfig's defaults: Qwen2.5-VL-7B's tower.
Qwen2VisionConfig qwen25VisionDefaults() {
    Qwen2VisionConfig v;
    v.rmsNormSwiGlu = true;
    v.depth = 32;
    v.embedDim = 3584;
    v.intermediateSize = 3420;
    v.numHeads = 16;
    v.hiddenSize = 3584;
    v.patchSize = 14;
    v.temporalPatchSize = 2;
    v.spatialMergeSize = 2;
    v.windowSize = 112;
    v.fullAttentionBlocks = {7, 15, 23, 31};
    v.hiddenAct = "silu";
    return v;
}

// rope_theta and mrope_section: transformers 5's text_config.rope_parameters, or the hub's
// top-level rope_theta and rope_scaling. Removed from `text` once read.
std::vector<int> ropeOf(json& text, const std::string& where, double& ropeTheta) {
    auto it = text.find("rope_parameters");
    if (it == text.end() || it->is_null()) {
        readKey(text, "rope_theta", ropeTheta, where);
        return readMropeSections(text, where, true);
    }
    if (!it->is_object() || !it->contains("mrope_section"))
        throw Error(where + ": text_config.rope_parameters " + it->dump() + " has no mrope_section (Qwen2.5-VL uses M-RoPE)");
    std::vector<int> sections;
    readKey(*it, "mrope_section", sections, where + " (rope_parameters)");
    readKey(*it, "rope_theta", ropeTheta, where + " (rope_parameters)");
    std::string type = "mrope", ropeType = "default";
    readKey(*it, "type", type, where + " (rope_parameters)");
    readKey(*it, "rope_type", ropeType, where + " (rope_parameters)");
    requireOneOf(type, {"default", "mrope"}, "rope_parameters.type", where);
    requireOneOf(ropeType, {"default", "mrope"}, "rope_parameters.rope_type", where);   // no scaled variants
    if (sections.size() != 3) throw Error(where + ": rope_parameters.mrope_section must list 3 sections (t, h, w)");
    for (int s : sections) requirePositive(s, "rope_parameters.mrope_section", where);
    text.erase("rope_parameters");
    return sections;
}

void validate(const Qwen2VisionConfig& v, const std::string& where) {
    validateQwenVisionShape(v, where);
    requirePositive(v.intermediateSize, "intermediate_size", where);
    requirePositive(v.windowSize, "window_size", where);
    requireOneOf(v.hiddenAct, {"silu"}, "hidden_act", where);
    if (v.windowSize % (v.patchSize * v.spatialMergeSize) != 0)
        throw Error(where + ": window_size " + std::to_string(v.windowSize) + " must be a multiple of patch_size x spatial_merge_size (" +
                    std::to_string(v.patchSize * v.spatialMergeSize) + ")");
    for (int b : v.fullAttentionBlocks)
        if (b < 0 || b >= v.depth)
            throw Error(where + ": fullatt_block_indexes lists block " + std::to_string(b) + "; the tower has blocks 0.." +
                        std::to_string(v.depth - 1));
}

} // namespace

Qwen2VisionConfig parseQwen25VisionConfig(const json& j, const std::string& where) {
    const std::string w = where + " (vision_config)";
    if (!j.is_object()) throw Error(w + ": must be an object");
    Qwen2VisionConfig v = qwen25VisionDefaults();
    readKey(j, "depth", v.depth, w);
    readKey(j, "hidden_size", v.embedDim, w);
    readKey(j, "intermediate_size", v.intermediateSize, w);
    readKey(j, "num_heads", v.numHeads, w);
    readKey(j, "out_hidden_size", v.hiddenSize, w);
    readKey(j, "patch_size", v.patchSize, w);
    readKey(j, "temporal_patch_size", v.temporalPatchSize, w);
    readKey(j, "spatial_merge_size", v.spatialMergeSize, w);
    readKey(j, "window_size", v.windowSize, w);
    readKey(j, "fullatt_block_indexes", v.fullAttentionBlocks, w);
    readKey(j, "hidden_act", v.hiddenAct, w);
    // transformers 5 writes the tower's 2D RoPE as rope_parameters {rope_theta 10000, rope_type axial}:
    // the only one there is (VisionRope's theta).
    if (auto it = j.find("rope_parameters"); it != j.end() && it->is_object()) {
        double theta = 10000.0;
        readKey(*it, "rope_theta", theta, w);
        if (theta != 10000.0) throw Error(w + ": rope_parameters.rope_theta " + std::to_string(theta) + " is not supported (expected 10000)");
    }
    v.inChannels = readInChannels(j, w, v.inChannels);   // the hub writes in_chans
    validate(v, w);
    return v;
}

Qwen2VlConfig parseQwen25VlConfig(const std::string& jsonText, const std::string& where) {
    const json top = parseObject(jsonText, where);
    Qwen2VlConfig q;
    ModelConfig& c = q.model;
    readKey(top, "_name_or_path", c.name, where);
    readKey(top, "model_type", c.modelType, where);
    requireOneOf(c.modelType, {"qwen2_5_vl"}, "model_type", where);
    const bool nested = top.contains("text_config") && !top["text_config"].is_null();
    json text = nested ? top["text_config"] : top;
    const std::string textWhere = nested ? where + " (text_config)" : where;
    bool slidingWindow = false;
    readKey(text, "use_sliding_window", slidingWindow, textWhere);
    if (slidingWindow) throw Error(textWhere + ": use_sliding_window true is not supported (expected false)");
    TextConfig defaults = qwen2TextDefaults(true);
    const std::vector<int> sections = ropeOf(text, textWhere, defaults.ropeTheta);
    readKey(top, "tie_word_embeddings", defaults.tieWordEmbeddings, where);   // transformers 5 keeps it at the top too
    c.text = parseText(text, textWhere, defaults);
    c.hasVision = true;
    q.vision = parseQwen25VisionConfig(subObject(top, "vision_config", where), where);
    finishQwenVlConfig(q, sections, top, where);
    return q;
}

} // namespace kvsteer
