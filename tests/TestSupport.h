#pragma once
// Shared helpers for the Qt tests: where the reference data is, tensor comparisons, and model
// directories derived from the reference checkpoint (copies, float16 shards, broken variants).
// torch headers come before any Qt header in every test file.
#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kvsteer {
class KVCache;
class Model;
struct Prompt;
class SafeTensorsFile;
class Session;
struct Generation;
} // namespace kvsteer

namespace kvsteer::test {

std::string referenceDir();                // ../shared/reference
std::string referenceModelDir();           // ../shared/reference/tiny-llava
std::string referencePaliGemmaDir();       // ../shared/reference/tiny-paligemma
std::string referenceQwen2VlDir();         // ../shared/reference/tiny-qwen2vl
std::string referenceTensorsPath(const std::string& caseName);   // expected/<case>.safetensors
std::string cliPath();                     // the built kvsteer executable

// One set of reference outputs beside the checkpoints (expected-paligemma, expected-qwen2vl):
// summary.json and a <case>.safetensors per case.
struct ReferenceCases {
    explicit ReferenceCases(std::string set) : set(std::move(set)) {}
    bool load();   // reads summary.json; false when it is missing (../shared not beside the checkout)
    nlohmann::json caseInfo(const std::string& name) const;   // throws Error for an unknown case
    std::string tensorsPath(const std::string& caseName) const;
    std::string set;
    nlohmann::json summary;
};

double maxAbsDiff(const at::Tensor& a, const at::Tensor& b);   // shapes must match (throws otherwise)
// max|a - ref| / max|ref|: the references' tolerance for float tensors (≤ 1e-4).
double relativeDiff(const at::Tensor& a, const at::Tensor& ref);
// The worst relativeDiff of the cache's keys and values against a reference file's past_key.<l> /
// past_value.<l> ([1, H_kv, L, D]; only the first cache.size() positions are compared).
double cacheRelativeDiff(const KVCache& cache, const SafeTensorsFile& expected);

// Copies a checkpoint's small files (config, tokenizer, preprocessor) into `dir`.
void copyModelMetadata(const std::string& dir, const std::string& source = referenceModelDir());
// A checkpoint directory `source` rewritten in `dir` the way real downloads look: `dtype`
// tensors under the newer transformers names (model.language_model.*, model.vision_tower.*,
// model.multi_modal_projector.*), sharded at maxShardBytes, with `configJson` as config.json.
// With `roundedTo` set, the weights are rounded through it first (a float32 twin of a 16-bit copy).
void writeConvertedCopy(const std::string& source, const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes,
                        const std::string& configJson, c10::ScalarType roundedTo = c10::ScalarType::Undefined);
// The reference checkpoint written as a float16 (or other dtype) copy in `dir`: newer
// transformers tensor names, sharded into several files, and a config.json trimmed to the
// non-default keys (like a real download).
void writeConvertedReferenceModel(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes);
// The same for tiny-paligemma, its config trimmed to what differs from PaliGemma's defaults.
void writeConvertedPaliGemma(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes);
// The same for tiny-qwen2vl (transformers >= 4.52 names: model.language_model.*, model.visual.*).
void writeConvertedQwen2Vl(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes);
std::string referenceQwen25VlDir();         // ../shared/reference/tiny-qwen25vl
// tiny-qwen25vl in the hub's flat config dialect (text fields at the top level, rope_theta,
// rope_scaling, vision_config.in_chans), trimmed to what differs from transformers' defaults.
void writeConvertedQwen25Vl(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes,
                            c10::ScalarType roundedTo = c10::ScalarType::Undefined);
std::string referenceQwen3VlDir();          // ../shared/reference/tiny-qwen3vl
// tiny-qwen3vl with its config in the other dialect (transformers 5's rope_parameters <-> the
// hub's rope_theta + rope_scaling), trimmed to what differs from transformers' defaults, as
// `dtype` shards.
void writeConvertedQwen3Vl(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes);
// The reference checkpoint's language model alone, as a plain Llama directory (model_type llama,
// model.* and lm_head.weight names), for text-only use.
void writePlainLlamaFromReference(const std::string& dir);
std::string referenceLlama3Dir();           // ../shared/reference/tiny-llama3
// tiny-llama3 as real downloads look: `dtype` tensors in several shards, an untied lm_head (a
// copy of the embeddings) and a config.json trimmed to what differs from LlamaConfig's defaults.
// With `dtype` float32 and `roundedTo` set, the weights are those rounded through `roundedTo`:
// the float32 twin a 16-bit copy must equal.
void writeConvertedLlama3(const std::string& dir, c10::ScalarType dtype, int64_t maxShardBytes,
                          c10::ScalarType roundedTo = c10::ScalarType::Undefined);
// The reference weights rounded through `dtype` and back to float32, as one file in `dir`.
void writeRoundedReferenceModel(const std::string& dir, c10::ScalarType dtype);

std::vector<int64_t> toIds(const at::Tensor& t);   // int64 tensor -> vector
// A float32 .npy's shape as its header writes it ("4, 24, 24, ") and its values.
std::pair<std::string, std::vector<float>> readNpy(const std::string& path);

// The reference's greedy run from a prefilled session: 20 tokens past EOS, and at every step the
// largest gap between this step's top-5 logits and the reference's greedy_top5_logits.
struct GreedyAgainstReference {
    std::vector<int64_t> ids;
    std::string text;
    double worstTop5 = 0;
};
GreedyAgainstReference greedyAgainstReference(const Session& session, const SafeTensorsFile& expected);

// A prompt's prefill run stage by stage against a reference case with M-RoPE positions (the
// Qwen families): relative differences of the image features (0 without an image), the prompt's
// embeddings, the last hidden state and the K/V cache; the largest difference of the last logits.
struct PrefillAgainstReference {
    double features = 0, embeds = 0, hidden = 0, logits = 0, cache = 0;
    // The first stage over the parity tolerance (1e-4 relative; logits 1e-3 absolute), named
    // with its difference; empty when every stage is within it.
    std::string failure() const;
};
PrefillAgainstReference prefillAgainstReference(const Model& model, const Prompt& prompt, const SafeTensorsFile& expected);

// A reference case's prompt: its `textField` (the question) in the family's template, with the
// case's image (images/<image>) when it names one.
Prompt casePrompt(const Model& model, const nlohmann::json& c, const char* textField = "user_text");
// Qt Test data rows "case/variant" with the columns caseName and variant: every case on every
// model copy (call it in a test's _data function).
void addCaseRows(const std::vector<const char*>& cases, const std::vector<const char*>& variants);

// The message of the kvsteer::Error `f` throws, or "" when it throws none.
std::string errorOf(const std::function<void()>& f);

struct ProcessResult {
    int exitCode = -1;
    bool crashed = false;
    std::string out, err;
};
ProcessResult runProgram(const std::string& program, const std::vector<std::string>& args, int timeoutMs = 300000);
ProcessResult runCli(const std::vector<std::string>& args, int timeoutMs = 300000);   // the kvsteer executable

} // namespace kvsteer::test
