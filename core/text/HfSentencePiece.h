#pragma once
// HfSentencePiece: the immutable tables behind a SentencePiece Tokenizer — the SentencePiece
// model it derives from, plus the Hugging Face *slow* tokenizer layer (added and special
// tokens, BOS/EOS, legacy and non-legacy encoding, decode with HF's spacing rules) in its two
// flavours: LlamaTokenizer (the default) and GemmaTokenizer. SentencePieceTokenizer (the
// Tokenizer::Impl for tokenizer.model) and SentencePieceStream both read it.
#include "text/AddedVocabulary.h"
#include "text/HfTokenizerFiles.h"
#include "text/SentencePieceBpe.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kvsteer::detail {

struct HfSentencePiece : SentencePieceBpe {
    AddedVocabulary added;                  // added tokens, and the pieces used as special tokens
    std::unordered_set<int64_t> hfSpecial;  // HF all_special_ids (skipped by skip_special_tokens)
    std::unordered_set<int64_t> splitOff;   // HF legacy_added_tokens: decoded as separate " "-joined texts
    bool addBos = true, addEos = false, legacy = true, addPrefixSpace = true;
    // GemmaTokenizer rules instead of LlamaTokenizer's (see buildHuggingFace): no legacy /
    // prefix-space handling, Gemma's default special tokens, and its own _decode.
    bool gemma = false;
    std::string unkTokenText = "<unk>";
    int64_t bos = -1, eos = -1, unk = -1, pad = -1, image = -1;
    int64_t vocabSize = 0;

    // --- construction (after buildSentencePiece)
    void buildHuggingFace(const HfConfig& cfg);
    void addToken(const AddedToken& t);
    int64_t resolveSpecial(const std::string& content);

    // --- lookups over pieces and added tokens
    int64_t lookup(const std::string& piece) const;
    bool validId(int64_t id) const;
    void checkId(int64_t id) const;
    const std::string& tokenText(int64_t id) const;

    // The dummy prefix the slow tokenizer's SentencePiece model runs with: LlamaTokenizer
    // turns it off when not legacy, GemmaTokenizer leaves the model as it is.
    bool hfDummyPrefix() const { return gemma ? addDummyPrefix : legacy && addDummyPrefix; }
    // LlamaTokenizer drops the "▁" it (or the dummy prefix) put in front of the first token
    // of every decoded run; GemmaTokenizer never adds one, so it keeps them all.
    bool stripsFirstSpace() const { return !gemma && addPrefixSpace; }
    // GemmaTokenizer.tokenize is the plain PreTrainedTokenizer.tokenize, which is what
    // LlamaTokenizer does when legacy.
    bool plainTokenize() const { return gemma || legacy; }

    // --- encode
    std::vector<int64_t> tokenizeLegacy(const std::string& text) const;
    std::vector<int64_t> tokenizeNonLegacy(const std::string& text) const;

    // --- decode
    std::string convertTokensToString(const std::vector<int64_t>& ids) const;
    std::string hfDecode(const std::vector<int64_t>& ids, bool skipSpecial) const;
    std::string llamaDecode(const std::vector<int64_t>& ids, bool skipSpecial) const;
    std::string gemmaDecode(const std::vector<int64_t>& ids, bool skipSpecial) const;
};

} // namespace kvsteer::detail
