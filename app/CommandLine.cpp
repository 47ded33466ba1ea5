#include "CommandLine.h"

#include <stdexcept>

namespace kvsteer {

CommandLine::CommandLine(std::set<std::string> options, std::set<std::string> flags)
    : options_(std::move(options)), flags_(std::move(flags)) {}

void CommandLine::parse(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") throw HelpRequested{options_, flags_};
        if (arg.rfind("--", 0) != 0) {
            if (!positionalAllowed_) throw UsageError("unexpected argument '" + arg + "'");
            positional_.push_back(arg);
            continue;
        }
        std::string name = arg.substr(2), value;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            if (!options_.count(name)) throw UsageError("unknown option --" + name);
        } else if (flags_.count(name)) {
            value = "1";
        } else if (options_.count(name)) {
            if (i + 1 >= argc) throw UsageError("option --" + name + " needs a value");
            value = argv[++i];
        } else {
            throw UsageError("unknown option --" + name);
        }
        values_[name] = value;
    }
}

bool CommandLine::has(const std::string& name) const { return values_.count(name) != 0; }

std::string CommandLine::get(const std::string& name, const std::string& fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
}

namespace {

template <typename T, typename F>
T parseNumber(const std::string& name, const std::string& text, F convert, const char* expected) {
    try {
        size_t used = 0;
        T v = convert(text, &used);
        if (used != text.size()) throw std::invalid_argument(text);
        return v;
    } catch (const std::exception&) {
        throw UsageError("option --" + name + ": '" + text + "' is not " + expected);
    }
}

} // namespace

int CommandLine::getInt(const std::string& name, int fallback) const {
    if (!has(name)) return fallback;
    return parseNumber<int>(name, get(name), [](const std::string& s, size_t* u) { return std::stoi(s, u); }, "an integer");
}

double CommandLine::getDouble(const std::string& name, double fallback) const {
    if (!has(name)) return fallback;
    return parseNumber<double>(name, get(name), [](const std::string& s, size_t* u) { return std::stod(s, u); }, "a number");
}

uint64_t CommandLine::getU64(const std::string& name, uint64_t fallback) const {
    if (!has(name)) return fallback;
    return parseNumber<uint64_t>(name, get(name), [](const std::string& s, size_t* u) { return std::stoull(s, u); },
                                 "a non-negative integer");
}

} // namespace kvsteer
