#include "TestSupport.h"

#include "Error.h"
#include "cache/KVCache.h"
#include "generate/Session.h"
#include "models/Model.h"
#include "models/Prompt.h"
#include "io/Checkpoint.h"
#include "models/llava/RandomCheckpoint.h"
#include "io/SafeTensors.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/topk.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <tuple>

#include <QProcess>
#include <QStringList>
#include <QtTest>

namespace kvsteer::test {

namespace fs = std::filesystem;

std::string referenceDir() { return fs::path(KVSTEER_REFERENCE_DIR).lexically_normal().string(); }
std::string referenceModelDir() { return referenceDir() + "/tiny-llava"; }
std::string referencePaliGemmaDir() { return referenceDir() + "/tiny-paligemma"; }
std::string referenceQwen2VlDir() { return referenceDir() + "/tiny-qwen2vl"; }
std::string referenceTensorsPath(const std::string& caseName) { return referenceDir() + "/expected/" + caseName + ".safetensors"; }
std::string cliPath() { return KVSTEER_CLI_PATH; }

double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
    if (a.sizes() != b.sizes())
        throw Error("maxAbsDiff: shapes differ: " + std::string(c10::str(a.sizes())) + " vs " + std::string(c10::str(b.sizes())));
    if (a.numel() == 0) return 0;
    return (a.to(at::kCPU).to(at::kDouble) - b.to(at::kCPU).to(at::kDouble)).abs().max().item<double>();
}

bool ReferenceCases::load() {
    std::ifstream in(referenceDir() + "/" + set + "/summary.json");
    if (!in.good()) return false;
    summary = nlohmann::json::parse(in);
    return true;
}

nlohmann::json ReferenceCases::caseInfo(const std::string& name) const {
    for (const auto& c : summary["cases"])
        if (c["name"] == name) return c;
    throw Error(set + ": no case " + name);
}

std::string ReferenceCases::tensorsPath(const std::string& caseName) const { return referenceDir() + "/" + set + "/" + caseName + ".safetensors"; }

double relativeDiff(const at::Tensor& a, const at::Tensor& ref) {
    return maxAbsDiff(a, ref) / std::max(ref.abs().max().item<double>(), 1e-30);
}

double cacheRelativeDiff(const KVCache& cache, const SafeTensorsFile& expected) {
    double worst = 0;
    for (int l = 0; l < cache.numLayers(); ++l)
        for (bool keys : {true, false}) {
            const at::Tensor want = expected.tensor((keys ? "past_key." : "past_value.") + std::to_string(l)).narrow(2, 0, cache.size());
            worst = std::max(worst, relativeDiff(keys ? cache.keys(l) : cache.values(l), want));
        }
    return worst;
}

void copyModelMetadata(const std::string& dir, const std::string& source) {
    fs::create_directories(dir);
    for (const auto& entry : fs::directory_iterator(source)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("model", 0) == 0 && name.find(".safetensors") != std::string::npos) continue;
        fs::copy_file(entry.path(), fs::path(dir) / name, fs::copy_options::overwrite_existing);
    }
}

namespace {

// llava-hf names -> the newer transformers names, so the converted copy exercises both schemes.
std::string newerName(const std::string& n) {
    auto swap = [&](const std::string& from, const std::string& to) -> std::string {
        return n.rfind(from, 0) == 0 ? to + n.substr(from.size()) : "";
    };
    for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
             {"model.language_model.", "model.language_model."},   // already the newer names (Qwen3-VL)
             {"model.visual.", "model.visual."},
             {"language_model.model.", "model.language_model."},
             {"language_model.lm_head.", "lm_head."},
             {"vision_tower.", "model.vision_tower."},
             {"multi_modal_projector.", "model.multi_modal_projector."},
             {"visual.", "model.visual."},                       // Qwen2-VL
             {"image_newline", "model.image_newline"},           // LLaVA-NeXT
             {"model.", "model.language_model."}})
        if (auto s = swap(from, to); !s.empty()) return s;
    return n;
}

} // namespace

void writeConvertedCopy(const std::string& sourceDir, const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes,
                        const std::string& configJson, c10::ScalarType roundedTo) {
    copyModelMetadata(dir, sourceDir);
    const SafeTensorsFile source(sourceDir + "/model.safetensors");
    std::vector<TensorSpec> layout;
    for (const auto& name : source.names()) layout.push_back({newerName(name), source.info(name).shape});
    size_t i = 0;
    const auto names = source.names();
    writeCheckpoint(dir, layout, dtype, maxShardBytes, [&](const TensorSpec&) {
        const at::Tensor t = source.tensor(names[i++]);
        return roundedTo == c10::ScalarType::Undefined ? t : t.to(roundedTo).to(at::kFloat);
    });
    std::ofstream(fs::path(dir) / "config.json", std::ios::trunc) << configJson;
}

