#include "PlanFlags.h"

#include "CliOptions.h"
#include "Error.h"
#include "io/NumberList.h"
#include "models/ModelRegistry.h"
#include "steer/LayerRange.h"
#include "steer/SpanMask.h"
#include "steer/SteeringOperator.h"

#include <ATen/ops/count_nonzero.h>

#include <iostream>
#include <optional>

namespace kvsteer {

namespace {

// Runs one of core's parsers on a flag's value; its complaint becomes a usage error, prefixed
// with the flag when it does not name it already.
template <class Parse>
auto asUsage(const std::string& flag, Parse&& parse) {
    try {
        return parse();
    } catch (const Error& e) {
        const std::string what = e.what();
        throw UsageError(what.rfind("--" + flag, 0) == 0 ? what : "--" + flag + ": " + what);
    }
}

nlohmann::ordered_json planSources(const CommandLine& cl, const SteeringFileInfo& info, const SteeringVectors* vectors) {
    auto from = [&](const char* flag, bool suggested) { return cl.has(flag) ? "flag" : vectors && suggested ? "vector file" : "default"; };
    return {{"operator", from("operator", info.op.has_value())},
            {"ck", from("ck", !info.ck.empty())},
            {"cv", from("cv", !info.cv.empty())},
            {"layers", from("layers", !info.layers.empty())},
            {"cells", from("mask", vectors && vectors->mask.defined())}};
}

} // namespace

std::set<std::string> planOptionNames() {
    return withOptions({"image", "prompt", "vectors", "mask", "layers", "heads", "ck", "cv", "operator", "ablate-to"}, generationOptionNames());
}

std::vector<double> numbersFlag(const CommandLine& cl, const std::string& flag) {
    return asUsage(flag, [&] { return parseNumberList(cl.get(flag), "--" + flag); });
}

std::vector<int> layersFlag(const CommandLine& cl, int numLayers) {
    return asUsage("layers", [&] { return parseLayerSet(cl.get("layers"), numLayers); });
}

PlanOptions planOptionsFromFlags(const CommandLine& cl, int numLayers) {
    PlanOptions o;
    if (cl.has("operator")) o.op = asUsage("operator", [&] { return parseOperator(cl.get("operator")); });
    if (cl.has("layers")) o.layers = layersFlag(cl, numLayers);
    if (cl.has("heads")) o.heads = asUsage("heads", [&] { return parseIndexList(cl.get("heads"), "--heads"); });
    if (cl.has("ck")) o.ck = numbersFlag(cl, "ck");
    if (cl.has("cv")) o.cv = numbersFlag(cl, "cv");
    o.propagate = cl.has("propagate");
    if (cl.has("ablate-to")) o.ablateTo = asUsage("ablate-to", [&] { return parseAblateTarget(cl.get("ablate-to")); });
    return o;
}

void suggestionsFromFlags(const CommandLine& cl, int numLayers, SteeringFileInfo& info) {
    if (cl.has("operator")) info.op = asUsage("operator", [&] { return parseOperator(cl.get("operator")); });
    info.ck = cl.has("ck") ? numbersFlag(cl, "ck") : std::vector<double>{1.0};
    info.cv = cl.has("cv") ? numbersFlag(cl, "cv") : std::vector<double>{1.0};
    if (cl.has("layers")) info.layers = layersFlag(cl, numLayers);
}

KeySpace keySpaceFlag(const CommandLine& cl) {
    return asUsage("key-space", [&] { return parseKeySpace(cl.get("key-space", cl.get("operator") == "prerope" ? "pre-rope" : "post-rope")); });
}

PlanInputs planFromOptions(const CommandLine& cl, const Model& model, const VisualSpan& span, bool vectorsOptional) {
    PlanInputs in;
    const int layers = model.config().text.numLayers;
    std::optional<SteeringVectors> vectors;
    if (cl.has("vectors")) vectors = loadSteeringFile(cl.get("vectors"), model, &in.info);
    const PlanOptions o = planOptionsFromFlags(cl, layers);
    const at::Tensor strength = cl.has("mask") ? loadSpanMask(cl.get("mask"), span) : at::Tensor();
    in.plan = makePlan(o, vectors ? &*vectors : nullptr, in.info, strength, span, layers);
    in.sources = planSources(cl, in.info, vectors ? &*vectors : nullptr);
    if (operatorNeedsVectors(in.plan.op) && !vectors && !(vectorsOptional && !cl.has("operator"))) throw UsageError("operator '" + operatorName(in.plan.op) + "' needs --vectors FILE");
    return in;
}

// --prompt in the family's template, or as is with --raw-prompt (the same meaning in every command).
// Without --image the prompt is text only, and steering addresses its tokens.
Prompt promptFromOptions(const CommandLine& cl, const Model& model) {
    if (!cl.has("prompt")) throw UsageError("needs --prompt TEXT (and --image FILE to steer an image)");
    std::optional<ImageU8> image;
    if (cl.has("image")) image = loadImage(cl.get("image"));
    return buildPrompt(model, cl.get("prompt"), cl.has("raw-prompt"), image ? &*image : nullptr);
}

// The plan as applied, for people (stderr) and scripts (--json), with where each part came from:
// no silent strength or layer set.
nlohmann::ordered_json planJson(const PlanInputs& in) {
    const SteeringPlan& plan = in.plan;
    return {{"operator", operatorName(plan.op)},
            {"mode", plan.mode == PlanMode::Propagate ? "propagate" : "edit-only"},
            {"ck", plan.ck},
            {"cv", plan.cv},
            {"layers", plan.layers},   // empty: every layer
            {"painted_cells", at::count_nonzero(plan.strength).item<int64_t>()},
            {"grid", {plan.strength.size(0), plan.strength.size(1)}},
            {"sources", in.sources}};
}

void echoPlan(const PlanInputs& in) {
    const nlohmann::ordered_json j = planJson(in);
    auto source = [&](const char* part) { return " (" + j["sources"][part].get<std::string>() + ")"; };
    std::cerr << "plan: " << j["operator"].get<std::string>() << source("operator") << ", " << j["mode"].get<std::string>() << ", c_k "
              << j["ck"].dump() << source("ck") << ", c_v " << j["cv"].dump() << source("cv") << ", layers "
              << (in.plan.layers.empty() ? std::string("all") : j["layers"].dump()) << source("layers") << ", "
              << j["painted_cells"].get<int64_t>() << " of " << in.plan.strength.numel() << " cells painted" << source("cells") << "\n";
}

} // namespace kvsteer
