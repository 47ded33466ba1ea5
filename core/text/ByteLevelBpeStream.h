#pragma once
// ByteLevelBpeStream: StreamingDetokenizer's state for a byte-level BPE tokenizer. Tokens are
// bytes, and a character may be split over several tokens, so the bytes are held back until
// Python's errors="replace" decoding of them is decided: a complete character comes out, an
// ill-formed subsequence comes out as U+FFFD once the byte that ends it has arrived, a proper
// prefix of a character waits. Special tokens vanish without ending the run (as in
// decode(skipSpecial=true)); other added tokens end it and come out as their text.
#include "text/ByteLevelBpeTokenizer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace kvsteer::detail {

class ByteLevelBpeStream final : public DetokenizerState {
public:
    explicit ByteLevelBpeStream(const ByteLevelBpeTokenizer& tok) : tok_(tok) {}
    std::string push(int64_t id) override;
    std::string finish() override;
    std::unique_ptr<DetokenizerState> clone() const override { return std::make_unique<ByteLevelBpeStream>(*this); }

private:
    std::string drainDecided();

    const ByteLevelBpeTokenizer& tok_;  // owned by the Tokenizer the StreamingDetokenizer holds
    std::string pending_;               // bytes whose decoding is not decided yet
};

} // namespace kvsteer::detail
