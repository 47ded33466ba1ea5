#pragma once
// vision_config of a Qwen2-VL config.json (transformers' Qwen2VLVisionConfig). transformers
// writes only the keys that differ from the class defaults, so the defaults below (Qwen2-VL-7B's
// tower) are part of the format. hidden_size is the merger's OUTPUT width (= the decoder's
// hidden size), not the ViT width, which is embed_dim.
#include "io/ConfigJson.h"

#include <string>

namespace kvsteer {

struct Qwen2VisionConfig {
    int depth = 32;               // ViT blocks
    int embedDim = 1280;          // ViT width
    int numHeads = 16;
    double mlpRatio = 4.0;        // MLP width = int(embed_dim * mlp_ratio)
    int hiddenSize = 3584;        // merger output = text hidden size
    int patchSize = 14;
    int temporalPatchSize = 2;
    int spatialMergeSize = 2;
    int inChannels = 3;
    std::string hiddenAct = "quick_gelu";
    // Not in the config: transformers hard-codes eps 1e-6 for every LayerNorm of the tower.
    double layerNormEps = 1e-6;

    int headDim() const { return embedDim / numHeads; }
    int mlpHidden() const { return static_cast<int>(embedDim * mlpRatio); }
    int64_t patchDim() const { return static_cast<int64_t>(inChannels) * temporalPatchSize * patchSize * patchSize; }   // 1176
    int mergeUnit() const { return spatialMergeSize * spatialMergeSize; }   // patches per visual token
    int mergerWidth() const { return embedDim * mergeUnit(); }              // the merger's input/hidden width
};

// Parses the vision_config object (absent keys keep the defaults); `where` names the file in
// errors. Throws kvsteer::Error for a wrong type, a non-positive size, in_channels other than
// 3, hidden_act other than quick_gelu, or embed_dim / num_heads not giving a head_dim that is a
// multiple of 4 (the 2D RoPE splits half of it between rows and columns, each in pairs).
Qwen2VisionConfig parseQwen2VisionConfig(const configjson::json& visionConfig, const std::string& where);

// The same from a whole config.json's text (its "vision_config"; absent: all defaults).
Qwen2VisionConfig qwen2VisionConfigFromConfigJson(const std::string& configJsonText, const std::string& where);

} // namespace kvsteer
