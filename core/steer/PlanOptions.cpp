#include "steer/PlanOptions.h"

#include "Error.h"
#include "models/Prompt.h"
#include "models/Model.h"
#include "models/ModelRegistry.h"
#include "steer/SteeringOperator.h"

#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

namespace kvsteer {

PlanOptions resolvePlanOptions(const PlanOptions& options, const SteeringFileInfo& file) {
    PlanOptions r = options;
    r.op = options.op ? *options.op : file.op ? *file.op : SteeringOperator::Add;
    r.layers = options.layers ? *options.layers : file.layers;
    r.ck = !options.ck.empty() ? options.ck : !file.ck.empty() ? file.ck : std::vector<double>{1.0};
    r.cv = !options.cv.empty() ? options.cv : !file.cv.empty() ? file.cv : std::vector<double>{1.0};
    return r;
}

void checkPlanChoices(const PlanOptions& resolved, const SteeringVectors* vectors, const Model& model) {
    const TextConfig& t = model.config().text;
    const SteeringOperator op = *resolved.op;
    for (const auto& [name, values] : {std::pair<const char*, const std::vector<double>*>{"c_k", &resolved.ck}, {"c_v", &resolved.cv}})
        if (values->size() != 1 && values->size() != size_t(t.numLayers))
            throw Error(std::string(name) + " has " + std::to_string(values->size()) + " values, but the model has " + std::to_string(t.numLayers) +
                        " layers: give one value or " + std::to_string(t.numLayers));
    for (int l : resolved.layers.value_or(std::vector<int>()))
        if (l < 0 || l >= t.numLayers)
            throw Error("layer " + std::to_string(l) + " does not exist: the model has layers 0.." + std::to_string(t.numLayers - 1));
    for (int h : resolved.heads)
        if (h < 0 || h >= t.numKvHeads)
            throw Error("KV head " + std::to_string(h) + " does not exist: the model has KV heads 0.." + std::to_string(t.numKvHeads - 1));
    if (!operatorNeedsVectors(op)) return;
    if (!vectors) throw Error("operator '" + operatorName(op) + "' needs steering vectors");
    if ((vectors->keySpace == KeySpace::PreRope) != (op == SteeringOperator::PreRope))
        throw Error("operator '" + operatorName(op) + "' needs " + (op == SteeringOperator::PreRope ? "pre-rope" : "post-rope") +
                        " key vectors, these are " + keySpaceName(vectors->keySpace),
                    {Remedy::MatchingKeySpace});
}

SteeringPlan makePlan(const PlanOptions& chosen, const SteeringVectors* vectors, const SteeringFileInfo& file,
                      const at::Tensor& strength, const VisualSpan& span, int numLayers) {
    const PlanOptions options = resolvePlanOptions(chosen, file);
    SteeringPlan p;
    p.op = *options.op;
    // Without vectors the plan carries none: an operator that needs them then edits nothing, and
    // it is the caller's to say so (the CLI refuses, the studio shows both streams unsteered).
    if (vectors) p.vectors = *vectors;

    if (strength.defined()) {
        if (strength.dim() != 2 || strength.size(0) != span.gridHeight || strength.size(1) != span.gridWidth)
            throw Error("the painted map is " + std::to_string(strength.dim() == 2 ? strength.size(0) : 0) + "x" +
                        std::to_string(strength.dim() == 2 ? strength.size(1) : 0) + " but the model's patch grid is " +
                        std::to_string(span.gridHeight) + "x" + std::to_string(span.gridWidth));
        p.strength = strength;
    } else if (vectors && vectors->mask.defined()) {
        p.strength = vectors->mask;   // the region the vectors were made for
    } else if (span.isTokenStrip()) {
        p.strength = at::zeros({span.gridHeight, span.gridWidth});   // the last cached token: published cache steering's place
        p.strength.select(1, span.gridWidth - 1).fill_(1.0);
    } else {
        p.strength = at::ones({span.gridHeight, span.gridWidth});
    }

    p.layers = *options.layers;
    if (!options.heads.empty()) {
        for (int l = 0; l < numLayers; ++l) p.headMask[l] = options.heads;
    } else {
        for (size_t l = 0; l < file.headMask.size(); ++l) p.headMask[static_cast<int>(l)] = file.headMask[l];
    }
    p.ck = options.ck;
    p.cv = options.cv;
    p.mode = options.propagate ? PlanMode::Propagate : PlanMode::EditOnly;
    p.ablateTarget = options.ablateTo;
    return p;
}

SteeringFileInfo newVectorsFileInfo(const Model& model, const std::string& recipe, const std::string& recipeInputsJson,
                                    KeySpace keySpace) {
    SteeringFileInfo info;
    recordModel(info, model);
    // Pre-RoPE directions only mean the same at every position through the prerope operator.
    info.op = keySpace == KeySpace::PreRope ? SteeringOperator::PreRope : SteeringOperator::Add;
    info.recipe = recipe;
    info.recipeInputsJson = recipeInputsJson;
    info.promptTemplate = model.applyTemplate("{question}", recipe != "text-pairs");
    info.version = KVSTEER_VERSION;
    return info;
}

} // namespace kvsteer
