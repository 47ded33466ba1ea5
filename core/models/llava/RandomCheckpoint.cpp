#include "models/llava/RandomCheckpoint.h"

#include "Error.h"
#include "io/SafeTensors.h"
#include "text/Tokenizer.h"

#include <ATen/core/Generator.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/normal.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace kvsteer {

namespace fs = std::filesystem;

std::vector<TensorSpec> checkpointLayout(const ModelConfig& c) {
    std::vector<TensorSpec> out;
    auto add = [&](std::string name, std::vector<int64_t> shape) { out.push_back({std::move(name), std::move(shape)}); };
    if (c.hasVision) {
        const VisionConfig& v = c.vision;
        const int64_t h = v.hiddenSize, m = v.intermediateSize, p = v.patchSize;
        const std::string pre = "vision_tower.vision_model.";
        add(pre + "embeddings.class_embedding", {h});
        add(pre + "embeddings.patch_embedding.weight", {h, 3, p, p});
        add(pre + "embeddings.position_embedding.weight", {v.numPatches() + 1, h});
        add(pre + "pre_layrnorm.weight", {h});
        add(pre + "pre_layrnorm.bias", {h});
        for (int i = 0; i < v.numLayers; ++i) {
            const std::string l = pre + "encoder.layers." + std::to_string(i) + ".";
            for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
                add(l + "self_attn." + proj + ".weight", {h, h});
                add(l + "self_attn." + proj + ".bias", {h});
            }
            add(l + "layer_norm1.weight", {h});
            add(l + "layer_norm1.bias", {h});
            add(l + "mlp.fc1.weight", {m, h});
            add(l + "mlp.fc1.bias", {m});
            add(l + "mlp.fc2.weight", {h, m});
            add(l + "mlp.fc2.bias", {h});
            add(l + "layer_norm2.weight", {h});
            add(l + "layer_norm2.bias", {h});
        }
        add(pre + "post_layernorm.weight", {h});
        add(pre + "post_layernorm.bias", {h});
        add("multi_modal_projector.linear_1.weight", {c.text.hiddenSize, h});
        add("multi_modal_projector.linear_1.bias", {c.text.hiddenSize});
        add("multi_modal_projector.linear_2.weight", {c.text.hiddenSize, c.text.hiddenSize});
        add("multi_modal_projector.linear_2.bias", {c.text.hiddenSize});
    }
    const TextConfig& t = c.text;
    const int64_t d = t.hiddenSize, q = int64_t(t.numHeads) * t.headDim, kv = int64_t(t.numKvHeads) * t.headDim;
    const std::string pre = c.hasVision ? "language_model.model." : "model.";
    add(pre + "embed_tokens.weight", {t.vocabSize, d});
    for (int i = 0; i < t.numLayers; ++i) {
        const std::string l = pre + "layers." + std::to_string(i) + ".";
        add(l + "self_attn.q_proj.weight", {q, d});
        add(l + "self_attn.k_proj.weight", {kv, d});
        add(l + "self_attn.v_proj.weight", {kv, d});
        add(l + "self_attn.o_proj.weight", {d, q});
        add(l + "mlp.gate_proj.weight", {t.intermediateSize, d});
        add(l + "mlp.up_proj.weight", {t.intermediateSize, d});
        add(l + "mlp.down_proj.weight", {d, t.intermediateSize});
        add(l + "input_layernorm.weight", {d});
        add(l + "post_attention_layernorm.weight", {d});
    }
    add(pre + "norm.weight", {d});
    if (!t.tieWordEmbeddings) add(c.hasVision ? "language_model.lm_head.weight" : "lm_head.weight", {t.vocabSize, d});
    return out;
}

