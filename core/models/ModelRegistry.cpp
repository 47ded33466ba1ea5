#include "models/ModelRegistry.h"

#include "Error.h"
#include "io/ConfigJson.h"
#include "models/llava/LlavaConfig.h"
#include "models/llama3/Llama3Model.h"
#include "models/llava/LlavaModel.h"
#include "models/llava_next/LlavaNextConfig.h"
#include "models/llava_next/LlavaNextModel.h"
#include "models/paligemma/PaliGemmaConfig.h"
#include "models/paligemma/PaliGemmaModel.h"
#include "models/qwen2vl/Qwen2VlConfig.h"
#include "models/qwen2vl/Qwen2VlModel.h"
#include "models/qwen25vl/Qwen25VlConfig.h"
#include "models/qwen25vl/Qwen25VlModel.h"
#include "models/qwen3vl/Qwen3VlConfig.h"
#include "models/qwen3vl/Qwen3VlModel.h"

#include <filesystem>

namespace kvsteer {

namespace fs = std::filesystem;

namespace {

ModelConfig llavaNextConfig(const std::string& text, const std::string& where) { return parseLlavaNextConfig(text, where).model; }
ModelConfig paliGemmaConfig(const std::string& text, const std::string& where) { return parsePaliGemmaConfig(text, where).model; }
ModelConfig qwen2VlConfig(const std::string& text, const std::string& where) { return parseQwen2VlConfig(text, where).model; }
ModelConfig qwen25VlConfig(const std::string& text, const std::string& where) { return parseQwen25VlConfig(text, where).model; }
ModelConfig qwen3VlConfig(const std::string& text, const std::string& where) { return parseQwen3VlConfig(text, where).model; }

template <typename Family>
std::shared_ptr<Model> loadAs(const std::string& directory, const LoadOptions& options) {
    return Family::load(directory, options);
}

// model_type "llama" is two families: Llama-2 style directories carry a SentencePiece
// tokenizer.model, Llama-3's only a tokenizer.json.
std::shared_ptr<Model> loadLlama(const std::string& directory, const LoadOptions& options) {
    const fs::path dir(directory);
    if (fs::exists(dir / "tokenizer.json") && !fs::exists(dir / "tokenizer.model")) return Llama3Model::load(directory, options);
    return LlavaModel::load(directory, options);
}

const ModelFamily* findFamily(const std::string& modelType) {
    for (const ModelFamily& f : modelFamilies())
        if (f.modelType == modelType) return &f;
    return nullptr;
}

std::string supportedTypes() {
    std::string list;
    for (const ModelFamily& f : modelFamilies()) list += (list.empty() ? "\"" : ", \"") + f.modelType + "\"";
    return list;
}

// model_type of a config.json text, with the error every unsupported type gets.
const ModelFamily& familyOf(const std::string& text, const std::string& where) {
    const configjson::json j = configjson::parseObject(text, where);
    std::string type;
    configjson::readKey(j, "model_type", type, where);
    if (type.empty()) throw Error(where + ": field 'model_type' is missing (expected one of " + supportedTypes() + ")");
    const ModelFamily* family = findFamily(type);
    if (!family) throw Error(where + ": model_type '" + type + "' is not supported (expected one of " + supportedTypes() + ")");
    return *family;
}

} // namespace

const std::vector<ModelFamily>& modelFamilies() {
    static const std::vector<ModelFamily> families = {
        {"llava", "LLaVA-1.5", true, "CLIP 24x24 grid, \"USER: <image>\\n{q} ASSISTANT:\", causal prompt", parseLlavaConfig, loadAs<LlavaModel>},
        {"llava_next", "LLaVA-NeXT", true,
         "CLIP base view 24x24 + the picture's crops at the best of image_grid_pinpoints (unpadded grid, image_newline per row), "
         "\"USER: <image>\\n{q} ASSISTANT:\" (vicuna) or \"[INST] <image>\\n{q} [/INST]\" (mistral), causal prompt",
         llavaNextConfig, loadAs<LlavaNextModel>},
        {"llama", "Llama / Llama-3", false,
         "text-only, causal prompt: with tokenizer.model (Llama-2 style) \"USER: {q} ASSISTANT:\"; with only a tokenizer.json "
         "(Llama-3) the checkpoint's chat template, llama3 RoPE scaling",
         parseLlavaConfig, loadLlama},
        {"paligemma", "PaliGemma", true, "SigLIP 16x16/32x32/64x64 grid, image tokens first: \"<image>\"xN + \"<bos>{prefix}\\n\", prefix-LM prompt",
         paliGemmaConfig, loadAs<PaliGemmaModel>},
        {"qwen2_vl", "Qwen2-VL", true, "dynamic h/28 x w/28 grid, chat template with the default system prompt, image in the user turn: "
                     "<|vision_start|><|image_pad|>xN<|vision_end|>{q}, causal prompt, M-RoPE positions",
         qwen2VlConfig, loadAs<Qwen2VlModel>},
        {"qwen2_5_vl", "Qwen2.5-VL", true, "as Qwen2-VL (grid, template, M-RoPE); its vision tower attends in 112-px windows "
                       "except in a few full-attention blocks",
         qwen25VlConfig, loadQwen25Vl},
        {"qwen3_vl", "Qwen3-VL", true, "dynamic h/32 x w/32 grid, chat template without a default system prompt, image in the user turn: "
                     "<|vision_start|><|image_pad|>xN<|vision_end|>{q}, causal prompt, interleaved M-RoPE positions; "
                     "DeepStack features added at the image positions after the first decoder layers",
         qwen3VlConfig, loadAs<Qwen3VlModel>},
        {"qwen2", "Qwen2 / Qwen2.5", false, "text-only: chat template with the default system prompt, causal prompt", qwen2VlConfig,
         loadAs<Qwen2VlModel>},
    };
    return families;
}

ModelConfig parseModelConfig(const std::string& text, const std::string& where) { return familyOf(text, where).parseConfig(text, where); }

std::shared_ptr<Model> loadModel(const std::string& directory, const LoadOptions& options) {
    if (!fs::is_directory(directory)) throw Error("model directory " + directory + ": does not exist or is not a directory");
    const std::string text = readConfigJson(directory);
    return familyOf(text, "config " + (fs::path(directory) / "config.json").string()).load(directory, options);
}

} // namespace kvsteer
