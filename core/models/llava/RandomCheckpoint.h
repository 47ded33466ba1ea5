#pragma once
// RandomCheckpoint — checkpoint writing: the tensor layout of a llava-hf directory for a config, a sharded writer,
// and random-weight models of real shapes (to measure loading and speed without real weights).
#include "io/Config.h"

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvsteer {

struct TensorSpec {
    std::string name;              // on-disk (llava-hf) name
    std::vector<int64_t> shape;
};

// Every tensor a llava-hf directory holds for this config, in a stable order.
std::vector<TensorSpec> checkpointLayout(const ModelConfig& config);

// Writes model.safetensors, or model-0000i-of-0000n.safetensors shards plus
// model.safetensors.index.json when the total exceeds maxShardBytes. `produce` returns each
// tensor's data (any float dtype; it is converted to `dtype`), called once per tensor, in order,
// so a model larger than memory can be written.
void writeCheckpoint(const std::string& directory, const std::vector<TensorSpec>& layout, c10::ScalarType dtype,
                     int64_t maxShardBytes, const std::function<at::Tensor(const TensorSpec&)>& produce);

// A random weight for a tensor of a random checkpoint: 1 for a norm's weight, 0 for a bias,
// normal(0, 0.02) otherwise.
at::Tensor randomWeight(const TensorSpec& spec, at::Generator& generator);

// preprocessor_config.json of a llava-hf directory (CLIPImageProcessor at the tower's image size).
void writePreprocessorConfig(const ModelConfig& config, const std::string& directory);

std::vector<std::string> randomPresetNames();
ModelConfig randomPreset(const std::string& name);   // throws kvsteer::Error for unknown names

// A complete random llava-hf directory: config.json, preprocessor_config.json, the tokenizer files
// copied from `tokenizerDirectory`, and random weights (normal(0, 0.02); norms 1, biases 0).
void writeRandomCheckpoint(const ModelConfig& config, c10::ScalarType dtype, const std::string& outDirectory,
                      const std::string& tokenizerDirectory, uint64_t seed, int64_t maxShardBytes);

} // namespace kvsteer
