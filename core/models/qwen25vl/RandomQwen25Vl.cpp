#include "models/qwen25vl/RandomQwen25Vl.h"

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

// Qwen2.5-VL-7B-Instruct's sizes.
constexpr int64_t kHidden = 3584, kIntermediate = 18944, kLayers = 28, kHeads = 28, kKvHeads = 4, kVocab = 152064;
constexpr int64_t kVisionWidth = 1280, kVisionIntermediate = 3420, kVisionDepth = 32, kVisionHeads = 16;

std::vector<TensorSpec> layout() {
    std::vector<TensorSpec> out;
    auto add = [&](std::string name, std::vector<int64_t> shape) { out.push_back({std::move(name), std::move(shape)}); };
    const int64_t e = kVisionWidth, m = kVisionIntermediate, merged = 4 * kVisionWidth;
    add("visual.patch_embed.proj.weight", {e, 3, 2, 14, 14});
    for (int64_t i = 0; i < kVisionDepth; ++i) {
        const std::string b = "visual.blocks." + std::to_string(i) + ".";
        add(b + "norm1.weight", {e});
        add(b + "norm2.weight", {e});
        add(b + "attn.qkv.weight", {3 * e, e});
        add(b + "attn.qkv.bias", {3 * e});
        add(b + "attn.proj.weight", {e, e});
        add(b + "attn.proj.bias", {e});
        for (const char* proj : {"gate_proj", "up_proj"}) {
            add(b + "mlp." + proj + ".weight", {m, e});
            add(b + "mlp." + proj + ".bias", {m});
        }
        add(b + "mlp.down_proj.weight", {e, m});
        add(b + "mlp.down_proj.bias", {e});
    }
    add("visual.merger.ln_q.weight", {e});
    add("visual.merger.mlp.0.weight", {merged, merged});
    add("visual.merger.mlp.0.bias", {merged});
    add("visual.merger.mlp.2.weight", {kHidden, merged});
    add("visual.merger.mlp.2.bias", {kHidden});
    const int64_t d = kHidden, head = kHidden / kHeads, kv = kKvHeads * head;
    add("model.embed_tokens.weight", {kVocab, d});
    for (int64_t i = 0; i < kLayers; ++i) {
        const std::string l = "model.layers." + std::to_string(i) + ".";
        add(l + "self_attn.q_proj.weight", {d, d});
        add(l + "self_attn.q_proj.bias", {d});
        add(l + "self_attn.k_proj.weight", {kv, d});
        add(l + "self_attn.k_proj.bias", {kv});
        add(l + "self_attn.v_proj.weight", {kv, d});
        add(l + "self_attn.v_proj.bias", {kv});
        add(l + "self_attn.o_proj.weight", {d, d});
        add(l + "mlp.gate_proj.weight", {kIntermediate, d});
        add(l + "mlp.up_proj.weight", {kIntermediate, d});
        add(l + "mlp.down_proj.weight", {d, kIntermediate});
        add(l + "input_layernorm.weight", {d});
        add(l + "post_attention_layernorm.weight", {d});
    }
    add("model.norm.weight", {d});
    add("lm_head.weight", {kVocab, d});
    return out;
}

} // namespace

void writeRandomQwen25Vl(c10::ScalarType dtype, const std::string& out, const std::string& from, uint64_t seed, int64_t maxShardBytes) {
    copyQwenTokenizerFiles(from, out);
    const Tokenizer tok = Tokenizer::loadFromDirectory(out);
    if (tok.vocabSize() > kVocab)
        throw Error("tokenizer source " + from + ": " + std::to_string(tok.vocabSize()) + " tokens exceed Qwen2.5-VL-7B's vocab_size 152064");
    // The hub's config.json (transformers 4.49 - 4.5x dialect), with the tokenizer's ids.
    const nlohmann::ordered_json config = {
        {"_name_or_path", std::string("random/") + kQwen25VlPreset},
        {"architectures", {"Qwen2_5_VLForConditionalGeneration"}},
        {"model_type", "qwen2_5_vl"},
        {"hidden_size", kHidden}, {"intermediate_size", kIntermediate}, {"num_hidden_layers", kLayers},
        {"num_attention_heads", kHeads}, {"num_key_value_heads", kKvHeads}, {"vocab_size", kVocab},
        {"max_position_embeddings", 128000}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0},
        {"rope_scaling", {{"type", "mrope"}, {"mrope_section", {16, 24, 24}}}},
        {"tie_word_embeddings", false}, {"torch_dtype", "bfloat16"}, {"use_sliding_window", false},
        {"bos_token_id", requiredTokenId(tok, "<|endoftext|>", from)}, {"eos_token_id", requiredTokenId(tok, "<|im_end|>", from)},
        {"image_token_id", requiredTokenId(tok, "<|image_pad|>", from)}, {"vision_start_token_id", requiredTokenId(tok, "<|vision_start|>", from)},
        {"vision_end_token_id", requiredTokenId(tok, "<|vision_end|>", from)},
        {"vision_config", {{"depth", kVisionDepth}, {"hidden_size", kVisionWidth}, {"intermediate_size", kVisionIntermediate},
                           {"num_heads", kVisionHeads}, {"out_hidden_size", kHidden}, {"fullatt_block_indexes", {7, 15, 23, 31}},
                           {"window_size", 112}, {"patch_size", 14}, {"spatial_merge_size", 2}, {"temporal_patch_size", 2},
                           {"in_chans", 3}, {"hidden_act", "silu"}, {"tokens_per_second", 2}}},
    };
    std::ofstream(fs::path(out) / "config.json") << config.dump(2) << "\n";
    // The processor as Qwen2.5-VL ships it: images of 56x56 to 3584x3584 pixels' worth.
    const nlohmann::ordered_json processor = {
        {"do_convert_rgb", true}, {"do_normalize", true}, {"do_rescale", true}, {"do_resize", true},
        {"image_mean", {0.48145466, 0.4578275, 0.40821073}}, {"image_std", {0.26862954, 0.26130258, 0.27577711}},
        {"image_processor_type", "Qwen2VLImageProcessor"}, {"processor_class", "Qwen2_5_VLProcessor"},
        {"min_pixels", 3136}, {"max_pixels", 12845056}, {"patch_size", 14}, {"merge_size", 2}, {"temporal_patch_size", 2},
        {"resample", 3}, {"rescale_factor", 1.0 / 255.0},
    };
    std::ofstream(fs::path(out) / "preprocessor_config.json") << processor.dump(2) << "\n";
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    writeCheckpoint(out, layout(), dtype, maxShardBytes, [&](const TensorSpec& spec) { return randomWeight(spec, gen); });
}

} // namespace kvsteer
