#pragma once
// make-random's qwen2.5-vl-7b: a directory of Qwen2.5-VL-7B-Instruct's shapes with random weights,
// as the hub ships it (the flat config dialect, model.* / visual.* / lm_head names, the processor's
// real min/max pixels), to measure loading, memory and speed without the real weights. The
// tokenizer files come from a Qwen2-VL or Qwen2.5-VL directory (tiny-qwen25vl's will do: the
// special tokens' ids are read from it).
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>

namespace kvsteer {

inline constexpr const char* kQwen25VlPreset = "qwen2.5-vl-7b";

void writeRandomQwen25Vl(c10::ScalarType dtype, const std::string& outDirectory, const std::string& tokenizerDirectory, uint64_t seed,
                         int64_t maxShardBytes);

} // namespace kvsteer
