#pragma once
// kvsteer::Error — the one exception type core code throws for bad input.
// The message always names the offending file/field and what was expected, so the
// CLI and the studio can show it to the user verbatim.
#include <stdexcept>
#include <string>

namespace kvsteer {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

} // namespace kvsteer
