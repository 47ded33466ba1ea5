#pragma once
// StreamingDetokenizer: turns generated ids into text as they arrive, so each token can be
// shown as soon as it is generated, while guaranteeing that the pieces add up to exactly what
// Tokenizer::decode(ids, skipSpecial=true) returns for the whole sequence. The rules it replays
// belong to the tokenizer's implementation (SentencePieceStream, ByteLevelBpeStream); this
// class only holds the tokenizer and that state.
#include "text/Tokenizer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace kvsteer {

namespace detail {
class DetokenizerState;
}

// Streaming detokenizer for generated ids: push() returns only text that is final and
// complete UTF-8. The concatenation of every push() result and finish() equals
// tokenizer.decode(allIdsFed, /*skipSpecial=*/true). An incomplete multi-byte sequence
// (byte-fallback pieces, or byte-level BPE tokens that end inside a character) is held back
// until it completes; bytes that can never become valid UTF-8 come out as U+FFFD, by the
// tokenizer's own rule. push() throws kvsteer::Error for out-of-range ids.
class StreamingDetokenizer {
public:
    explicit StreamingDetokenizer(const Tokenizer& tok);
    StreamingDetokenizer(const StreamingDetokenizer& other);
    StreamingDetokenizer& operator=(const StreamingDetokenizer& other);
    StreamingDetokenizer(StreamingDetokenizer&&) noexcept;
    StreamingDetokenizer& operator=(StreamingDetokenizer&&) noexcept;
    ~StreamingDetokenizer();

    std::string push(int64_t id);
    std::string finish();  // flushes held-back bytes and resets, ready for a new sequence

private:
    Tokenizer tok_;  // keeps the tables state_ reads alive
    std::unique_ptr<detail::DetokenizerState> state_;
};

} // namespace kvsteer
