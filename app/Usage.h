#pragma once
// The kvsteer CLI's usage text: one entry per command (what `kvsteer COMMAND --help` prints),
// and the notes those commands share. The prompt-template note is generated from the model
// families the core registers (modelFamilies()), so a new family documents itself.
#include <string>

namespace kvsteer {

std::string fullUsage();                                // kvsteer --help: every command and note
std::string commandUsage(const std::string& command);   // one command and its notes; "" if unknown

} // namespace kvsteer
