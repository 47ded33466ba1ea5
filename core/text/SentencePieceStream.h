#pragma once
// SentencePieceStream: StreamingDetokenizer's state for a SentencePiece tokenizer. It mirrors
// HfSentencePiece's decode rules step by step (Llama's " "-joined runs, Gemma's added tokens,
// SentencePiece's leading-"▁" stripping and byte-piece runs), with state of its own.
#include "text/HfSentencePiece.h"
#include "text/TokenizerImpl.h"

#include <cstdint>
#include <memory>
#include <string>

namespace kvsteer::detail {

class SentencePieceStream final : public DetokenizerState {
public:
    explicit SentencePieceStream(const HfSentencePiece& impl) : impl_(impl) {}
    std::string push(int64_t id) override;
    std::string finish() override;  // flushes held-back bytes and resets
    std::unique_ptr<DetokenizerState> clone() const override { return std::make_unique<SentencePieceStream>(*this); }

private:
    std::string emit(const std::string& text);
    std::string flushBytes();
    std::string drainDecidableBytes();
    std::string pushPieceToken(int64_t id);
    std::string pushSplitToken(int64_t id);
    std::string pushGemmaAddedToken(int64_t id);
    void resetSegment();

    const HfSentencePiece& impl_;  // owned by the Tokenizer the StreamingDetokenizer holds
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

} // namespace kvsteer::detail