void writeConvertedReferenceModel(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes) {
    // A config.json as trimmed as real downloads: only what differs from transformers' defaults.
    writeConvertedCopy(referenceModelDir(), dir, dtype, maxShardBytes, R"({
  "architectures": ["LlavaForConditionalGeneration"],
  "model_type": "llava",
  "text_config": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "rms_norm_eps": 1e-05, "vocab_size": 32064,
                  "max_position_embeddings": 4096, "model_type": "llama"},
  "vision_config": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3, "num_attention_heads": 2,
                    "image_size": 336, "patch_size": 14, "model_type": "clip_vision_model"}
}
)");
}

void writeConvertedPaliGemma(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes) {
    // Everything equal to GemmaConfig's / SiglipVisionConfig's defaults left out (rope_theta,
    // rms_norm_eps, tie_word_embeddings, the activations, image_size 224, layer_norm_eps).
    writeConvertedCopy(referencePaliGemmaDir(), dir, dtype, maxShardBytes, R"({
  "architectures": ["PaliGemmaForConditionalGeneration"],
  "model_type": "paligemma",
  "image_token_index": 2176,
  "hidden_size": 64,
  "projection_dim": 64,
  "text_config": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
                  "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 2240, "model_type": "gemma"},
  "vision_config": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3, "num_attention_heads": 2,
                    "patch_size": 14, "model_type": "siglip_vision_model"}
}
)");
}

void writeConvertedQwen2Vl(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes) {
    // Qwen2VLConfig's defaults left out (rope_theta 1e6, hidden_act silu, the vision tower's
    // patch sizes); rms_norm_eps and tie_word_embeddings differ from them and stay.
    writeConvertedCopy(referenceQwen2VlDir(), dir, dtype, maxShardBytes, R"({
  "architectures": ["Qwen2VLForConditionalGeneration"],
  "model_type": "qwen2_vl",
  "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "tie_word_embeddings": true, "vocab_size": 3072,
  "bos_token_id": 3000, "eos_token_id": 3002, "image_token_id": 3012, "video_token_id": 3013,
  "vision_start_token_id": 3009, "vision_end_token_id": 3010, "vision_token_id": 3011,
  "rope_scaling": {"mrope_section": [2, 3, 3], "type": "mrope"},
  "vision_config": {"depth": 2, "embed_dim": 32, "hidden_size": 64, "mlp_ratio": 2, "num_heads": 2}
}
)");
}

std::string referenceQwen25VlDir() { return referenceDir() + "/tiny-qwen25vl"; }

void writeConvertedQwen25Vl(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes, c10::ScalarType roundedTo) {
    // The hub's form: Qwen2_5_VLConfig's defaults left out (hidden_act silu, the patch sizes,
    // spatial_merge_size 2, window_size 112).
    writeConvertedCopy(referenceQwen25VlDir(), dir, dtype, maxShardBytes, R"({
  "architectures": ["Qwen2_5_VLForConditionalGeneration"],
  "model_type": "qwen2_5_vl",
  "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "tie_word_embeddings": true, "vocab_size": 3072,
  "bos_token_id": 3000, "eos_token_id": 3002, "image_token_id": 3012, "video_token_id": 3013,
  "vision_start_token_id": 3009, "vision_end_token_id": 3010, "vision_token_id": 3011,
  "rope_theta": 1000000.0, "rope_scaling": {"mrope_section": [2, 3, 3], "type": "mrope"},
  "torch_dtype": "bfloat16",
  "vision_config": {"depth": 4, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64,
                    "fullatt_block_indexes": [1, 3], "in_chans": 3, "tokens_per_second": 4}
}
)", roundedTo);
}

std::string referenceQwen3VlDir() { return referenceDir() + "/tiny-qwen3vl"; }

