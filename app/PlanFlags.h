#pragma once
// The steering flags every command that steers shares (steer, sweep, eval): their names, and the
// command line read into core's PlanOptions through core's parsers. A parser's complaint becomes
// a usage error that names the flag.
#include "CommandLine.h"
#include "steer/PlanOptions.h"

#include <set>
#include <string>
#include <vector>

namespace kvsteer {

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
