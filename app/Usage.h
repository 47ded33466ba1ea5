#pragma once
// The kvsteer CLI's usage text: one entry per command (what `kvsteer COMMAND --help` prints: its
// synopsis, purpose, every option it accepts with its meaning and default, and the notes those
// commands share). The prompt-template note is generated from the model families the core
// registers (modelFamilies()), so a new family documents itself. The command entries live in
// CommandHelp.cpp and CommandHelpDemo.cpp, the layout and the shared notes in Usage.cpp.
#include <set>
#include <string>
#include <vector>

namespace kvsteer {

std::string fullUsage();                                // kvsteer --help: every command and note
std::string commandUsage(const std::string& command);   // one command, its options and notes; "" if unknown

// The declared option and flag names (without "--") that `usage` does not describe: each must
// appear as "--name" followed by a space, ',', '|', ']' or the end of a line. kvsteer checks
// every command's --help against its parser with this (a miss is a developer's bug).
std::vector<std::string> undescribedOptions(const std::string& usage, const std::set<std::string>& options,
                                            const std::set<std::string>& flags);

// One line of a command's options list.
struct OptionHelp {
    std::string flag;       // as typed: "--max-new-tokens N", "--json"; an operand without "--" ("info FILE")
    std::string meaning;
    // "" for a switch (off unless given) or an operand; starting with "required": printed as
    // "(required...)"; anything else: "(default: ...)".
    std::string fallback;
};

struct OptionGroup {
    std::string title;      // "Input", "Steering plan (...)", ...; "" for a command's only group
    std::vector<OptionHelp> options;
};

// Notes a command's help carries after its options.
enum UsageNote : unsigned {
    kModelNote = 1,    // --model's default (full usage only: the option line says it)
    kPromptNote = 2,   // the families' prompt templates
    kMaskNote = 4,     // the MASK forms
    kJsonNote = 8,     // --json (full usage only: the option line says it)
};

struct CommandHelp {
    std::string name;
    std::string purpose;                  // one sentence, without the final '.'
    std::vector<std::string> synopsis;    // lines after "kvsteer NAME ", without indentation
    std::vector<OptionGroup> groups;      // every option the command accepts
    unsigned notes = 0;                   // UsageNote bits
    std::string extra;                    // the command's own notes, after the options ("" = none)
    bool demo = false;                    // listed under "demo model" in the full usage
};

// Every command's help, in the order `kvsteer --help` lists them (CommandHelp.cpp).
const std::vector<CommandHelp>& commandHelps();

} // namespace kvsteer