void writeConvertedQwen3Vl(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes) {
    // The checkpoint's config in the other dialect: transformers 5's text_config.rope_parameters
    // becomes the hub's (4.57) rope_theta + rope_scaling, and the reverse. Keys equal to
    // transformers' defaults are left out, and text_config's tie_word_embeddings says the opposite
    // of the top level's (only the top level counts). Read from the files, so another checkpoint of
    // the family converts the same way.
    nlohmann::json c = nlohmann::json::parse(std::ifstream(fs::path(referenceQwen3VlDir()) / "config.json"));
    nlohmann::json& text = c["text_config"];
    if (text.contains("rope_parameters")) {
        nlohmann::json rope = text["rope_parameters"];
        text["rope_theta"] = rope.value("rope_theta", 500000.0);
        rope.erase("rope_theta");
        text["rope_scaling"] = rope;
        text.erase("rope_parameters");
    } else if (text.contains("rope_scaling")) {
        nlohmann::json rope = text["rope_scaling"];
        rope["rope_theta"] = text.value("rope_theta", 500000.0);
        text.erase("rope_theta");
        text["rope_parameters"] = rope;
        text.erase("rope_scaling");
    }
    auto dropDefault = [](nlohmann::json& j, const char* key, const nlohmann::json& value) {
        if (j.contains(key) && j[key] == value) j.erase(key);
    };
    dropDefault(text, "hidden_act", "silu");
    dropDefault(text, "rms_norm_eps", 1e-6);
    dropDefault(text, "attention_bias", false);
    nlohmann::json& vision = c["vision_config"];
    dropDefault(vision, "hidden_act", "gelu_pytorch_tanh");
    for (const char* key : {"patch_size", "temporal_patch_size", "spatial_merge_size", "in_channels"})
        dropDefault(vision, key, std::string(key) == "patch_size" ? 16 : std::string(key) == "in_channels" ? 3 : 2);
    text["tie_word_embeddings"] = !c.value("tie_word_embeddings", false);
    c.erase("dtype");
    text["dtype"] = "bfloat16";
    writeConvertedCopy(referenceQwen3VlDir(), dir, dtype, maxShardBytes, c.dump(2));
}

void writePlainLlamaFromReference(const std::string& dir) {
    copyModelMetadata(dir);
    fs::remove(fs::path(dir) / "preprocessor_config.json");
    const SafeTensorsFile source(referenceModelDir() + "/model.safetensors");
    std::vector<NamedTensor> tensors;
    for (const auto& name : source.names()) {
        if (name.rfind("language_model.model.", 0) == 0) tensors.push_back({"model." + name.substr(21), source.tensor(name)});
        if (name == "language_model.lm_head.weight") tensors.push_back({"lm_head.weight", source.tensor(name)});
    }
    writeSafeTensors((fs::path(dir) / "model.safetensors").string(), tensors);
    std::ofstream(fs::path(dir) / "config.json", std::ios::trunc) << R"({"model_type": "llama", "hidden_size": 64,
  "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-05, "vocab_size": 32064, "max_position_embeddings": 4096})";
}

std::string referenceLlama3Dir() { return referenceDir() + "/tiny-llama3"; }

void writeConvertedLlama3(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes, c10::ScalarType roundedTo) {
    copyModelMetadata(dir, referenceLlama3Dir());
    const SafeTensorsFile source(referenceLlama3Dir() + "/model.safetensors");
    auto weight = [&](const std::string& name) {
        const at::Tensor t = source.tensor(name);
        return roundedTo == c10::ScalarType::Undefined ? t : t.to(roundedTo).to(at::kFloat);
    };
    std::vector<TensorSpec> layout;
    for (const auto& name : source.names()) layout.push_back({name, source.info(name).shape});
    layout.push_back({"lm_head.weight", source.info("model.embed_tokens.weight").shape});   // untied: its own copy
    writeCheckpoint(dir, layout, dtype, maxShardBytes,
                    [&](const TensorSpec& spec) { return weight(spec.name == "lm_head.weight" ? "model.embed_tokens.weight" : spec.name); });
    // LlamaConfig's defaults left out: hidden_act silu, head_dim (hidden / heads), attention and
    // MLP biases false, tie_word_embeddings false (the head is its own tensor here).
    std::ofstream(fs::path(dir) / "config.json", std::ios::trunc) << R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "vocab_size": 128256, "hidden_size": 16, "intermediate_size": 48, "num_hidden_layers": 2,
  "num_attention_heads": 2, "num_key_value_heads": 1, "rms_norm_eps": 1e-05, "max_position_embeddings": 131072,
  "rope_theta": 500000.0, "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
  "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"}
})";
}

void writeRoundedReferenceModel(const std::string& dir, c10::ScalarType dtype) {
    copyModelMetadata(dir);
    const SafeTensorsFile source(referenceModelDir() + "/model.safetensors");
    std::vector<NamedTensor> tensors;
    for (const auto& name : source.names()) tensors.push_back({name, source.tensor(name).to(dtype).to(at::kFloat)});
    writeSafeTensors((fs::path(dir) / "model.safetensors").string(), tensors);
}

std::vector<int64_t> toIds(const at::Tensor& t) {
    at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous().reshape({-1});
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

ProcessResult runCli(const std::vector<std::string>& args, int timeoutMs) { return runProgram(cliPath(), args, timeoutMs); }

ProcessResult runProgram(const std::string& program, const std::vector<std::string>& args, int timeoutMs) {
    QProcess p;
    QStringList list;
    for (const auto& a : args) list << QString::fromStdString(a);
    p.start(QString::fromStdString(program), list);
    ProcessResult r;
    if (!p.waitForStarted(30000)) {
        r.err = "could not start " + program;
        return r;
    }
    p.closeWriteChannel();
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = "timed out";
        r.crashed = true;
        return r;
    }
    r.crashed = p.exitStatus() != QProcess::NormalExit;
    r.exitCode = p.exitCode();
    r.out = p.readAllStandardOutput().toStdString();
    r.err = p.readAllStandardError().toStdString();
    return r;
}

