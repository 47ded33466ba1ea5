#include "Usage.h"

#include "models/ModelRegistry.h"

#include <sstream>

namespace kvsteer {

namespace {

constexpr size_t kFlagColumn = 30;   // where an option's meaning starts
constexpr size_t kLineWidth = 110;   // option lines wrap before this

std::string padded(const std::string& s, size_t width) { return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' '); }

// The words of `text` in lines of at most `width` characters (a longer word stands alone).
std::vector<std::string> wrapped(const std::string& text, size_t width) {
    std::vector<std::string> lines;
    std::string line;
    std::istringstream words(text);
    for (std::string word; words >> word;) {
        if (!line.empty() && line.size() + 1 + word.size() > width) {
            lines.push_back(line);
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) lines.push_back(line);
    return lines;
}

// "  --flag ARG    meaning (default: X)", the meaning wrapped onto lines indented to the column;
// a flag too wide for its column stands on a line of its own.
std::string optionLines(const OptionHelp& o) {
    std::string text = o.meaning;
    if (!o.fallback.empty())
        text += o.fallback.rfind("required", 0) == 0 ? " (" + o.fallback + ")" : " (default: " + o.fallback + ")";
    const std::vector<std::string> lines = wrapped(text, kLineWidth - kFlagColumn);
    const std::string indent(kFlagColumn, ' ');
    std::string head = "  " + o.flag, out;
    size_t i = 0;
    if (head.size() + 2 <= kFlagColumn && !lines.empty()) out = padded(head, kFlagColumn) + lines[i++] + "\n";
    else out = head + "\n";
    for (; i < lines.size(); ++i) out += indent + lines[i] + "\n";
    return out;
}

// `text` with each of its lines wider than the options' width rewrapped.
std::string paragraph(const std::string& text) {
    std::string out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
        if (line.size() <= kLineWidth) out += line + "\n";
        else
            for (const std::string& l : wrapped(line, kLineWidth)) out += l + "\n";
    return out;
}

std::string optionsList(const CommandHelp& c) {
    std::string out = "Options (a switch, a flag that takes no value, is off unless given):\n";
    for (const OptionGroup& g : c.groups) {
        out += g.title.empty() ? "\n" : "\n" + g.title + ":\n";
        for (const OptionHelp& o : g.options) out += optionLines(o);
    }
    return out;
}

// The synopsis lines, the first after `lead`, the rest indented to line up under it; a line too
// wide for what `lead` leaves is wrapped.
std::string synopsis(const CommandHelp& c, const std::string& lead) {
    std::string out;
    const size_t width = lead.size() < kLineWidth - 40 ? kLineWidth - lead.size() : 40;
    for (const std::string& line : c.synopsis)
        for (const std::string& part : line.size() > width ? wrapped(line, width) : std::vector<std::string>{line})
            out += (out.empty() ? lead : std::string(lead.size(), ' ')) + part + "\n";
    return out;
}

// Generated from the registry: each model_type with its family's grid and template. The full
// usage says what --raw-prompt and --system do; a command's help has option lines for them.
std::string promptNote(bool full) {
    std::string out = "--prompt is the question, laid out in the template of the model's family (config.json's model_type):\n";
    for (const ModelFamily& f : modelFamilies()) out += "  " + padded(f.modelType, 11) + f.name + ": " + f.summary + "\n";
    if (full)
        out += "--raw-prompt uses the text as is: it must then contain \"<image>\" exactly once when an image is given\n"
               "(and none without). `kvsteer inspect --model DIR` prints the model's template. --system TEXT sets the system\n"
               "message of a chat template (Qwen: instead of its default; Llama-3: none by default).\n";
    else
        out += "`kvsteer inspect --model DIR` prints the model's template.\n";
    return out;
}

std::string notes(unsigned which, bool full) {
    std::string out;
    if (full && (which & kModelNote)) out += "--model defaults to the bundled demo model.\n";
    if (which & kPromptNote) out += promptNote(full);
    if (which & kMaskNote)
        out += "MASK: rect:r0,c0,r1,c1 (grid cells, inclusive, within the model's grid: rect:0,0,15,15 is all of a 16x16\n"
               "grid), a grayscale image of any size (white = 1, area-averaged onto the grid), or a .npy / .safetensors\n"
               "of the grid's shape. Without an image, steering addresses the prompt's tokens (a 1xN strip of the N tokens\n"
               "the cache holds): tokens:A-B,C,last names them (the default is tokens:last, where cache steering puts its\n"
               "vectors). A picture LLaVA-NeXT sees in views also takes px:x0,y0,x1,y1 (its pixels, ends exclusive) and\n"
               "view:base|crops:r0,c0,r1,c1 (a view's cells); rect: there means the base view's 24x24 cells. Maps lie on\n"
               "the crops' grid; each view's cell takes the strength of the pixels it covers, newline tokens none.\n";
    if (full && (which & kJsonNote)) out += "With --json, stdout holds only the final JSON object.\n";
    return out;
}

// Whether "--name" occurs in `text` followed by a space, ',', '|', ']' or the end of a line.
bool describes(const std::string& text, const std::string& name) {
    const std::string flag = "--" + name;
    for (size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + 1)) {
        const size_t end = at + flag.size();
        if (end == text.size() || std::string(" ,|]\n").find(text[end]) != std::string::npos) return true;
    }
    return false;
}

} // namespace

std::string fullUsage() {
    std::string out = "usage: kvsteer <command> [options]      (kvsteer <command> --help: one command, every option)\n\ncommands:\n";
    unsigned all = 0;
    for (const CommandHelp& c : commandHelps())
        if (!c.demo) {
            out += synopsis(c, "  " + padded(c.name, 13));
            all |= c.notes;
        }
    out += "\ndemo model:\n";
    for (const CommandHelp& c : commandHelps())
        if (c.demo) out += synopsis(c, "  " + padded(c.name, 13));
    return out + "\n" + notes(all | kModelNote | kJsonNote, true);
}

std::string commandUsage(const std::string& command) {
    for (const CommandHelp& c : commandHelps())
        if (command == c.name) {
            const std::string shared = notes(c.notes, false);
            return synopsis(c, "usage: kvsteer " + command + " ") + "\n" + paragraph(c.purpose + ".") + "\n" + optionsList(c) +
                   (shared.empty() ? "" : "\n" + shared) + (c.extra.empty() ? "" : "\n" + c.extra) +
                   "\nExit status: 0 done; 1 bad input or model (the error names the file or field); 2 usage (an unknown\n"
                   "option, a missing one, or a value of the wrong form).\n";
        }
    return "";
}

std::vector<std::string> undescribedOptions(const std::string& usage, const std::set<std::string>& options,
                                            const std::set<std::string>& flags) {
    std::vector<std::string> missing;
    for (const std::set<std::string>* names : {&options, &flags})
        for (const std::string& name : *names)
            if (!describes(usage, name)) missing.push_back(name);
    return missing;
}

} // namespace kvsteer
