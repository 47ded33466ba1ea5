#include "CliOptions.h"

#include "Error.h"
#include "steer/SteeringPlan.h"

#include <iostream>
#include <algorithm>
#include <filesystem>

namespace kvsteer {

const std::set<std::string>& modelOptionNames() {
    static const std::set<std::string> names = {"model", "dtype", "device", "threads", "system", "max-pixels"};
    return names;
}

const std::set<std::string>& generationOptionNames() {
    static const std::set<std::string> names = {"max-new-tokens", "seed", "temperature", "top-p", "top-k"};
    return names;
}

std::set<std::string> withOptions(std::set<std::string> own, const std::set<std::string>& shared) {
    own.insert(shared.begin(), shared.end());
    return own;
}

std::string modelDirectory(const CommandLine& cl) {
    if (cl.has("model")) return cl.get("model");
    if (!std::filesystem::exists(KVSTEER_DEMO_MODEL_DIR))
        throw Error("no --model given and the bundled demo model (" + std::string(KVSTEER_DEMO_MODEL_DIR) + ") is missing");
    return KVSTEER_DEMO_MODEL_DIR;
}

LoadOptions loadOptions(const CommandLine& cl) {
    LoadOptions o;
    o.device = cl.get("device", "cpu");
    o.dtype = cl.get("dtype", "auto");
    o.threads = cl.getInt("threads", 0);
    if (o.threads < 0) throw UsageError("option --threads must be >= 0");
    // The memory check sizes the KV cache for the answer asked for.
    if (cl.has("max-new-tokens")) o.reserveTokens = std::max(1, cl.getInt("max-new-tokens", 1));
    if (cl.has("system")) o.systemMessage = cl.get("system");
    if (cl.has("max-pixels")) {
        o.maxPixels = cl.getInt("max-pixels", 0);
        if (o.maxPixels <= 0) throw UsageError("option --max-pixels must be a positive number of pixels");
    }
    return o;
}

std::shared_ptr<Model> loadModel(const CommandLine& cl) { return loadModelFrom(modelDirectory(cl), cl); }

std::shared_ptr<Model> loadModelFrom(const std::string& directory, const CommandLine& cl) {
    if (cl.has("max-pixels")) {   // refused before a byte of weights is read
        const ModelConfig config = parseModelConfig(readConfigJson(directory), "config " + directory + "/config.json");
        if (config.modelType != "qwen2_vl" && config.modelType != "qwen2_5_vl" && config.modelType != "qwen3_vl")
            throw UsageError("--max-pixels: the " + config.modelType + " processor takes images of one size (only Qwen2-VL, Qwen2.5-VL " +
                             "and Qwen3-VL resize to a pixel budget)");
    }
    std::shared_ptr<Model> model = loadModel(directory, loadOptions(cl));
    if (cl.has("system") && !model->takesSystemMessage())
        throw UsageError("--system: the " + model->familyName() + " prompt layout has no system message (only chat templates do: Qwen, Llama-3)");
    warmUpEdits(*model);
    return model;
}

GenerationOptions generationOptions(const CommandLine& cl, int defaultMaxNewTokens) {
    GenerationOptions g;
    g.maxNewTokens = cl.getInt("max-new-tokens", defaultMaxNewTokens);
    if (g.maxNewTokens < 1) throw UsageError("option --max-new-tokens must be >= 1");
    g.sampling.temperature = cl.getDouble("temperature", 0.0);
    g.sampling.topP = cl.getDouble("top-p", 1.0);
    g.sampling.topK = cl.getInt("top-k", 0);
    g.sampling.seed = cl.getU64("seed", 0);
    return g;
}

void noteBudgetCut(int asked, int cut, int64_t promptTokens, int64_t context) {
    std::cerr << "note: --max-new-tokens " << asked << " is cut to " << cut << ": the prompt fills " << promptTokens << " of the model's "
              << context << "-token context\n";
}

std::string tokenText(const Tokenizer& tokenizer, int64_t id) {
    if (id < 0 || id >= tokenizer.vocabSize()) return "<id " + std::to_string(id) + ">";
    return tokenizer.decode({id}, false);
}

} // namespace kvsteer
