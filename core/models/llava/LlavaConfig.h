#pragma once
// config.json of a llava-hf LLaVA-1.5 directory (model_type "llava") or of a plain Llama text
// model (model_type "llama"), with LlavaConfig's / LlamaConfig's defaults for left-out keys.
#include "io/Config.h"

#include <string>

namespace kvsteer {

ModelConfig parseLlavaConfig(const std::string& jsonText, const std::string& where);

} // namespace kvsteer
