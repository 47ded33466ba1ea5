#pragma once
// kvsteer::Tokenizer — a self-contained reader and encoder/decoder for SentencePiece BPE
// `tokenizer.model` files, with the Hugging Face *slow* LlamaTokenizer layered on top
// (added/special tokens, BOS/EOS, the legacy/non-legacy prompt handling and decode rules), or
// the slow GemmaTokenizer when tokenizer_config.json's tokenizer_class says so (PaliGemma).
//
// We deliberately do not link libsentencepiece (it crashes inside our libtorch process), so
// the protobuf is hand-parsed and the BPE merge loop, normalizer and decoder are
// re-implemented to be bit-exact with sentencepiece 0.1.97 (the version the reference and
// `spm_encode`/`spm_decode` use) and with transformers 4.45's LlamaTokenizer.
//
// Every bad input (missing/corrupt files, bad JSON, out-of-range ids) throws kvsteer::Error.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

class Tokenizer {
public:
    // Reads DIR/tokenizer.model (required) plus, if present, DIR/added_tokens.json and
    // DIR/tokenizer_config.json (added_tokens_decoder, special-token names, add_bos_token,
    // add_eos_token, legacy, add_prefix_space, tokenizer_class). tokenizer_class
    // "GemmaTokenizer" or "GemmaTokenizerFast" selects the GemmaTokenizer rules: default
    // special tokens <bos>/<eos>/<unk>/<pad>, legacy and add_prefix_space ignored, and its
    // decode (below). Anything else selects LlamaTokenizer's. Throws kvsteer::Error.
    static Tokenizer loadFromDirectory(const std::string& dir);

    // HF slow LlamaTokenizer semantics (legacy=true by default): the text is split on the
    // added/special tokens (leftmost-longest), each remaining non-empty chunk is encoded by
    // SentencePiece on its own (so each gets the dummy "▁" prefix), special chunks become
    // their ids. With addBos the configured special tokens are added the way HF's
    // add_special_tokens=True does: BOS first if add_bos_token (default true), EOS last if
    // add_eos_token (default false).
    std::vector<int64_t> encode(const std::string& text, bool addBos = true) const;

    // Plain SentencePiece encode of one string — exactly `spm_encode --output_format=id`
    // for one line. No added-token splitting, no BOS.
    std::vector<int64_t> encodeSentencePiece(const std::string& text) const;

    // HF slow tokenizer decode(ids, skip_special_tokens=skipSpecial) with its defaults
    // (spaces_between_special_tokens=True, no clean-up). Byte pieces are assembled into
    // bytes and invalid UTF-8 becomes U+FFFD one byte at a time (SentencePiece's rule, which
    // is what the slow tokenizer returns); "▁" -> " "; the dummy-prefix space is dropped at
    // the start. Special tokens are dropped when skipSpecial, else written as their text
    // (with HF's spacing quirks around them). Throws for ids outside the vocabulary.
    // GemmaTokenizer instead: every added token (<loc0213>, <seg105>, ...) is written as its
    // text, the runs between them are SentencePiece-decoded each on its own, and the parts are
    // joined with no spaces; no leading space is dropped ("▁only" -> " only").
    std::string decode(const std::vector<int64_t>& ids, bool skipSpecial = true) const;

    // Plain SentencePiece decode of sentencepiece ids — exactly `spm_decode --input_format=id`
    // (control pieces vanish, <unk> becomes " ⁇ ", no HF rules). Throws for ids that are not
    // pieces of tokenizer.model.
    std::string decodeSentencePiece(const std::vector<int64_t>& ids) const;

    std::string piece(int64_t id) const;                 // piece string or added token text; throws if out of range
    int64_t pieceToId(const std::string& piece) const;   // added tokens first, then pieces; -1 if unknown
    int64_t vocabSize() const;                           // sentencepiece pieces + added tokens beyond them
    int64_t sentencePieceSize() const;                   // number of pieces in tokenizer.model
    int64_t bosId() const;                               // -1 if the model has none
    int64_t eosId() const;                               // -1 if the model has none
    int64_t unkId() const;
    int64_t imageTokenId() const;                        // id of "<image>" or -1
    int64_t padId() const;                               // id of the pad token / "<pad>" or -1
    // True for the configured special tokens (bos/eos/unk/pad/additional, added tokens
    // flagged "special") and for SentencePiece CONTROL/UNKNOWN pieces.
    bool isSpecial(int64_t id) const;
    bool addBosToken() const;                            // tokenizer_config add_bos_token (default true)
    bool addEosToken() const;                            // tokenizer_config add_eos_token (default false)
    bool legacy() const;                                 // tokenizer_config legacy (default true)

    struct Impl;  // defined in text/TokenizerImpl.h

private:
    explicit Tokenizer(std::shared_ptr<const Impl> impl);
    std::shared_ptr<const Impl> impl_;  // immutable, shared: copies are cheap
    friend class StreamingDetokenizer;
};

} // namespace kvsteer
