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

// The pieces Qwen2.5-VL's reader (qwen25vl/Qwen25VlConfig.h) shares with this one:
// Qwen2Config's / Qwen2VLConfig's defaults (Qwen2.5-VL's text defaults are Qwen2-VL's),
// rope_scaling.mrope_section (removed from `j` once read), and what follows once the text and
// vision configs are read: the M-RoPE check, the image token ids (from `top`), the tower summary
// and the config hash.
TextConfig qwen2TextDefaults(bool vl);
std::vector<int> readMropeSections(configjson::json& j, const std::string& where, bool vl);
void finishQwenVlConfig(Qwen2VlConfig& q, const std::vector<int>& mropeSections, const configjson::json& top, const std::string& where);

} // namespace kvsteer
