#pragma once
// `kvsteer steer ... --python`: the plan the command would run, written as the Python script the
// studio's Copy as Python gives (core/steer/PythonSnippet.h), with every path absolute.
#include "CommandLine.h"
#include "PlanFlags.h"
#include "generate/Session.h"
#include "models/Model.h"

#include <string>

namespace kvsteer {

std::string steerAsPython(const CommandLine& cl, const Model& model, const Prompt& prompt, const PlanInputs& in, const GenerationOptions& gen);

} // namespace kvsteer
