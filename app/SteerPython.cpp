#include "SteerPython.h"

#include "steer/PythonSnippet.h"
#include "steer/SteeringOperator.h"

#include <filesystem>

namespace kvsteer {

namespace {

std::string absolute(const std::string& path) { return std::filesystem::absolute(path).lexically_normal().string(); }

// The KV heads every edited layer keeps; empty: all. The snippet takes one list for every layer: a
// vector file's head mask that differs by layer is a usage error naming --heads.
std::vector<int> sharedHeads(const SteeringPlan& plan, int layers, int kvHeads) {
    std::vector<int64_t> first;
    for (int l = 0; l < layers; ++l) {
        if (!plan.touchesLayer(l)) continue;
        const std::vector<int64_t> heads = plan.headsFor(l, kvHeads);
        if (first.empty()) first = heads;
        else if (heads != first) throw UsageError("--python: the vector file edits other KV heads on other layers; the snippet takes one list (give --heads)");
    }
    if (int64_t(first.size()) == kvHeads) return {};
    return std::vector<int>(first.begin(), first.end());
}

} // namespace

std::string steerAsPython(const CommandLine& cl, const Model& model, const Prompt& prompt, const PlanInputs& in, const GenerationOptions& gen) {
    const SteeringPlan& plan = in.plan;
    const TextConfig& t = model.config().text;
    PythonSnippetInputs s;
    s.family = model.familyName();
    s.modelName = model.config().name;
    s.modelDirectory = absolute(model.directory());
    s.numLayers = t.numLayers;
    try {
        s.promptTemplate = model.applyTemplate("{question}", prompt.hasImage);
    } catch (const Error&) {   // a layout that takes only raw prompts: the snippet says so
    }
    if (cl.has("image")) s.imagePath = absolute(cl.get("image"));
    s.question = cl.get("prompt");
    s.rawPrompt = cl.has("raw-prompt");
    if (cl.has("vectors")) s.vectorsPath = absolute(cl.get("vectors"));
    s.keySpace = keySpaceName(plan.vectors.keySpace);
    s.op = plan.op;
    s.ck = plan.ck;
    s.cv = plan.cv;
    s.layers = plan.layers;
    s.heads = sharedHeads(plan, t.numLayers, t.numKvHeads);
    s.propagate = plan.mode == PlanMode::Propagate;
    s.ablateTo = plan.ablateTarget;
    const at::Tensor strength = plan.strength.to(at::kFloat).contiguous();
    s.rows = int(strength.size(0));
    s.cols = int(strength.size(1));
    s.strength.assign(strength.data_ptr<float>(), strength.data_ptr<float>() + strength.numel());
    s.maxNewTokens = gen.maxNewTokens;
    return pythonSnippet(s);
}

} // namespace kvsteer
