#include "models/qwen2vl/Qwen2VlConfig.h"

#include "io/ConfigJson.h"

namespace kvsteer {

using namespace configjson;

// Qwen2Config's defaults (Qwen2VLConfig differs in the sizes, rms_norm_eps 1e-5 and rope_theta).
TextConfig qwen2TextDefaults(bool vl) {
    TextConfig t;
    t.vocabSize = vl ? 152064 : 151936;
    t.hiddenSize = vl ? 8192 : 4096;
    t.intermediateSize = vl ? 29568 : 22016;
    t.numLayers = vl ? 80 : 32;
    t.numHeads = vl ? 64 : 32;
    t.numKvHeads = vl ? 8 : 32;
    t.headDim = 0;   // hidden / heads: Qwen2 has no head_dim key
    t.rmsNormEps = vl ? 1e-5 : 1e-6;
    t.ropeTheta = vl ? 1e6 : 10000.0;
    t.maxPositionEmbeddings = 32768;
    t.tieWordEmbeddings = false;
    return t;
}

// M-RoPE's sections from rope_scaling (Qwen2-VL); plain RoPE (null) for Qwen2.
std::vector<int> readMropeSections(json& j, const std::string& where, bool vl) {
    std::vector<int> sections;
    auto it = j.find("rope_scaling");
    if (it == j.end() || it->is_null()) {
        if (vl) throw Error(where + ": rope_scaling.mrope_section is missing (Qwen2-VL uses M-RoPE)");
        return sections;
    }
    if (!vl || !it->is_object() || !it->contains("mrope_section"))
        throw Error(where + ": rope_scaling " + it->dump() + " is not supported (expected null, or {\"mrope_section\": [...]} for Qwen2-VL)");
    readKey(*it, "mrope_section", sections, where);
    std::string type = "default";
    readKey(*it, "type", type, where);
    requireOneOf(type, {"default", "mrope"}, "rope_scaling.type", where);
    if (sections.size() != 3) throw Error(where + ": rope_scaling.mrope_section must list 3 sections (t, h, w)");
    for (int s : sections) requirePositive(s, "rope_scaling.mrope_section", where);
    j.erase("rope_scaling");   // handled here; the shared reader refuses rope scaling
    return sections;
}

namespace {

std::string canonicalJson(const Qwen2VlConfig& q) {
    const ModelConfig& c = q.model;
    const TextConfig& t = c.text;
    const Qwen2VisionConfig& v = q.vision;
    json j = {{"model_type", c.modelType},
              {"text", {t.vocabSize, t.hiddenSize, t.intermediateSize, t.numLayers, t.numHeads, t.numKvHeads, t.headDim,
                        t.rmsNormEps, t.ropeTheta, t.maxPositionEmbeddings, t.tieWordEmbeddings, t.mropeSection}}};
    if (c.hasVision)
        j["vision"] = {v.depth, v.embedDim, v.numHeads, v.mlpRatio, v.hiddenSize, v.patchSize, v.temporalPatchSize, v.spatialMergeSize,
                       c.imageTokenIndex};
    // Qwen2.5-VL's own fields, only for it: a Qwen2-VL model's hash stays what its vector files record.
    if (v.rmsNormSwiGlu) j["qwen2.5"] = {v.intermediateSize, v.windowSize, v.fullAttentionBlocks};
    return j.dump();
}

} // namespace

void finishQwenVlConfig(Qwen2VlConfig& q, const std::vector<int>& sections, const json& top, const std::string& where) {
    ModelConfig& c = q.model;
    requireOneOf(c.text.hiddenAct, {"silu"}, "hidden_act", where);
    c.text.qkvBiasOnly = true;   // q/k/v projections have biases, o_proj and the MLP none
    c.text.mropeSection = sections;
    int sum = 0;
    for (int s : sections) sum += s;
    if (!sections.empty() && sum * 2 != c.text.headDim)
        throw Error(where + ": mrope_section sums to " + std::to_string(sum) + " frequencies; head_dim " + std::to_string(c.text.headDim) +
                    " has " + std::to_string(c.text.headDim / 2));
    if (c.hasVision) {
        if (q.vision.hiddenSize != c.text.hiddenSize)
            throw Error(where + ": the vision tower's output width " + std::to_string(q.vision.hiddenSize) + " contradicts hidden_size " +
                        std::to_string(c.text.hiddenSize) + " (the merger writes image features into the decoder's rows)");
        c.imageTokenIndex = 151655;
        q.visionStartTokenId = 151652;
        readKey(top, "image_token_id", c.imageTokenIndex, where);
        readKey(top, "vision_start_token_id", q.visionStartTokenId, where);
        if (c.imageTokenIndex < 0 || c.imageTokenIndex >= c.text.vocabSize)
            throw Error(where + ": image_token_id " + std::to_string(c.imageTokenIndex) + " is outside the vocabulary");
        // The tower as ModelConfig describes towers (for the memory estimate and `inspect`); the
        // grid itself depends on each image.
        VisionConfig& v = c.vision;
        v.hiddenSize = q.vision.embedDim;
        v.intermediateSize = q.vision.mlpHidden();
        v.numLayers = q.vision.depth;
        v.numHeads = q.vision.numHeads;
        v.patchSize = q.vision.patchSize * q.vision.spatialMergeSize;   // one visual token
        v.imageSize = v.patchSize;                                       // set from max_pixels at load
        v.hiddenAct = q.vision.hiddenAct;
    }
    c.configHash = semanticHash(canonicalJson(q));
}

Qwen2VlConfig parseQwen2VlConfig(const std::string& text, const std::string& where) {
    json j = parseObject(text, where);
    Qwen2VlConfig q;
    ModelConfig& c = q.model;
    readKey(j, "_name_or_path", c.name, where);
    readKey(j, "model_type", c.modelType, where);
    requireOneOf(c.modelType, {"qwen2_vl", "qwen2"}, "model_type", where);
    const bool vl = c.modelType == "qwen2_vl";
    bool slidingWindow = false;
    readKey(j, "use_sliding_window", slidingWindow, where);
    if (slidingWindow) throw Error(where + ": use_sliding_window true is not supported (expected false)");

    const std::vector<int> sections = readMropeSections(j, where, vl);
    c.text = parseText(j, where, qwen2TextDefaults(vl));
    c.hasVision = vl;
    if (vl) q.vision = parseQwen2VisionConfig(subObject(j, "vision_config", where), where);
    finishQwenVlConfig(q, sections, j, where);
    return q;
}

} // namespace kvsteer
