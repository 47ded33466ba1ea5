// SentencePieceStream — see SentencePieceStream.h.
//
// HfSentencePiece::hfDecode(skipSpecial=true) computed incrementally. Special tokens vanish; with the
// Llama rules non-special added tokens close the current run of ordinary tokens (HF decodes
// each run separately and joins the parts with " "); with the Gemma rules every added token
// closes it and the parts are joined with nothing, a "▁" left in the text becoming " ".
// Inside a run we replay SentencePiece's decoder state (leading-"▁" stripping, byte-piece
// runs).
#include "text/SentencePieceStream.h"

#include "text/Utf8.h"

#include <string_view>

namespace kvsteer::detail {

// Output of the current run; the " " that joins it to the previous part is written only
// once the run turns out to be non-empty (HF drops empty runs before a split-off token).
// Gemma's final "▁" -> " " can be applied piecewise: every text passed here is made of whole
// characters (byte runs are held back until a character is complete).
std::string SentencePieceStream::emit(const std::string& text) {
    if (text.empty()) return {};
    std::string out = (!segmentHasText_ && subTextCount_ > 0) ? " " : "";
    segmentHasText_ = true;
    return out + (impl_.gemma ? replaceAll(text, kSpaceSymbol, " ") : text);
}

std::string SentencePieceStream::flushBytes() {
    std::string text = bytesToText(pendingBytes_);
    pendingBytes_.clear();
    return emit(text);
}

// Emit the pending bytes whose fate is already sealed; keep an incomplete character.
std::string SentencePieceStream::drainDecidableBytes() {
    std::string text;
    std::string_view rest = pendingBytes_;
    while (!rest.empty() && !isIncompleteUtf8(rest)) {
        size_t n = 1;
        if (decodeUtf8Char(rest, &n)) text.append(rest.substr(0, n));
        else text.append(kReplacementChar);
        rest.remove_prefix(n);
    }
    pendingBytes_ = std::string(rest);
    return emit(text);
}

std::string SentencePieceStream::pushPieceToken(int64_t id) {
    const HfSentencePiece& impl = impl_;
    std::string piece = impl.tokenText(id);
    if (segmentTokens_ == 0 && impl.stripsFirstSpace() && startsWith(piece, kSpaceSymbol)) piece.erase(0, kSpaceSymbol.size());
    ++segmentTokens_;

    const int spId = impl.spPieceToId(piece);
    if (impl.spType(spId) == PieceType::Byte) {
        pendingBytes_.push_back(static_cast<char>(impl.byteValue(spId)));
        return drainDecidableBytes();
    }
    std::string out = flushBytes();
    if (bosWsSeen_ || segmentHasText_) isBosWs_ = false;
    auto [decoded, seen] = impl.decodePiece(piece, spId, isBosWs_, impl.hfDummyPrefix());
    bosWsSeen_ = seen;
    return out + emit(decoded);
}

std::string SentencePieceStream::pushSplitToken(int64_t id) {
    std::string out = flushBytes();
    if (segmentHasText_) ++subTextCount_;
    resetSegment();
    if (subTextCount_ > 0) out += ' ';
    out += impl_.tokenText(id);
    ++subTextCount_;
    return out;
}

// GemmaTokenizer: an added token ends the SentencePiece run (its held-back bytes are final
// now) and is written as its text, with nothing joining it to its neighbours.
std::string SentencePieceStream::pushGemmaAddedToken(int64_t id) {
    std::string out = flushBytes();
    resetSegment();
    return out + replaceAll(impl_.tokenText(id), kSpaceSymbol, " ");
}

void SentencePieceStream::resetSegment() {
    segmentTokens_ = 0;
    segmentHasText_ = false;
    isBosWs_ = true;
    bosWsSeen_ = false;
    pendingBytes_.clear();
}

std::string SentencePieceStream::push(int64_t id) {
    const HfSentencePiece& impl = impl_;
    impl.checkId(id);
    if (impl.hfSpecial.count(id)) return {};
    if (impl.gemma) return impl.added.find(id) ? pushGemmaAddedToken(id) : pushPieceToken(id);
    if (impl.splitOff.count(id)) return pushSplitToken(id);
    return pushPieceToken(id);
}

std::string SentencePieceStream::finish() {
    std::string out = flushBytes();
    // HF keeps a trailing run even when it decodes to "", so the joining " " still appears.
    if (segmentTokens_ > 0 && !segmentHasText_ && subTextCount_ > 0) out += ' ';
    resetSegment();
    subTextCount_ = 0;
    return out;
}

} // namespace kvsteer::detail
