#pragma once
// config.json of a Qwen3-VL directory (model_type "qwen3_vl"; transformers' Qwen3VLConfig), in
// either dialect. Both nest the decoder in text_config and the tower in vision_config; they differ
// in how text_config states RoPE:
//   transformers 5        rope_parameters {rope_theta, mrope_section, mrope_interleaved, rope_type}
//   the hub (4.57)        rope_theta, and rope_scaling {mrope_section, mrope_interleaved, rope_type}
// Keys left out take transformers' defaults, which are part of the format: head_dim 128 (Qwen3
// decouples it from hidden / heads), rope_theta 500000, mrope_section [24, 20, 20], and
// tie_word_embeddings false — read at the top level only (text_config's copy is ignored, as
// transformers 5.3 ignores it). M-RoPE is always interleaved for qwen3_vl; the mrope_interleaved
// key is not needed. Videos are not read (images only).
#include "io/Config.h"

#include <string>
#include <vector>

namespace kvsteer {

// vision_config (Qwen3VLVisionConfig); defaults are transformers'.
struct Qwen3VisionConfig {
    int depth = 27;
    int hiddenSize = 1152;          // the ViT's width
    int intermediateSize = 4304;    // its MLP
    int numHeads = 16;
    int inChannels = 3;
    int patchSize = 16;
    int temporalPatchSize = 2;
    int spatialMergeSize = 2;
    int outHiddenSize = 3584;       // the mergers' output: the decoder's hidden size
    int numPositionEmbeddings = 2304;   // a side x side learned table (48 x 48)
    // The blocks whose outputs feed the DeepStack mergers; the k-th listed goes into the decoder
    // after decoder layer k.
    std::vector<int> deepstackVisualIndexes{8, 16, 24};
    std::string hiddenAct = "gelu_pytorch_tanh";
    double layerNormEps = 1e-6;     // not in the file: transformers hard-codes it

    int headDim() const { return hiddenSize / numHeads; }
    int positionSide() const;        // sqrt(num_position_embeddings)
    int mergeUnit() const { return spatialMergeSize * spatialMergeSize; }   // patches per visual token
    int mergerWidth() const { return hiddenSize * mergeUnit(); }            // the merger's input and hidden width
    int64_t patchDim() const { return int64_t(inChannels) * temporalPatchSize * patchSize * patchSize; }   // 1536
};

struct Qwen3VlConfig {
    ModelConfig model;
    Qwen3VisionConfig vision;
    int64_t visionStartTokenId = 151652;
    int64_t videoTokenId = 151656;   // <|video_pad|>: refused in a prompt (images only)
};

// Throws kvsteer::Error naming `where` and the field for anything transformers would not load
// the same way (a wrong type, a non-positive size, another rope type, a DeepStack index outside the
// tower or past the decoder's layers, a tower whose output width is not the decoder's).
Qwen3VlConfig parseQwen3VlConfig(const std::string& jsonText, const std::string& where);

} // namespace kvsteer
