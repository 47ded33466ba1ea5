#pragma once
// kvsteer::Tokenizer — one API over two kinds of Hugging Face tokenizer directory, chosen by
// the files it has (see loadFromDirectory):
//
// * SentencePiece: a self-contained reader and encoder/decoder for SentencePiece BPE
//   `tokenizer.model` files, with the Hugging Face *slow* LlamaTokenizer layered on top
//   (added/special tokens, BOS/EOS, the legacy/non-legacy prompt handling and decode rules), or
//   the slow GemmaTokenizer when tokenizer_config.json's tokenizer_class says so (PaliGemma).
//   We deliberately do not link libsentencepiece (it crashes inside our libtorch process), so
//   the protobuf is hand-parsed and the BPE merge loop, normalizer and decoder are
//   re-implemented to be bit-exact with sentencepiece 0.1.97 (the version the reference and
//   `spm_encode`/`spm_decode` use) and with transformers 4.45's LlamaTokenizer.
// * Byte-level BPE (GPT-2 style; Qwen2 / Qwen2-VL / Llama-3): vocab.json + merges.txt with
//   transformers 4.45's slow Qwen2Tokenizer rules — NFC (ICU), added/special tokens cut out
//   whole, Qwen2's pre-tokenizer regex (PCRE2), BPE by merge rank over the GPT-2 byte alphabet,
//   no BOS/EOS — or a tokenizer.json with a "BPE" model and the rules it states as HF
//   `tokenizers` runs them (Llama-3: no normalizer, its own Split regex, ignore_merges, BOS
//   from the post-processor). Decode maps the tokens back to bytes and reads them as UTF-8 with
//   Python's errors="replace".
//
// Every bad input (missing/corrupt files, bad JSON, out-of-range ids) throws kvsteer::Error.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

class Tokenizer {
public:
    // DIR/tokenizer.model present: SentencePiece. It reads that plus, if present,
    // DIR/added_tokens.json and DIR/tokenizer_config.json (added_tokens_decoder, special-token
    // names, add_bos_token, add_eos_token, legacy, add_prefix_space, tokenizer_class).
    // tokenizer_class "GemmaTokenizer" or "GemmaTokenizerFast" selects the GemmaTokenizer
    // rules: default special tokens <bos>/<eos>/<unk>/<pad>, legacy and add_prefix_space
    // ignored, and its decode (below). Anything else selects LlamaTokenizer's.
    // Otherwise DIR/vocab.json + DIR/merges.txt, or else DIR/tokenizer.json whose "model" is
    // {"type": "BPE", "vocab", "merges"} (its "added_tokens" too): byte-level BPE, with
    // tokenizer_config.json and added_tokens.json read as above (Qwen2Tokenizer's defaults:
    // no BOS, eos/unk/pad "<|endoftext|>").
    // Throws kvsteer::Error naming the file and what was expected.
    static Tokenizer loadFromDirectory(const std::string& dir);

    // HF slow LlamaTokenizer semantics (legacy=true by default): the text is split on the
    // added/special tokens (leftmost-longest), each remaining non-empty chunk is encoded by
    // SentencePiece on its own (so each gets the dummy "▁" prefix), special chunks become
    // their ids. With addBos the configured special tokens are added the way HF's
    // add_special_tokens=True does: BOS first if add_bos_token (default true), EOS last if
    // add_eos_token (default false).
    // Byte-level BPE (Qwen2Tokenizer): NFC, then the added/special tokens are cut out whole
    // (leftmost-longest) and become their ids; every other chunk is split by Qwen2's
    // pre-tokenizer regex and each piece's UTF-8 bytes are BPE-merged. addBos adds BOS / EOS
    // only where tokenizer_config.json sets add_bos_token / add_eos_token to true (Qwen2's
    // files do not: nothing is added), or the token a tokenizer.json's post-processor puts first
    // (Llama-3's <|begin_of_text|>) — never a second one before a text that starts with it.
    std::vector<int64_t> encode(const std::string& text, bool addBos = true) const;

    // Plain SentencePiece encode of one string — exactly `spm_encode --output_format=id`
    // for one line. No added-token splitting, no BOS. Throws for a byte-level BPE tokenizer.
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
    // Byte-level BPE (Qwen2Tokenizer): each run of ordinary tokens is mapped back to its bytes
    // and read as UTF-8 with Python's errors="replace" (one U+FFFD per maximal ill-formed
    // subsequence: a token that ends inside a character gives U+FFFD when nothing completes
    // it); added tokens are written as their text with nothing between the parts.
    std::string decode(const std::vector<int64_t>& ids, bool skipSpecial = true) const;

    // Plain SentencePiece decode of sentencepiece ids — exactly `spm_decode --input_format=id`
    // (control pieces vanish, <unk> becomes " ⁇ ", no HF rules). Throws for ids that are not
    // pieces of tokenizer.model, and for a byte-level BPE tokenizer.
    std::string decodeSentencePiece(const std::vector<int64_t>& ids) const;

    // Piece string (byte-level BPE: the token in the byte alphabet, e.g. "Ġcolor") or added
    // token text; throws if out of range.
    std::string piece(int64_t id) const;
    int64_t pieceToId(const std::string& piece) const;   // added tokens first, then pieces; -1 if unknown
    int64_t vocabSize() const;                           // pieces (vocab.json) + added tokens beyond them
    int64_t sentencePieceSize() const;                   // number of pieces in tokenizer.model; 0 for byte-level BPE
    int64_t bosId() const;                               // -1 if the model has none (Qwen2: none)
    int64_t eosId() const;                               // -1 if the model has none
    int64_t unkId() const;                               // -1 if none (Qwen2-VL's files set unk_token null)
    // The image placeholder the processor expands: "<image>" (LLaVA, PaliGemma) or, for a
    // byte-level BPE tokenizer, "<|image_pad|>" (Qwen2-VL: the one token between
    // <|vision_start|> and <|vision_end|> that becomes t*h*w/4 copies); -1 if absent.
    int64_t imageTokenId() const;
    int64_t padId() const;                               // id of the pad token / "<pad>" or -1
    // True for the configured special tokens (bos/eos/unk/pad/additional, added tokens
    // flagged "special") and for SentencePiece CONTROL/UNKNOWN pieces.
    bool isSpecial(int64_t id) const;
    bool addBosToken() const;   // tokenizer_config add_bos_token (default true; byte-level BPE: false)
    bool addEosToken() const;   // tokenizer_config add_eos_token (default false)
    bool legacy() const;        // tokenizer_config legacy (default true; byte-level BPE: false, no such rule)

    struct Impl;  // the interface of the two implementations, text/TokenizerImpl.h

private:
    explicit Tokenizer(std::shared_ptr<const Impl> impl);
    std::shared_ptr<const Impl> impl_;  // immutable, shared: copies are cheap
    friend class StreamingDetokenizer;
};

} // namespace kvsteer