void writeCheckpoint(const std::string& directory, const std::vector<TensorSpec>& layout, c10::ScalarType dtype,
                     int64_t maxShardBytes, const std::function<at::Tensor(const TensorSpec&)>& produce) {
    fs::create_directories(directory);
    const std::string dtypeName = safetensorsDtypeName(dtype);
    const int64_t elementSize = static_cast<int64_t>(safetensorsDtypeSize(dtypeName));

    // Split the layout into consecutive shards of at most maxShardBytes (a single bigger tensor gets its own).
    std::vector<std::vector<TensorInfo>> shards(1);
    int64_t shardBytes = 0, totalBytes = 0;
    for (const TensorSpec& spec : layout) {
        TensorInfo info;
        info.name = spec.name;
        info.dtype = dtypeName;
        info.shape = spec.shape;
        const int64_t bytes = info.numel() * elementSize;
        if (shardBytes > 0 && shardBytes + bytes > maxShardBytes) {
            shards.emplace_back();
            shardBytes = 0;
        }
        info.begin = static_cast<uint64_t>(shardBytes);
        info.end = static_cast<uint64_t>(shardBytes + bytes);
        shardBytes += bytes;
        totalBytes += bytes;
        shards.back().push_back(info);
    }

    const bool sharded = shards.size() > 1;
    auto shardName = [&](size_t i) {
        if (!sharded) return std::string("model.safetensors");
        char buf[64];
        std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
        return std::string(buf);
    };
    nlohmann::ordered_json weightMap;
    size_t next = 0;
    for (size_t s = 0; s < shards.size(); ++s) {
        SafeTensorsStreamWriter writer((fs::path(directory) / shardName(s)).string(), shards[s], {{"format", "pt"}});
        for (const TensorInfo& info : shards[s]) {
            at::Tensor t = produce(layout[next++]).to(dtype).contiguous();
            writer.write(t);
            weightMap[info.name] = shardName(s);
        }
        writer.finish();
    }
    if (sharded) {
        nlohmann::ordered_json index = {{"metadata", {{"total_size", totalBytes}}}, {"weight_map", weightMap}};
        const fs::path path = fs::path(directory) / "model.safetensors.index.json";
        std::ofstream(path) << index.dump(2) << "\n";
    }
}

std::vector<std::string> randomPresetNames() { return {"llava-1.5-7b", "llava-1.5-13b", "llava-tinyllama-1.1b", "llava-micro", "llama-3.1-8b"}; }

ModelConfig randomPreset(const std::string& name) {
    ModelConfig c;
    c.modelType = "llava";
    c.name = "random/" + name;
    c.hasVision = true;
    // CLIP ViT-L/14 at 336 px, as in every LLaVA-1.5.
    c.vision.hiddenSize = 1024;
    c.vision.intermediateSize = 4096;
    c.vision.numLayers = 24;
    c.vision.numHeads = 16;
    c.vision.imageSize = 336;
    c.vision.patchSize = 14;
    c.text.vocabSize = 32064;
    c.text.maxPositionEmbeddings = 4096;
    c.text.rmsNormEps = 1e-5;
    if (name == "llava-1.5-7b") {
        c.text.hiddenSize = 4096;
        c.text.intermediateSize = 11008;
        c.text.numLayers = 32;
        c.text.numHeads = c.text.numKvHeads = 32;
    } else if (name == "llava-1.5-13b") {
        c.text.hiddenSize = 5120;
        c.text.intermediateSize = 13824;
        c.text.numLayers = 40;
        c.text.numHeads = c.text.numKvHeads = 40;
    } else if (name == "llava-micro") {
        // Real LLaVA-1.5 geometry (336 px, 24x24 patches), tiny widths: for tests of the tooling.
        c.vision.hiddenSize = 32;
        c.vision.intermediateSize = 64;
        c.vision.numLayers = 3;
        c.vision.numHeads = 2;
        c.text.hiddenSize = 64;
        c.text.intermediateSize = 128;
        c.text.numLayers = 2;
        c.text.numHeads = 4;
        c.text.numKvHeads = 2;
    } else if (name == "llama-3.1-8b") {
        // Llama-3.1-8B's decoder alone (text only): GQA 32/8, the 128k vocabulary, llama3 RoPE.
        c.modelType = "llama";
        c.hasVision = false;
        c.text.vocabSize = 128256;
        c.text.hiddenSize = 4096;
        c.text.intermediateSize = 14336;
        c.text.numLayers = 32;
        c.text.numHeads = 32;
        c.text.numKvHeads = 8;
        c.text.ropeTheta = 500000.0;
        c.text.ropeScaling = {"llama3", 8.0, 1.0, 4.0, 8192};
        c.text.maxPositionEmbeddings = 131072;
        c.text.bosTokenId = 128000;
        c.text.eosTokenIds = {128001, 128008, 128009};
    } else if (name == "llava-tinyllama-1.1b") {
        c.text.hiddenSize = 2048;
        c.text.intermediateSize = 5632;
        c.text.numLayers = 22;
        c.text.numHeads = 32;
        c.text.numKvHeads = 4;
        c.text.maxPositionEmbeddings = 2048;
    } else {
        std::string known;
        for (const auto& n : randomPresetNames()) known += (known.empty() ? "" : ", ") + n;
        throw Error("unknown preset '" + name + "' (expected one of: " + known + ")");
    }
    c.text.headDim = c.text.hiddenSize / c.text.numHeads;
    return c;
}

