#pragma once
// Model configuration: config.json of a llava-hf directory (or a plain Llama), with the
// defaults transformers fills in for keys a trimmed config leaves out.
#include <cstdint>
#include <string>
#include <vector>

namespace kvsteer {

struct VisionConfig {          // CLIPVisionConfig
    int hiddenSize = 768;
    int intermediateSize = 3072;
    int numLayers = 12;
    int numHeads = 12;
    int numChannels = 3;
    int imageSize = 224;
    int patchSize = 32;
    std::string hiddenAct = "quick_gelu";
    double layerNormEps = 1e-5;

    int gridSize() const { return imageSize / patchSize; }   // 24 for 336/14
    int numPatches() const { return gridSize() * gridSize(); }
    int headDim() const { return hiddenSize / numHeads; }
};

struct TextConfig {            // LlamaConfig
    int64_t vocabSize = 32000;
    int hiddenSize = 4096;
    int intermediateSize = 11008;
    int numLayers = 32;
    int numHeads = 32;
    int numKvHeads = 32;
    int headDim = 128;
    std::string hiddenAct = "silu";
    double rmsNormEps = 1e-6;
    double ropeTheta = 10000.0;
    int64_t maxPositionEmbeddings = 2048;
    bool attentionBias = false;
    bool mlpBias = false;
    bool tieWordEmbeddings = false;
    int64_t bosTokenId = 1;
    std::vector<int64_t> eosTokenIds{2};
};

struct ModelConfig {
    std::string modelType;     // "llava" or "llama"
    std::string name;          // _name_or_path if present, else the directory name
    std::string configHash;    // semanticHash(): ties steering files to a model
    bool hasVision = false;
    VisionConfig vision;
    TextConfig text;
    int64_t imageTokenIndex = 32000;
    int visionFeatureLayer = -2;
    std::string visionFeatureSelectStrategy = "default";   // "default" drops CLS, "full" keeps it
    std::string projectorHiddenAct = "gelu";

    // Number of visual tokens one image becomes in the prompt (576 for LLaVA-1.5).
    int imageSeqLength() const;
    // Encoder layers that must actually run to reach the selected hidden state.
    int visionLayersNeeded() const;

    static ModelConfig fromJsonFile(const std::string& path);
    static ModelConfig fromJsonText(const std::string& text, const std::string& nameForErrors);
    std::string toJsonText() const;   // a full config.json in the llava-hf layout
};

std::string fnv1aHex(const std::string& bytes);
std::string semanticHash(const ModelConfig& config);   // FNV-1a 64 of the canonical config JSON, name excluded

} // namespace kvsteer
