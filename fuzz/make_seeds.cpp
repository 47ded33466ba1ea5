// Writes the seed corpora: for every target a few valid inputs of a few KB, made by the
// project's own writers (writeSafeTensors, saveSteeringFile, savePng, saveMaskPng,
// ModelConfig::toJsonText, the tokenizer files of the demo model) so the fuzzer starts from
// files the loaders accept. Usage: fuzz_make_seeds OUT_DIR (one folder per target under it).
// JPEG, BMP and GIF seeds are converted from the PNGs by scripts/fuzz.sh --make-seeds.
#include "FuzzSupport.h"
#include "Tokenizers.h"
#include "io/Image.h"
#include "io/SafeTensors.h"
#include "models/ModelRegistry.h"
#include "steer/Mask.h"
#include "steer/SteeringVectors.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/linspace.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace kvsteer;
namespace fs = std::filesystem;

namespace {

std::string out;

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void put(const std::string& target, const std::string& name, const std::string& bytes) {
    fs::create_directories(out + "/" + target);
    std::ofstream(out + "/" + target + "/" + name, std::ios::binary) << bytes;
}

std::string prefixed(uint8_t mode, const std::string& bytes) { return std::string(1, char(mode)) + bytes; }

// A safetensors file written by writeSafeTensors, returned as bytes.
std::string safetensorsBytes(const std::vector<NamedTensor>& tensors, const std::map<std::string, std::string>& meta = {}) {
    const std::string path = fuzz::scratchDir() + "/seed.safetensors";
    writeSafeTensors(path, tensors, meta);
    return readFile(path);
}

std::string pngBytes(const ImageU8& img) {
    const std::string path = fuzz::scratchDir() + "/seed.png";
    savePng(path, img);
    return readFile(path);
}

ImageU8 gradient(int w, int h) {
    ImageU8 img(w, h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < 3; ++c) img.at(y, x, c) = uint8_t((x * 37 + y * 11 + c * 80) & 255);
    return img;
}

// A float32 C-order .npy, version 1.0 (the layout numpy.save writes).
std::string npyBytes(int h, int w) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(h) + ", " +
                         std::to_string(w) + "), }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string s = "\x93NUMPY";
    s += char(1);
    s += char(0);
    s += char(header.size() & 255);
    s += char(header.size() >> 8);
    s += header;
    for (int i = 0; i < h * w; ++i) {
        const float v = float((i * 7) % 10) / 10.0f;
        s.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    return s;
}

void safetensorsSeeds() {
    put("safetensors", "mixed", safetensorsBytes({{"a.f32", at::arange(6, at::kFloat).reshape({2, 3})},
                                                  {"b.f16", at::arange(4, at::kHalf)},
                                                  {"c.bf16", at::arange(4, at::kBFloat16).reshape({2, 2})},
                                                  {"d.i64", at::arange(3, at::kLong)},
                                                  {"e.scalar", at::zeros({}, at::kFloat)},
                                                  {"f.empty", at::zeros({0, 3}, at::kFloat)}},
                                                 {{"format", "pt"}, {"note", "seed"}}));
    put("safetensors", "one", safetensorsBytes({{"x", at::arange(16, at::kFloat)}}));
}

void shardIndexSeeds() {
    nlohmann::json index = {{"metadata", {{"total_size", 120}}},
                            {"weight_map",
                             {{"model.embed_tokens.weight", "a.safetensors"},
                              {"lm_head.weight", "a.safetensors"},
                              {"model.norm.weight", "b.safetensors"},
                              {"visual.patch_embed.proj.weight", "b.safetensors"}}}};
    put("shard_index", "both-shards", index.dump(2));
    index["weight_map"].erase("visual.patch_embed.proj.weight");
    index["weight_map"].erase("model.norm.weight");
    put("shard_index", "one-shard", index.dump(2));
}

void configSeeds() {
    put("model_config", "demo-llava", readFile(fuzz::demoModelDir() + "/config.json"));
    put("model_config", "demo-preprocessor", readFile(fuzz::demoModelDir() + "/preprocessor_config.json"));
    ModelConfig llama = parseModelConfig(readFile(fuzz::demoModelDir() + "/config.json"), "demo config.json");
    put("model_config", "llava-written", llama.toJsonText());
    llama.modelType = "llama";
    llama.hasVision = false;
    // A text-only Llama config: toJsonText's text_config, lifted to the top level.
    nlohmann::json text = nlohmann::json::parse(llama.toJsonText())["text_config"];
    text["model_type"] = "llama";
    put("model_config", "llama", text.dump(2));
    const std::string ref = fuzz::referenceDir();
    if (ref.empty()) return;
    for (const char* m : {"tiny-paligemma", "tiny-qwen2vl", "tiny-qwen2"}) {
        put("model_config", std::string(m), readFile(ref + "/" + m + "/config.json"));
        if (fs::exists(ref + "/" + m + "/preprocessor_config.json"))
            put("model_config", std::string(m) + "-preprocessor", readFile(ref + "/" + m + "/preprocessor_config.json"));
    }
}

void tokenizerSeeds() {
    put("sentencepiece_model", "demo", readFile(fuzz::demoModelDir() + "/tokenizer.model"));
    put("tokenizer_json", "0-tokenizer.json", prefixed(0, fuzz::smallTokenizerJson()));
    put("tokenizer_json", "1-vocab.json", prefixed(1, fuzz::smallVocabJson()));
    put("tokenizer_json", "2-merges.txt", prefixed(2, fuzz::smallMergesTxt()));
    put("tokenizer_json", "3-tokenizer_config.json", prefixed(3, readFile(fuzz::demoModelDir() + "/tokenizer_config.json")));
    put("tokenizer_json", "4-added_tokens.json", prefixed(4, readFile(fuzz::demoModelDir() + "/added_tokens.json")));
    const std::string ref = fuzz::referenceDir();
    if (!ref.empty()) {
        put("tokenizer_json", "5-qwen-tokenizer_config.json", prefixed(5, readFile(ref + "/tiny-qwen2vl/tokenizer_config.json")));
        put("tokenizer_json", "6-qwen-added_tokens.json", prefixed(6, readFile(ref + "/tiny-qwen2vl/added_tokens.json")));
        put("tokenizer_json", "3-llava-tokenizer_config.json", prefixed(3, readFile(ref + "/tiny-llava/tokenizer_config.json")));
    }
    const std::vector<std::string> texts = {
        "USER: <image>\nWhat colour is the circle? ASSISTANT:", "  leading  spaces\tand\ttabs\n\n",
        "unicode: héllo wörld \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "digits 1234567 3.14",
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>hi<|im_end|>", "<bos><loc0213><seg105>x\n"};
    for (uint8_t which = 0; which < 4; ++which) {
        for (size_t i = 0; i < texts.size(); ++i) {
            const std::string name = std::to_string(which) + "-" + std::to_string(i);
            put("sentencepiece_text", name, prefixed(which, texts[i]));
            const Tokenizer& tok = fuzz::textTokenizer(which);
            std::string ids;
            for (int64_t id : tok.encode(texts[i], true)) {
                const int64_t raw = id + 2;   // the target maps raw % (vocab + 4) - 2
                ids += char(raw & 255);
                ids += char((raw >> 8) & 255);
                ids += char((raw >> 16) & 255);
            }
            put("detokenizer", name, prefixed(which, ids));
        }
    }
}

void imageSeeds() {
    put("image", "gradient-rgb.png", pngBytes(gradient(16, 12)));
    put("image", "tiny.png", pngBytes(gradient(1, 1)));
}

void maskSeeds() {
    put("mask", "rect-16", prefixed(0, "2,3,9,12"));
    put("mask", "rect-12x20", prefixed(4, "0,0,11,19"));
    const std::string pngPath = fuzz::scratchDir() + "/mask.png";
    saveMaskPng(pngPath, at::linspace(0, 1, 12 * 20).reshape({12, 20}), 2);
    put("mask", "png-12x20", prefixed(1 | 4, readFile(pngPath)));
    put("mask", "npy-16", prefixed(2, npyBytes(16, 16)));
    put("mask", "npy-12x20", prefixed(2 | 4, npyBytes(12, 20)));
    put("mask", "safetensors-16", prefixed(3, safetensorsBytes({{"mask", at::linspace(0, 1, 256).reshape({16, 16})}})));
    put("mask", "safetensors-12x20",
        prefixed(3 | 4, safetensorsBytes({{"steer.mask", at::linspace(0, 1, 240).reshape({12, 20})}})));
}

void steeringSeeds() {
    const std::shared_ptr<Model> model = loadModel(fuzz::demoModelDir());
    const TextConfig& t = model->config().text;
    SteeringVectors v;
    for (int l = 0; l < t.numLayers; ++l) {
        v.keys.push_back(at::randn({t.numKvHeads, t.headDim}));
        v.values.push_back(l % 2 ? at::Tensor() : at::randn({t.numKvHeads, t.headDim}));
    }
    v.mask = at::zeros({24, 24});
    SteeringFileInfo info;
    recordModel(info, *model);
    info.op = SteeringOperator::Add;
    info.ck = {1.0};
    info.cv = {0.5, 1.0, 1.5, 2.0};
    info.layers = {0, 1, 2, 3};
    info.headMask = {{0}, {}, {1}, {0, 1}};
    info.recipe = "region";
    info.recipeInputsJson = R"({"prompt": "What colour?", "mask": "rect:0,0,3,3"})";
    info.version = "seed";
    const std::string path = fuzz::scratchDir() + "/vectors.safetensors";
    saveSteeringFile(path, v, info);
    put("steering_vectors", "region", readFile(path));
    v.keySpace = KeySpace::PreRope;
    v.mask = at::Tensor();
    saveSteeringFile(path, v, SteeringFileInfo{info.modelName, info.configHash});
    put("steering_vectors", "prerope-minimal", readFile(path));
    put("steering_vectors", "shipped-red-to-blue", readFile(std::string(KVSTEER_SOURCE_DIR) + "/resources/demo-vectors/red-to-blue.safetensors"));
}

void textPairSeeds() {
    put("text_pairs", "three",
        "{\"positive\": \"USER: The sky is blue. ASSISTANT:\", \"negative\": \"USER: The sky is red. ASSISTANT:\"}\n"
        "\n"
        "{\"positive\": \"caf\\u00e9 \\\"quoted\\\"\", \"negative\": \"tea\"}\r\n"
        "  {\"negative\": \"n\", \"positive\": \"p\", \"extra\": [1, 2]}\n");
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: fuzz_make_seeds OUT_DIR\n";
        return 2;
    }
    out = argv[1];
    safetensorsSeeds();
    shardIndexSeeds();
    configSeeds();
    tokenizerSeeds();
    imageSeeds();
    maskSeeds();
    steeringSeeds();
    textPairSeeds();
    return 0;
}
