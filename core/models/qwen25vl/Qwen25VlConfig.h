#pragma once
// config.json of a Qwen2.5-VL directory (model_type "qwen2_5_vl"), in either dialect:
//   transformers 5 (nested)   text_config {..., rope_parameters {rope_theta, mrope_section}},
//                              vision_config {hidden_size, out_hidden_size, ..., in_channels}
//   the hub (4.49 - 4.5x)     the text fields at the top level, rope_theta, rope_scaling
//                              {type: mrope, mrope_section}, vision_config.in_chans
// Missing keys take transformers' defaults (Qwen2_5_VLTextConfig's are Qwen2-VL's; the tower's are
// Qwen2.5-VL-7B's). The result is the Qwen2-VL family's config struct: the decoder, M-RoPE, the
// processor and the grid are Qwen2-VL's; the tower differs (Qwen2VisionConfig's Qwen2.5-VL fields).
#include "models/qwen2vl/Qwen2VlConfig.h"

#include <string>

namespace kvsteer {

Qwen2VlConfig parseQwen25VlConfig(const std::string& jsonText, const std::string& where);

// The vision_config object alone (hidden_size is the ViT width here, out_hidden_size the merger's).
Qwen2VisionConfig parseQwen25VisionConfig(const configjson::json& visionConfig, const std::string& where);

} // namespace kvsteer