PrefillAgainstReference prefillAgainstReference(const Model& model, const Prompt& p, const SafeTensorsFile& expected) {
    PrefillAgainstReference d;
    const ImageFeatures image = p.hasImage ? model.encodePromptImage(p) : ImageFeatures();
    if (p.hasImage) d.features = relativeDiff(image.tokens, expected.tensor("image_features"));
    for (size_t k = 0; k < image.deepstack.size(); ++k)   // Qwen3-VL's DeepStack rows
        d.features = std::max(d.features, relativeDiff(image.deepstack[k], expected.tensor("deepstack_features." + std::to_string(k))));
    const at::Tensor embeds = model.embedPrompt(p.ids, image.tokens);
    d.embeds = relativeDiff(embeds, expected.tensor("inputs_embeds"));
    const TextConfig& t = model.config().text;
    KVCache cache(t.numLayers, 1, t.numKvHeads, t.headDim, int64_t(p.ids.size()), at::kFloat);
    cache.positionOffset = p.positionOffset;
    cache.promptPositions = p.positionIds;
    ForwardPass pass;
    pass.captureLayerInputs = true;
    HiddenAdditions deepstack;
    deepstack.first = p.span.start;
    deepstack.afterLayer = image.deepstack;
    if (!deepstack.empty()) pass.additions = &deepstack;
    const at::Tensor hidden = model.decoder().forward(embeds, cache, &pass);
    // Each layer's input where the reference has it (Qwen3-VL: layer_input.<l>, DeepStack added).
    for (int l = 1; l < t.numLayers; ++l)
        if (expected.contains("layer_input." + std::to_string(l)))
            d.hidden = std::max(d.hidden, relativeDiff(pass.layerInputs[size_t(l)], expected.tensor("layer_input." + std::to_string(l))));
    d.hidden = std::max(d.hidden, relativeDiff(hidden, expected.tensor("last_hidden_state")));
    d.logits = maxAbsDiff(model.decoder().logits(hidden.select(1, hidden.size(1) - 1)), expected.tensor("prefill_last_logits"));
    d.cache = cacheRelativeDiff(cache, expected);
    return d;
}

std::string PrefillAgainstReference::failure() const {
    const std::tuple<const char*, double, double> stages[] = {
        {"image_features (and deepstack_features)", features, 1e-4}, {"inputs_embeds", embeds, 1e-4},
        {"layer_input / last_hidden_state", hidden, 1e-4},
        {"prefill_last_logits", logits, 1e-3}, {"past_key (after M-RoPE) / past_value", cache, 1e-4}};
    for (const auto& [stage, difference, tolerance] : stages)
        if (!(difference <= tolerance)) return std::string(stage) + ": " + std::to_string(difference);   // NaN fails too
    return "";
}

GreedyAgainstReference greedyAgainstReference(const Session& session, const SafeTensorsFile& expected) {
    GenerationOptions gen;
    gen.maxNewTokens = 20;
    gen.stopAtEos = false;
    const at::Tensor top5 = expected.tensor("greedy_top5_logits");
    GreedyAgainstReference r;
    const Generation g = session.generate(gen, [&](const TokenEvent& ev) {
        r.worstTop5 = std::max(r.worstTop5, maxAbsDiff(std::get<0>(at::topk(*ev.logits, 5)), top5[ev.step]));
    });
    r.ids = g.ids;
    r.text = g.text;
    return r;
}

std::pair<std::string, std::vector<float>> readNpy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    const size_t headerLength = uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8);
    const std::string header = bytes.substr(10, headerLength);
    const size_t open = header.find("'shape': ("), close = header.find(')', open);
    std::vector<float> values((bytes.size() - 10 - headerLength) / sizeof(float));
    std::memcpy(values.data(), bytes.data() + 10 + headerLength, values.size() * sizeof(float));
    return {header.substr(open + 10, close - open - 10), values};
}

Prompt casePrompt(const Model& model, const nlohmann::json& c, const char* textField) {
    const std::string text = c[textField].get<std::string>();
    if (c["image"].is_null()) return buildPrompt(model, text, false, nullptr);
    const ImageU8 image = loadImage(referenceDir() + "/images/" + c["image"].get<std::string>());
    return buildPrompt(model, text, false, &image);
}

void addCaseRows(const std::vector<const char*>& cases, const std::vector<const char*>& variants) {
    QTest::addColumn<QString>("caseName");
    QTest::addColumn<QString>("variant");
    for (const char* v : variants)
        for (const char* c : cases) QTest::newRow((std::string(c) + "/" + v).c_str()) << QString(c) << QString(v);
}

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

} // namespace kvsteer::test
