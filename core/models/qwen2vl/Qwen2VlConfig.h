#pragma once
// config.json of a Qwen2-VL directory (model_type "qwen2_vl": the decoder at the top level,
// vision_config for the tower, rope_scaling.mrope_section for M-RoPE) or of a Qwen2 / Qwen2.5
// text model (model_type "qwen2": the same decoder, plain RoPE), with transformers' defaults.
#include "io/Config.h"
#include "models/qwen2vl/Qwen2VisionConfig.h"

#include <string>

namespace kvsteer {

struct Qwen2VlConfig {
    ModelConfig model;
    Qwen2VisionConfig vision;     // meaningful when model.hasVision
    int64_t visionStartTokenId = -1;
};

Qwen2VlConfig parseQwen2VlConfig(const std::string& jsonText, const std::string& where);

} // namespace kvsteer
