#pragma once
// StreamingDetokenizer: turns generated ids into text as they arrive, so each token can be
// shown as soon as it is generated, while guaranteeing that the pieces add up to exactly what
// Tokenizer::decode(ids, skipSpecial=true) returns for the whole sequence. It has its own
// file because it mirrors the decode rules step by step, with state of its own.
#include "text/Tokenizer.h"

#include <cstdint>
#include <string>

namespace kvsteer {

// Streaming detokenizer for generated ids: push() returns only text that is final and
// complete UTF-8. The concatenation of every push() result and finish() equals
// tokenizer.decode(allIdsFed, /*skipSpecial=*/true). An incomplete multi-byte sequence
// from byte-fallback pieces is held back until it completes; bytes that can never become
// valid UTF-8 come out as U+FFFD. push() throws kvsteer::Error for out-of-range ids.
class StreamingDetokenizer {
public:
    explicit StreamingDetokenizer(const Tokenizer& tok);
    std::string push(int64_t id);
    std::string finish();  // flushes held-back bytes and resets, ready for a new sequence

private:
    std::string emit(const std::string& text);
    std::string flushBytes();
    std::string drainDecidableBytes();
    std::string pushPieceToken(int64_t id);
    std::string pushSplitToken(int64_t id);
    std::string pushGemmaAddedToken(int64_t id);
    void resetSegment();

    Tokenizer tok_;
    // HF's Llama rules join "sub texts" (runs of ordinary tokens, and non-special added
    // tokens) with " "; Gemma's join them with nothing and leave this at 0.
    int subTextCount_ = 0;
    // State of the current run of ordinary tokens (one HF convert_tokens_to_string call).
    int segmentTokens_ = 0;        // tokens seen in this run (the first one loses its "▁")
    bool segmentHasText_ = false;  // the run's decoded text is non-empty so far
    bool isBosWs_ = true;          // SentencePiece: still at the start, may strip one "▁"
    bool bosWsSeen_ = false;       // SentencePiece: the previous piece consumed that "▁"
    std::string pendingBytes_;     // byte-fallback bytes not yet decidable as UTF-8
};

} // namespace kvsteer
