#include "models/qwen3vl/RandomQwen3Vl.h"

#include "Error.h"
#include "models/llava/RandomCheckpoint.h"
#include "models/qwen2vl/QwenTokenizerSource.h"
#include "text/Tokenizer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace kvsteer {

namespace fs = std::filesystem;

namespace {

// The hub checkpoints' sizes (Qwen/Qwen3-VL-{2B,4B,8B}-Instruct): a Qwen3 decoder (head_dim 128)
// and a tower of 24 or 27 blocks over a 48 x 48 position table.
struct Shape {
    const char* name;
    int64_t hidden, intermediate, layers, heads, kvHeads;
    bool tied;
    int64_t visionDepth, visionWidth, visionIntermediate;
    std::vector<int> deepstack;
};

const std::vector<Shape>& shapes() {
    static const std::vector<Shape> all = {
        {"qwen3-vl-2b", 2048, 6144, 28, 16, 8, true, 24, 1024, 4096, {5, 11, 17}},
        {"qwen3-vl-4b", 2560, 9728, 36, 32, 8, true, 24, 1024, 4096, {5, 11, 17}},
        {"qwen3-vl-8b", 4096, 12288, 36, 32, 8, false, 27, 1152, 4304, {8, 16, 24}},
    };
    return all;
}

constexpr int64_t kVocab = 151936, kHeadDim = 128, kVisionHeads = 16, kPositions = 2304, kPatch = 16;

const Shape& shapeOf(const std::string& preset) {
    for (const Shape& s : shapes())
        if (preset == s.name) return s;
    throw Error("unknown Qwen3-VL preset '" + preset + "'");
}

std::vector<TensorSpec> layout(const Shape& s) {
    std::vector<TensorSpec> out;
    auto add = [&](std::string name, std::vector<int64_t> shape) { out.push_back({std::move(name), std::move(shape)}); };
    const int64_t e = s.visionWidth, m = s.visionIntermediate, merged = 4 * e, d = s.hidden;
    add("model.visual.patch_embed.proj.weight", {e, 3, 2, kPatch, kPatch});
    add("model.visual.patch_embed.proj.bias", {e});
    add("model.visual.pos_embed.weight", {kPositions, e});
    for (int64_t i = 0; i < s.visionDepth; ++i) {
        const std::string b = "model.visual.blocks." + std::to_string(i) + ".";
        for (const char* norm : {"norm1", "norm2"}) {
            add(b + norm + ".weight", {e});
            add(b + norm + ".bias", {e});
        }
        add(b + "attn.qkv.weight", {3 * e, e});
        add(b + "attn.qkv.bias", {3 * e});
        add(b + "attn.proj.weight", {e, e});
        add(b + "attn.proj.bias", {e});
        add(b + "mlp.linear_fc1.weight", {m, e});
        add(b + "mlp.linear_fc1.bias", {m});
        add(b + "mlp.linear_fc2.weight", {e, m});
        add(b + "mlp.linear_fc2.bias", {e});
    }
    auto merger = [&](const std::string& prefix, int64_t normed) {
        add(prefix + "norm.weight", {normed});
        add(prefix + "norm.bias", {normed});
        add(prefix + "linear_fc1.weight", {merged, merged});
        add(prefix + "linear_fc1.bias", {merged});
        add(prefix + "linear_fc2.weight", {d, merged});
        add(prefix + "linear_fc2.bias", {d});
    };
    merger("model.visual.merger.", e);
    for (size_t k = 0; k < s.deepstack.size(); ++k) merger("model.visual.deepstack_merger_list." + std::to_string(k) + ".", merged);
    const int64_t q = s.heads * kHeadDim, kv = s.kvHeads * kHeadDim;
    add("model.language_model.embed_tokens.weight", {kVocab, d});
    for (int64_t i = 0; i < s.layers; ++i) {
        const std::string l = "model.language_model.layers." + std::to_string(i) + ".";
        add(l + "self_attn.q_proj.weight", {q, d});
        add(l + "self_attn.k_proj.weight", {kv, d});
        add(l + "self_attn.v_proj.weight", {kv, d});
        add(l + "self_attn.o_proj.weight", {d, q});
        add(l + "self_attn.q_norm.weight", {kHeadDim});
        add(l + "self_attn.k_norm.weight", {kHeadDim});
        add(l + "mlp.gate_proj.weight", {s.intermediate, d});
        add(l + "mlp.up_proj.weight", {s.intermediate, d});
        add(l + "mlp.down_proj.weight", {d, s.intermediate});
        add(l + "input_layernorm.weight", {d});
        add(l + "post_attention_layernorm.weight", {d});
    }
    add("model.language_model.norm.weight", {d});
    if (!s.tied) add("lm_head.weight", {kVocab, d});
    return out;
}

} // namespace

