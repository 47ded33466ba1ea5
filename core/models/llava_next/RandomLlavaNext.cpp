#include "models/llava_next/RandomLlavaNext.h"

#include "Error.h"
#include "models/llava/RandomCheckpoint.h"
#include "models/llava_next/LlavaNextConfig.h"
#include "text/Tokenizer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace kvsteer {

namespace fs = std::filesystem;

namespace {

// llava-v1.6's pinpoints, [height, width].
const nlohmann::json kPinpoints = {{336, 672}, {672, 336}, {672, 672}, {1008, 336}, {336, 1008}};

// The preset's config.json: LLaVA-1.5-7B's tower and projector; vicuna-7b's Llama decoder, or
// Mistral-7B's (GQA 32/8, a 14336 MLP, rope_theta 1e6, a 32k context without a sliding window).
nlohmann::ordered_json presetConfig(const std::string& preset, int64_t imageTokenIndex) {
    ModelConfig c = randomPreset("llava-1.5-7b");
    c.modelType = "llava_next";
    c.name = "random/" + preset;
    c.imageTokenIndex = imageTokenIndex;
    const bool mistral = preset == "llava-v1.6-mistral-7b";
    if (mistral) {
        c.text.intermediateSize = 14336;
        c.text.numKvHeads = 8;
        c.text.ropeTheta = 1e6;
        c.text.maxPositionEmbeddings = 32768;
    }
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(c.toJsonText());
    j["architectures"] = {"LlavaNextForConditionalGeneration"};
    j["model_type"] = "llava_next";
    j["image_grid_pinpoints"] = kPinpoints;
    if (mistral) {
        j["text_config"]["model_type"] = "mistral";
        j["text_config"]["sliding_window"] = nullptr;
    }
    return j;
}

void writeNextPreprocessorConfig(const std::string& dir) {
    const nlohmann::ordered_json j = {
        {"crop_size", {{"height", 336}, {"width", 336}}},
        {"do_center_crop", true},
        {"do_convert_rgb", true},
        {"do_normalize", true},
        {"do_pad", true},
        {"do_rescale", true},
        {"do_resize", true},
        {"image_grid_pinpoints", kPinpoints},
        {"image_mean", {0.48145466, 0.4578275, 0.40821073}},
        {"image_processor_type", "LlavaNextImageProcessor"},
        {"image_std", {0.26862954, 0.26130258, 0.27577711}},
        {"resample", 3},
        {"rescale_factor", 1.0 / 255.0},
        {"size", {{"shortest_edge", 336}}},
    };
    std::ofstream(fs::path(dir) / "preprocessor_config.json") << j.dump(2) << "\n";
}

} // namespace

const std::vector<std::string>& llavaNextPresetNames() {
    static const std::vector<std::string> names = {"llava-v1.6-vicuna-7b", "llava-v1.6-mistral-7b"};
    return names;
}

bool isLlavaNextPreset(const std::string& name) {
    for (const std::string& n : llavaNextPresetNames())
        if (n == name) return true;
    return false;
}

void writeRandomLlavaNext(const std::string& preset, c10::ScalarType dtype, const std::string& outDirectory,
                          const std::string& tokenizerDirectory, uint64_t seed, int64_t maxShardBytes) {
    if (!isLlavaNextPreset(preset)) throw Error("unknown LLaVA-NeXT preset '" + preset + "'");
    if (!fs::exists(fs::path(tokenizerDirectory) / "tokenizer.model"))
        throw Error("tokenizer source " + tokenizerDirectory + ": no tokenizer.model there (a LLaVA-NeXT preset needs a Llama-2 style tokenizer)");
    fs::create_directories(outDirectory);
    for (const char* f : {"tokenizer.model", "tokenizer_config.json", "added_tokens.json", "special_tokens_map.json"})
        if (fs::exists(fs::path(tokenizerDirectory) / f)) {
            const fs::path target = fs::path(outDirectory) / f;
            fs::copy_file(fs::path(tokenizerDirectory) / f, target, fs::copy_options::overwrite_existing);
            fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
        }
    const Tokenizer tok = Tokenizer::loadFromDirectory(outDirectory);
    if (tok.imageTokenId() < 0) throw Error("tokenizer source " + tokenizerDirectory + ": has no <image> token");
    const std::string text = presetConfig(preset, tok.imageTokenId()).dump(2);
    std::ofstream(fs::path(outDirectory) / "config.json") << text << "\n";
    writeNextPreprocessorConfig(outDirectory);

    const ModelConfig c = parseLlavaNextConfig(text, preset).model;   // what the loader will read
    std::vector<TensorSpec> layout = checkpointLayout(c);
    layout.push_back({"image_newline", {c.text.hiddenSize}});
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    writeCheckpoint(outDirectory, layout, dtype, maxShardBytes, [&](const TensorSpec& spec) { return randomWeight(spec, gen); });
}

} // namespace kvsteer
