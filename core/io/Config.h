#pragma once
// Model configuration: what every family's config.json comes down to — a vision tower, a decoder
// and how the two meet — with the defaults transformers fills in for keys a trimmed config leaves
// out. Each family parses its own config.json into this (models/<family>/...Config.cpp, with the
// readers of io/ConfigJson.h); models/ModelRegistry picks the family from model_type.
#include <cstdint>
#include <string>
#include <vector>

namespace kvsteer {

struct VisionConfig {          // CLIPVisionConfig / SiglipVisionConfig
    int hiddenSize = 768;
    int intermediateSize = 3072;
    int numLayers = 12;
    int numHeads = 12;
    int numChannels = 3;
    int imageSize = 224;
    int patchSize = 32;
    std::string hiddenAct = "quick_gelu";
    double layerNormEps = 1e-5;

    int gridSize() const { return imageSize / patchSize; }   // 24 for 336/14, 16 for 224/14
    int numPatches() const { return gridSize() * gridSize(); }
    int headDim() const { return hiddenSize / numHeads; }
};

// rope_scaling of a Llama-3 config: the frequencies of the original context kept, those longer
// than it divided by `factor`, the band between smoothed (transformers' "llama3" rope type).
struct RopeScaling {
    std::string type;             // "" (none) or "llama3"
    double factor = 1.0;
    double lowFreqFactor = 1.0;
    double highFreqFactor = 4.0;
    int64_t originalMaxPositions = 8192;
};

struct TextConfig {            // LlamaConfig / GemmaConfig
    int64_t vocabSize = 32000;
    int hiddenSize = 4096;
    int intermediateSize = 11008;
    int numLayers = 32;
    int numHeads = 32;
    int numKvHeads = 32;
    int headDim = 128;
    std::string hiddenAct = "silu";   // the gated MLP's gate: silu | gelu_pytorch_tanh
    double rmsNormEps = 1e-6;
    double ropeTheta = 10000.0;
    RopeScaling ropeScaling;
    int64_t maxPositionEmbeddings = 2048;
    bool attentionBias = false;   // Llama's attention_bias: q, k, v and o projections have biases
    bool mlpBias = false;
    bool tieWordEmbeddings = false;
    // Set by the family, not read from JSON: Gemma's (1 + w) RMSNorm and sqrt(hidden) input scale;
    // Qwen2's q/k/v biases (o_proj has none); Qwen3's RMSNorm over each head's q and k before RoPE
    // (q_norm, k_norm); Qwen2-VL's M-RoPE sections (frequencies per t, h, w axis; empty = plain
    // RoPE), laid out in three runs (Qwen2-VL) or interleaved t, h, w, t, h, w, ... (Qwen3-VL).
    bool normAddsOne = false;
    bool scaleEmbeddings = false;
    bool qkvBiasOnly = false;
    bool qkNorm = false;
    std::vector<int> mropeSection;
    bool mropeInterleaved = false;
    int64_t bosTokenId = 1;
    std::vector<int64_t> eosTokenIds{2};
};

struct ModelConfig {
    std::string modelType;     // config.json's model_type: "llava", "llama", "paligemma"
    std::string name;          // _name_or_path if present, else the directory name
    std::string configHash;    // semanticHash(): ties steering files to a model
    bool hasVision = false;
    VisionConfig vision;
    TextConfig text;
    int64_t imageTokenIndex = 32000;
    int visionFeatureLayer = -2;
    std::string visionFeatureSelectStrategy = "default";   // "default" drops CLS, "full" keeps it
    std::string projectorHiddenAct = "gelu";
    // Families whose image tokens follow the picture (LLaVA-NeXT): the most one image can become.
    // 0: every image becomes the vision tower's grid.
    int maxImageTokens = 0;

    // Number of visual tokens one image becomes in the prompt (576 for LLaVA-1.5).
    int imageSeqLength() const;
    // Encoder layers that must actually run to reach the selected hidden state.
    int visionLayersNeeded() const;

    std::string toJsonText() const;   // a full config.json in the llava-hf layout (llava and llama only)
};

// DIR/config.json as text; throws Error naming the file when it cannot be read.
std::string readConfigJson(const std::string& directory);

std::string fnv1aHex(const std::string& bytes);
// FNV-1a 64 of a canonical JSON of the config, name excluded: LLaVA/Llama hash toJsonText()
// (as they always have: shipped vector files carry it); other families pass their own JSON.
std::string semanticHash(const ModelConfig& config);
std::string semanticHash(const std::string& canonicalJson);

} // namespace kvsteer
