#pragma once
// PlanOptions: a steering plan as a person chooses it — the CLI's `steer`/`sweep` options or the
// studio's steering panel — and the one function that turns that choice into a SteeringPlan.
// Whatever is left unset falls back to what the vector file suggests, then to the defaults, so
// the CLI and the studio build the same plan from the same choices.
#include "cache/VisualSpan.h"
#include "steer/SteeringPlan.h"
#include "steer/SteeringVectors.h"

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

namespace kvsteer {

class Model;

struct PlanOptions {
    std::optional<SteeringOperator> op;   // unset = the file's, else add
    std::vector<double> ck, cv;     // one value or one per layer; empty = the file's suggestion, else 1
    std::optional<std::vector<int>> layers;   // unset = the file's suggestion (empty there = all layers)
    std::vector<int> heads;         // KV heads edited on every chosen layer; empty = the file's mask (all)
    bool propagate = false;         // recompute the text after the edit against the edited cache
    AblateTarget ablateTo = AblateTarget::Mean;   // what ablate moves towards
};

// `options` with what it leaves unset filled in from the vector file's suggestions, then the
// defaults: the operator, layers (empty = all), c_k and c_v that makePlan applies. Echo this. In
// the result `op` and `layers` are always set.
PlanOptions resolvePlanOptions(const PlanOptions& options, const SteeringFileInfo& file);

// Whether a resolved plan can apply to `model` at all, before any item is run: its operator is
// known, c_k and c_v have one value or one per layer, its layers and heads exist, and an operator
// that needs vectors has them in the key space it needs. Throws kvsteer::Error naming the field,
// the value and what fits ("c_v has 2 values, but the model has 4 layers: give one value or 4").
void checkPlanChoices(const PlanOptions& resolved, const SteeringVectors* vectors, const Model& model);

// The plan for `options` over the painted `strength` [grid_h, grid_w] (undefined: the file's mask,
// else every image cell at 1, or on a text prompt's token strip the last cached token). `vectors` may be null only for an operator that needs none. Throws
// kvsteer::Error for an unknown operator, a missing vector file or a map of the wrong grid.
SteeringPlan makePlan(const PlanOptions& options, const SteeringVectors* vectors, const SteeringFileInfo& file,
                      const at::Tensor& strength, const VisualSpan& span, int numLayers);

// The file info for vectors made by this program (a recipe run by `extract` or the studio):
// the model's name, config hash, family and grid, the operator for the key space, the recipe and its inputs,
// the prompt template, the version. Suggestions (ck, cv, layers) are the caller's to add.
SteeringFileInfo newVectorsFileInfo(const Model& model, const std::string& recipe, const std::string& recipeInputsJson,
                                    KeySpace keySpace);

} // namespace kvsteer
