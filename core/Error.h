#pragma once
// kvsteer::Error — the one exception type core code throws for bad input.
// The message always names the offending file/field and what was expected, in the model's and
// the data's terms. Where a person can change something to get past it, the error also carries
// that remedy as a Remedy value: each front end words it with its own controls (the CLI names a
// flag, the studio a menu item), so the core never names either.
#include <stdexcept>
#include <string>
#include <vector>

namespace kvsteer {

enum class Remedy {
    RawPrompt,          // place the image tag yourself: give the prompt without the family's template
    KeepStoredDtype,    // keep the checkpoint's own 16-bit dtypes instead of widening to float32
    FewerNewTokens,     // a shorter generation budget needs a smaller KV cache
    MatchingKeySpace,   // extract the vectors again in the key space the operator needs
    SkipBadItems,       // record a dataset's bad lines and items and evaluate the rest
    SmallerImageBudget, // Qwen: a smaller max_pixels caps the image's tokens (and the memory for them)
};

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message, std::vector<Remedy> remedies = {})
        : std::runtime_error(message), remedies_(std::move(remedies)) {}
    const std::vector<Remedy>& remedies() const { return remedies_; }

private:
    std::vector<Remedy> remedies_;
};

} // namespace kvsteer
