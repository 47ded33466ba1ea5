#pragma once
// What CommandHelp.cpp (the model, steering and evaluation commands) and CommandHelpDemo.cpp (the
// demo model's and the bench's commands) both build their help from (Usage.h).
#include "Usage.h"

#include <string>
#include <vector>

namespace kvsteer {

extern const char* const kDemoModel;   // --model's default: "the bundled demo model, ..."

// modelOptionNames(): how the model is found and loaded.
OptionGroup modelGroup(const std::string& modelMeaning = "the model's directory (Hugging Face layout: config.json, the weights' "
                                                          "*.safetensors, the tokenizer's files)",
                       const std::string& modelDefault = kDemoModel);

// One command's help; the arguments in CommandHelp's order.
CommandHelp command(std::string name, std::string purpose, std::vector<std::string> synopsis, std::vector<OptionGroup> groups,
                    unsigned notes = 0, std::string extra = "", bool demo = false);

// make-random and the demo model's commands, after the others (CommandHelpDemo.cpp).
void addDemoCommandHelps(std::vector<CommandHelp>& all);

} // namespace kvsteer
