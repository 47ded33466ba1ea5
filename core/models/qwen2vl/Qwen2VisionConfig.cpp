#include "models/qwen2vl/Qwen2VisionConfig.h"

#include "Error.h"

namespace kvsteer {

using namespace configjson;

namespace {

void validate(const Qwen2VisionConfig& v, const std::string& where) {
    validateQwenVisionShape(v, where);
    if (!(v.mlpRatio > 0) || v.mlpHidden() <= 0) throw Error(where + ": field 'mlp_ratio' must be positive");
    requireOneOf(v.hiddenAct, {"quick_gelu"}, "hidden_act", where);
}

} // namespace

// in_channels is the current key; in_chans the legacy one the released checkpoints still carry
// (transformers ignores it, but a file that states two different values is contradictory).
int readInChannels(const json& j, const std::string& where, int fallback) {
    int current = fallback, legacy = fallback;
    readKey(j, "in_channels", current, where);
    readKey(j, "in_chans", legacy, where);
    const bool hasCurrent = j.contains("in_channels") && !j["in_channels"].is_null();
    const bool hasLegacy = j.contains("in_chans") && !j["in_chans"].is_null();
    if (hasCurrent && hasLegacy && current != legacy)
        throw Error(where + ": in_channels " + std::to_string(current) + " contradicts in_chans " + std::to_string(legacy));
    return hasCurrent ? current : legacy;
}

void validateQwenVisionShape(const Qwen2VisionConfig& v, const std::string& where) {
    requirePositive(v.depth, "depth", where);
    requirePositive(v.embedDim, "embed_dim", where);
    requirePositive(v.numHeads, "num_heads", where);
    requirePositive(v.hiddenSize, "hidden_size", where);
    requirePositive(v.patchSize, "patch_size", where);
    requirePositive(v.temporalPatchSize, "temporal_patch_size", where);
    requirePositive(v.spatialMergeSize, "spatial_merge_size", where);
    if (v.inChannels != 3) throw Error(where + ": in_channels must be 3 (RGB), got " + std::to_string(v.inChannels));
    if (v.embedDim % v.numHeads != 0)
        throw Error(where + ": embed_dim (" + std::to_string(v.embedDim) + ") must be divisible by num_heads (" +
                    std::to_string(v.numHeads) + ")");
    if (v.headDim() % 4 != 0)
        throw Error(where + ": head_dim = embed_dim / num_heads = " + std::to_string(v.headDim()) +
                    " must be a multiple of 4 (2D rotary embedding)");
}


Qwen2VisionConfig parseQwen2VisionConfig(const json& j, const std::string& where) {
    const std::string w = where + " (vision_config)";
    if (!j.is_object()) throw Error(w + ": must be an object");
    Qwen2VisionConfig v;
    readKey(j, "depth", v.depth, w);
    readKey(j, "embed_dim", v.embedDim, w);
    readKey(j, "num_heads", v.numHeads, w);
    readKey(j, "mlp_ratio", v.mlpRatio, w);
    readKey(j, "hidden_size", v.hiddenSize, w);
    readKey(j, "patch_size", v.patchSize, w);
    readKey(j, "temporal_patch_size", v.temporalPatchSize, w);
    readKey(j, "spatial_merge_size", v.spatialMergeSize, w);
    readKey(j, "hidden_act", v.hiddenAct, w);
    v.inChannels = readInChannels(j, w, v.inChannels);
    validate(v, w);
    return v;
}

Qwen2VisionConfig qwen2VisionConfigFromConfigJson(const std::string& text, const std::string& where) {
    const json j = parseObject(text, where);
    return parseQwen2VisionConfig(subObject(j, "vision_config", where), where);
}

} // namespace kvsteer
