#pragma once
// config.json of a LLaVA-NeXT directory (model_type "llava_next", transformers' LlavaNextConfig):
// LLaVA-1.5's fields (read by parseLlavaConfig, either dialect: llava-hf's nested text_config or
// a trimmed one that leans on LlamaConfig's / MistralConfig's defaults) plus image_grid_pinpoints.
#include "io/Config.h"
#include "models/llava_next/AnyresGrid.h"

#include <string>
#include <vector>

namespace kvsteer {

struct LlavaNextConfig {
    ModelConfig model;               // maxImageTokens: the largest pinpoint's token count
    std::vector<Resolution> pinpoints;   // [height, width] pairs, as config.json lists them
    std::string textModelType;       // "llama" (vicuna) or "mistral": which prompt layout
};

LlavaNextConfig parseLlavaNextConfig(const std::string& jsonText, const std::string& where);

} // namespace kvsteer
