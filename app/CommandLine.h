#pragma once
// A small command-line parser for the CLI and the bench (Qt-free, so they build headless):
// "--key value" options and "--flag" switches, each declared up front so a typo is an error.
// --help (or -h) in place of an option is understood by every command: parse() throws
// HelpRequested, and the program prints that command's usage and exits 0.
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvsteer {

class CommandLine {
public:
    CommandLine(std::set<std::string> options, std::set<std::string> flags);

    // Parses argv[first..]; throws UsageError for unknown or incomplete arguments, HelpRequested
    // for --help / -h (not when it is an option's value: --prompt --help is a prompt).
    void parse(int argc, char** argv, int first);

    // Lets parse() keep arguments that are not options (eval-merge's shard folders), in order.
    void acceptPositional() { positionalAllowed_ = true; }
    const std::vector<std::string>& positional() const { return positional_; }

    bool has(const std::string& name) const;
    std::string get(const std::string& name, const std::string& fallback = "") const;
    int getInt(const std::string& name, int fallback) const;
    double getDouble(const std::string& name, double fallback) const;
    uint64_t getU64(const std::string& name, uint64_t fallback) const;
    // A copy with `name` unset (e.g. sweep's --layers list, which is not one plan's layer set).
    CommandLine without(const std::string& name) const {
        CommandLine copy = *this;
        copy.values_.erase(name);
        return copy;
    }

private:
    std::set<std::string> options_, flags_;
    std::map<std::string, std::string> values_;
    bool positionalAllowed_ = false;
    std::vector<std::string> positional_;
};

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Not an error: the caller answers with the usage text and exit status 0. It carries the names
// the parser declares (without "--"), so the caller can check that the usage describes each one.
struct HelpRequested {
    std::set<std::string> options, flags;
};

} // namespace kvsteer
