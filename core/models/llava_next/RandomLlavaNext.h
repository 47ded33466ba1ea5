#pragma once
// make-random's llava-v1.6-vicuna-7b and llava-v1.6-mistral-7b: directories of those models'
// shapes with random weights, as llava-hf ships them (nested config with image_grid_pinpoints,
// the LlavaNextImageProcessor's preprocessor_config.json, language_model.* / vision_tower.* /
// multi_modal_projector.* / image_newline names), to measure loading, memory and speed without
// the real weights. The tokenizer files come from a Llama-2 style directory (the demo model's).
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kvsteer {

const std::vector<std::string>& llavaNextPresetNames();
bool isLlavaNextPreset(const std::string& name);

void writeRandomLlavaNext(const std::string& preset, c10::ScalarType dtype, const std::string& outDirectory,
                          const std::string& tokenizerDirectory, uint64_t seed, int64_t maxShardBytes);

} // namespace kvsteer
