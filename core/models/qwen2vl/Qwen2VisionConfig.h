#pragma once
// vision_config of a Qwen2-VL config.json (transformers' Qwen2VLVisionConfig). transformers
// writes only the keys that differ from the class defaults, so the defaults below (Qwen2-VL-7B's
// tower) are part of the format. hidden_size is the merger's OUTPUT width (= the decoder's
// hidden size), not the ViT width, which is embed_dim. Qwen2.5-VL's tower is the same struct with
// its own keys (qwen25vl/Qwen25VlConfig.h reads them) and the fields marked "Qwen2.5-VL".
#include "io/ConfigJson.h"

#include <algorithm>
#include <string>
#include <vector>

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

    // Qwen2.5-VL: RMSNorm (norm1, norm2, the merger's ln_q) and a SwiGLU MLP with biases
    // (gate_proj, up_proj, down_proj) of intermediateSize; attention inside windows of windowSize
    // pixels a side, except in the blocks listed in fullAttentionBlocks.
    bool rmsNormSwiGlu = false;
    int intermediateSize = 0;                 // 0: embed_dim * mlp_ratio (Qwen2-VL)
    int windowSize = 0;                       // 0: every block attends over the whole frame
    std::vector<int> fullAttentionBlocks;

    int headDim() const { return embedDim / numHeads; }
    int mlpHidden() const { return intermediateSize > 0 ? intermediateSize : static_cast<int>(embedDim * mlpRatio); }
    int windowSide() const { return windowSize / (patchSize * spatialMergeSize); }   // merged cells a window side
    bool windowed(int block) const {
        return windowSize > 0 && std::find(fullAttentionBlocks.begin(), fullAttentionBlocks.end(), block) == fullAttentionBlocks.end();
    }
    int64_t patchDim() const { return static_cast<int64_t>(inChannels) * temporalPatchSize * patchSize * patchSize; }   // 1176
    int mergeUnit() const { return spatialMergeSize * spatialMergeSize; }   // patches per visual token
    int mergerWidth() const { return embedDim * mergeUnit(); }              // the merger's input/hidden width
};

// The checks both towers share: positive sizes, RGB input, a head_dim the 2D RoPE can split (a
// multiple of 4). Field names are Qwen2-VL's (embed_dim is Qwen2.5-VL's hidden_size).
void validateQwenVisionShape(const Qwen2VisionConfig& v, const std::string& where);
// in_channels, or the legacy in_chans the released checkpoints carry (both: they must agree).
int readInChannels(const configjson::json& visionConfig, const std::string& where, int fallback);

// Parses the vision_config object (absent keys keep the defaults); `where` names the file in
// errors. Throws kvsteer::Error for a wrong type, a non-positive size, in_channels other than
// 3, hidden_act other than quick_gelu, or embed_dim / num_heads not giving a head_dim that is a
// multiple of 4 (the 2D RoPE splits half of it between rows and columns, each in pairs).
Qwen2VisionConfig parseQwen2VisionConfig(const configjson::json& visionConfig, const std::string& where);

// The same from a whole config.json's text (its "vision_config"; absent: all defaults).
Qwen2VisionConfig qwen2VisionConfigFromConfigJson(const std::string& configJsonText, const std::string& where);

} // namespace kvsteer
