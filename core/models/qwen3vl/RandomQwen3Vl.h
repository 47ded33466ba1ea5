#pragma once
// make-random's qwen3-vl-2b, qwen3-vl-4b and qwen3-vl-8b: directories of Qwen3-VL-*-Instruct's
// shapes with random weights, as the hub ships them (the 4.57 config dialect: nested text_config
// with rope_theta and rope_scaling; model.language_model.* / model.visual.* names; the processor's
// real pixel budget), to measure loading, memory and speed without the real weights. The
// tokenizer files come from a Qwen VL directory (tiny-qwen3vl's will do: the special tokens' ids
// are read from it).
#include "models/llava/RandomCheckpoint.h"

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kvsteer {

std::vector<std::string> qwen3VlPresetNames();
bool isQwen3VlPreset(const std::string& name);

// The special tokens' ids a preset's config.json names (the hub's by default; make-random writes
// the tokenizer's own).
struct Qwen3VlPresetIds {
    int64_t image = 151655, visionStart = 151652, visionEnd = 151653, bos = 151643, eos = 151645;
};
// A preset's config.json text and its tensors (shapes only): what make-random writes, without
// writing it (the memory check's tests read them). Throw kvsteer::Error for an unknown preset.
std::string qwen3VlPresetConfig(const std::string& preset, const Qwen3VlPresetIds& ids = {});
std::vector<TensorSpec> qwen3VlPresetLayout(const std::string& preset);

void writeRandomQwen3Vl(const std::string& preset, c10::ScalarType dtype, const std::string& outDirectory,
                        const std::string& tokenizerDirectory, uint64_t seed, int64_t maxShardBytes);

} // namespace kvsteer
