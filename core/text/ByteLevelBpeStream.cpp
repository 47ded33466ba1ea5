// ByteLevelBpeStream — see ByteLevelBpeStream.h.
#include "text/ByteLevelBpeStream.h"

#include "text/Utf8.h"

#include <string_view>

namespace kvsteer::detail {

std::string ByteLevelBpeStream::push(int64_t id) {
    tok_.checkId(id);
    if (tok_.isSpecial(id)) return {};
    if (const AddedToken* t = tok_.addedToken(id)) return finish() + t->content;
    pending_ += tok_.tokenBytes(id);
    return drainDecided();
}

// Emits the decoding steps that later bytes can no longer change: everything up to a tail
// that is a proper prefix of some character.
std::string ByteLevelBpeStream::drainDecided() {
    std::string out;
    std::string_view rest = pending_;
    while (!rest.empty() && !isIncompleteUtf8(rest)) {
        bool valid = false;
        const size_t n = pythonUtf8Step(rest, &valid);
        out.append(valid ? rest.substr(0, n) : kReplacementChar);
        rest.remove_prefix(n);
    }
    pending_ = std::string(rest);
    return out;
}

std::string ByteLevelBpeStream::finish() {
    std::string out = pythonUtf8Decode(pending_);
    pending_.clear();
    return out;
}

} // namespace kvsteer::detail