namespace {

// A LLaVA preset takes a SentencePiece tokenizer.model; a Llama-3 preset a tokenizer.json alone
// (with a tokenizer.model beside it the directory would load as a Llama-2-style model).
void copyTokenizerFiles(const std::string& from, const std::string& to, bool byteLevel) {
    const char* needed = byteLevel ? "tokenizer.json" : "tokenizer.model";
    if (!fs::exists(fs::path(from) / needed))
        throw Error("tokenizer source " + from + ": no " + needed + " there" +
                    (byteLevel ? " (a Llama-3 preset needs Llama-3's tokenizer: a Llama-3 checkpoint's directory)" : ""));
    for (const char* f : {needed, "tokenizer_config.json", "added_tokens.json", "special_tokens_map.json"})
        if (fs::exists(fs::path(from) / f)) {
            const fs::path target = fs::path(to) / f;
            fs::copy_file(fs::path(from) / f, target, fs::copy_options::overwrite_existing);
            // The source may be read-only (a shared reference copy); the new model is the user's.
            fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
        }
}

} // namespace

void writePreprocessorConfig(const ModelConfig& c, const std::string& dir) {
    const int s = c.vision.imageSize;
    nlohmann::ordered_json j = {
        {"crop_size", {{"height", s}, {"width", s}}},
        {"do_center_crop", true},
        {"do_convert_rgb", true},
        {"do_normalize", true},
        {"do_rescale", true},
        {"do_resize", true},
        {"image_mean", {0.48145466, 0.4578275, 0.40821073}},
        {"image_processor_type", "CLIPImageProcessor"},
        {"image_std", {0.26862954, 0.26130258, 0.27577711}},
        {"resample", 3},
        {"rescale_factor", 1.0 / 255.0},
        {"size", {{"shortest_edge", s}}},
    };
    std::ofstream(fs::path(dir) / "preprocessor_config.json") << j.dump(2) << "\n";
}

void writeRandomCheckpoint(const ModelConfig& config, c10::ScalarType dtype, const std::string& outDirectory,
                      const std::string& tokenizerDirectory, uint64_t seed, int64_t maxShardBytes) {
    fs::create_directories(outDirectory);
    // Llama-3's 128,256 ids are its byte-level BPE tokenizer's (a tokenizer.json); every other
    // preset's vocabulary is LLaVA's SentencePiece one.
    copyTokenizerFiles(tokenizerDirectory, outDirectory, config.text.vocabSize == 128256);
    ModelConfig c = config;
    const Tokenizer tok = Tokenizer::loadFromDirectory(outDirectory);
    if (c.hasVision) {
        if (tok.imageTokenId() < 0) throw Error("tokenizer source " + tokenizerDirectory + ": has no <image> token");
        c.imageTokenIndex = tok.imageTokenId();
    }
    if (tok.vocabSize() > c.text.vocabSize)
        throw Error("tokenizer source " + tokenizerDirectory + ": " + std::to_string(tok.vocabSize()) +
                    " tokens exceed the preset's vocab_size " + std::to_string(c.text.vocabSize));
    std::ofstream(fs::path(outDirectory) / "config.json") << c.toJsonText() << "\n";
    if (c.hasVision) writePreprocessorConfig(c, outDirectory);

    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    writeCheckpoint(outDirectory, checkpointLayout(c), dtype, maxShardBytes, [&](const TensorSpec& spec) { return randomWeight(spec, gen); });
}

at::Tensor randomWeight(const TensorSpec& spec, at::Generator& generator) {
    const std::string& n = spec.name;
    auto endsWith = [&](const std::string& s) { return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0; };
    const bool isNorm = n.find("norm") != std::string::npos || n.find("ln_q") != std::string::npos;   // layer_norm*, *layrnorm, norm1, ln_q
    if (isNorm && endsWith(".weight")) return at::ones(spec.shape);
    if (endsWith(".bias")) return at::zeros(spec.shape);
    return at::normal(0.0, 0.02, spec.shape, generator);
}

} // namespace kvsteer
