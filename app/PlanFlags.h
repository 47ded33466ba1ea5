#pragma once
// The steering flags every command that steers shares (steer, sweep, heatmaps, eval): their names, and the
// command line read into core's PlanOptions through core's parsers. A parser's complaint becomes
// a usage error that names the flag.
#include "CommandLine.h"
#include "models/Prompt.h"
#include "steer/PlanOptions.h"
#include "steer/SteeringPlan.h"

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace kvsteer {

// The plan every steering command builds from the same options: the command line as
// PlanOptions (text -> numbers, through core's parsers), then core's makePlan over the prompt's
// span (the studio builds its plans through the same function). Vector-file suggestions fill what
// the options leave unset.
struct PlanInputs {
    SteeringPlan plan;
    SteeringFileInfo info;
    // Where each part came from: "flag", "vector file" (its suggestion or its mask) or "default".
    nlohmann::ordered_json sources;
};

// `vectorsOptional`: without --vectors and --operator the plan edits nothing (heatmaps of the
// unsteered cache); otherwise an operator that needs vectors without --vectors is a usage error.
PlanInputs planFromOptions(const CommandLine& cl, const Model& model, const VisualSpan& span, bool vectorsOptional = false);
// --prompt in the family's template, or as is with --raw-prompt; with --image when given.
Prompt promptFromOptions(const CommandLine& cl, const Model& model);
// The plan as applied, with where each part came from: --json's "plan", and one line on stderr.
nlohmann::ordered_json planJson(const PlanInputs& in);
void echoPlan(const PlanInputs& in);

// --image --prompt --vectors --mask --layers --heads --ck --cv --operator --ablate-to and the
// generation options.
std::set<std::string> planOptionNames();

// A comma-separated list of numbers (--ck, --cv).
std::vector<double> numbersFlag(const CommandLine& cl, const std::string& flag);
// The --layers text as one plan's layer set (all / early / middle / late / A-B, joined by commas).
std::vector<int> layersFlag(const CommandLine& cl, int numLayers);

// --operator, --layers, --heads, --ck, --cv, --propagate and --ablate-to as PlanOptions.
PlanOptions planOptionsFromFlags(const CommandLine& cl, int numLayers);

// What a new vector file suggests (extract, vectors import): --operator (else the file info's
// own), --ck and --cv (else 1) and --layers (else all).
void suggestionsFromFlags(const CommandLine& cl, int numLayers, SteeringFileInfo& info);
// --key-space post|pre (the full names too); without it pre-RoPE for --operator prerope, else post.
KeySpace keySpaceFlag(const CommandLine& cl);

} // namespace kvsteer