std::vector<std::string> qwen3VlPresetNames() {
    std::vector<std::string> names;
    for (const Shape& s : shapes()) names.push_back(s.name);
    return names;
}

bool isQwen3VlPreset(const std::string& name) {
    for (const Shape& s : shapes())
        if (name == s.name) return true;
    return false;
}

std::string qwen3VlPresetConfig(const std::string& preset, const Qwen3VlPresetIds& ids) {
    const Shape& s = shapeOf(preset);
    // The hub's config.json (transformers 4.57's dialect).
    const nlohmann::ordered_json config = {
        {"_name_or_path", "random/" + preset},
        {"architectures", {"Qwen3VLForConditionalGeneration"}},
        {"model_type", "qwen3_vl"},
        {"image_token_id", ids.image},
        {"vision_start_token_id", ids.visionStart},
        {"vision_end_token_id", ids.visionEnd},
        {"tie_word_embeddings", s.tied},
        {"text_config", {{"model_type", "qwen3_vl_text"}, {"hidden_size", s.hidden}, {"intermediate_size", s.intermediate},
                         {"num_hidden_layers", s.layers}, {"num_attention_heads", s.heads}, {"num_key_value_heads", s.kvHeads},
                         {"head_dim", kHeadDim}, {"vocab_size", kVocab}, {"max_position_embeddings", 262144}, {"rms_norm_eps", 1e-6},
                         {"rope_theta", 5000000}, {"attention_bias", false}, {"hidden_act", "silu"},
                         {"rope_scaling", {{"mrope_interleaved", true}, {"mrope_section", {24, 20, 20}}, {"rope_type", "default"}}},
                         {"bos_token_id", ids.bos}, {"eos_token_id", ids.eos}, {"tie_word_embeddings", s.tied}, {"dtype", "bfloat16"}}},
        {"vision_config", {{"model_type", "qwen3_vl"}, {"depth", s.visionDepth}, {"hidden_size", s.visionWidth},
                           {"intermediate_size", s.visionIntermediate}, {"num_heads", kVisionHeads}, {"out_hidden_size", s.hidden},
                           {"num_position_embeddings", kPositions}, {"deepstack_visual_indexes", s.deepstack}, {"patch_size", kPatch},
                           {"spatial_merge_size", 2}, {"temporal_patch_size", 2}, {"in_channels", 3}, {"hidden_act", "gelu_pytorch_tanh"}}},
    };
    return config.dump(2);
}

std::vector<TensorSpec> qwen3VlPresetLayout(const std::string& preset) { return layout(shapeOf(preset)); }

void writeRandomQwen3Vl(const std::string& preset, c10::ScalarType dtype, const std::string& out, const std::string& from, uint64_t seed,
                        int64_t maxShardBytes) {
    shapeOf(preset);   // an unknown preset is refused before anything is written
    copyQwenTokenizerFiles(from, out);
    const Tokenizer tok = Tokenizer::loadFromDirectory(out);
    if (tok.vocabSize() > kVocab)
        throw Error("tokenizer source " + from + ": " + std::to_string(tok.vocabSize()) + " tokens exceed Qwen3-VL's vocab_size 151936");
    Qwen3VlPresetIds ids;   // the tokenizer's own
    ids.image = requiredTokenId(tok, "<|image_pad|>", from);
    ids.visionStart = requiredTokenId(tok, "<|vision_start|>", from);
    ids.visionEnd = requiredTokenId(tok, "<|vision_end|>", from);
    ids.bos = requiredTokenId(tok, "<|endoftext|>", from);
    ids.eos = requiredTokenId(tok, "<|im_end|>", from);
    std::ofstream(fs::path(out) / "config.json") << qwen3VlPresetConfig(preset, ids) << "\n";
    // The processor as the hub ships it: 65,536 to 16,777,216 pixels, patch 16, mean = std = 0.5.
    const nlohmann::ordered_json processor = {
        {"size", {{"longest_edge", 16777216}, {"shortest_edge", 65536}}}, {"patch_size", kPatch}, {"temporal_patch_size", 2},
        {"merge_size", 2}, {"image_mean", {0.5, 0.5, 0.5}}, {"image_std", {0.5, 0.5, 0.5}},
        {"processor_class", "Qwen3VLProcessor"}, {"image_processor_type", "Qwen2VLImageProcessorFast"},
    };
    std::ofstream(fs::path(out) / "preprocessor_config.json") << processor.dump(2) << "\n";
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    writeCheckpoint(out, layout(shapeOf(preset)), dtype, maxShardBytes, [&](const TensorSpec& spec) { return randomWeight(spec, gen); });
}

} // namespace kvsteer
