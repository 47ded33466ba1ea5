#pragma once
// Tokenizer::Impl: what a Tokenizer forwards its public calls to. Tokenizer::loadFromDirectory
// picks one of two implementations by the files a directory has:
//   detail::SentencePieceTokenizer  tokenizer.model — HF slow LlamaTokenizer / GemmaTokenizer
//   detail::ByteLevelBpeTokenizer   vocab.json + merges.txt, or tokenizer.json with a BPE
//                                   model — HF slow Qwen2Tokenizer (GPT-2 style byte level)
// Each is immutable once loaded and shared by every copy of the Tokenizer. The interface is
// the public API one to one, so the Tokenizer class itself holds no tokenizer rules at all.
#include "text/Tokenizer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

namespace detail {

// The running state of one StreamingDetokenizer. Each implementation replays its own decode
// rules incrementally, so each brings its own state; clone() keeps StreamingDetokenizer
// copyable.
class DetokenizerState {
public:
    virtual ~DetokenizerState() = default;
    virtual std::string push(int64_t id) = 0;
    virtual std::string finish() = 0;
    virtual std::unique_ptr<DetokenizerState> clone() const = 0;
};

} // namespace detail

struct Tokenizer::Impl {
    virtual ~Impl() = default;

    virtual std::vector<int64_t> encode(const std::string& text, bool addSpecial) const = 0;
    virtual std::string decode(const std::vector<int64_t>& ids, bool skipSpecial) const = 0;
    // SentencePiece's own encode/decode: only a SentencePiece tokenizer has them.
    virtual std::vector<int64_t> encodeSentencePiece(const std::string& text) const = 0;
    virtual std::string decodeSentencePiece(const std::vector<int64_t>& ids) const = 0;

    virtual std::string piece(int64_t id) const = 0;
    virtual int64_t pieceToId(const std::string& piece) const = 0;
    virtual int64_t vocabSize() const = 0;
    virtual int64_t sentencePieceSize() const = 0;
    virtual int64_t bosId() const = 0;
    virtual int64_t eosId() const = 0;
    virtual int64_t unkId() const = 0;
    virtual int64_t imageTokenId() const = 0;
    virtual int64_t padId() const = 0;
    virtual bool isSpecial(int64_t id) const = 0;
    virtual bool addBosToken() const = 0;
    virtual bool addEosToken() const = 0;
    virtual bool legacy() const = 0;

    // A fresh streaming state that decodes like decode(ids, skipSpecial=true). It may keep a
    // reference to this Impl: the StreamingDetokenizer holds the Tokenizer that owns it.
    virtual std::unique_ptr<detail::DetokenizerState> newDetokenizer() const = 0;
};

} // namespace kvsteer
