#pragma once
// A checkpoint directory: one model.safetensors or shards listed in model.safetensors.index.json.
// Tensor names are mapped to one canonical scheme so the model code does not care whether the
// files came from llava-hf (language_model.model.*), newer transformers (model.language_model.*),
// a plain Llama / Qwen2 (model.*) or Qwen2-VL (visual.* or model.visual.* beside the decoder):
//   text.<rest>       e.g. text.layers.0.self_attn.q_proj.weight, text.embed_tokens.weight
//   lm_head.weight
//   vision.<rest>     e.g. vision.encoder.layers.0.mlp.fc1.weight (after "vision_model."),
//                     vision.blocks.0.attn.qkv.weight (after Qwen2-VL's "visual.")
//   projector.<rest>  e.g. projector.linear_1.weight
#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

class SafeTensorsFile;

class Checkpoint {
public:
    static Checkpoint open(const std::string& directory);

    bool has(const std::string& canonicalName) const;
    // The stored tensor (zero-copy view, dtype as on disk), checked against the expected shape.
    at::Tensor load(const std::string& canonicalName, const std::vector<int64_t>& expectedShape) const;
    std::string diskName(const std::string& canonicalName) const;
    // After load()'s view was copied into another dtype or onto a GPU: its pages leave the
    // process (SafeTensorsFile::releasePages).
    void releasePages(const std::string& canonicalName) const;
    std::vector<std::string> canonicalNames() const;

    const std::string& directory() const { return directory_; }
    size_t fileCount() const { return files_.size(); }
    int64_t parameterCount() const;
    std::map<std::string, int64_t> parametersByDtype() const;   // "F16" -> count
    // Bytes of a tensor kept as `dtype` (Undefined: as stored), without touching its data.
    int64_t bytes(const std::string& canonicalName, c10::ScalarType dtype) const;
    int64_t storedBytes() const;   // every tensor, as stored
    std::string diskDtype(const std::string& canonicalName) const;   // "F16", ...; "" if absent

    // Called after every load() with the stored bytes of that tensor (progress of a model load).
    void setLoadObserver(std::function<void(int64_t bytes)> observer) { observer_ = std::move(observer); }

private:
    struct Entry {
        size_t file;
        std::string diskName;
    };
    std::string directory_;
    std::vector<std::shared_ptr<SafeTensorsFile>> files_;
    std::map<std::string, Entry> entries_;
    std::function<void(int64_t)> observer_;
};

// Maps an on-disk tensor name to the canonical scheme above; "" for names the model does not use.
std::string canonicalTensorName(const std::string& diskName);

} // namespace kvsteer
