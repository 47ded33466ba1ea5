#pragma once
// SentencePieceTokenizer: the Tokenizer::Impl for a directory with tokenizer.model — the
// SentencePiece BPE model plus the HF slow LlamaTokenizer / GemmaTokenizer layer
// (HfSentencePiece), loaded and answered exactly as the Tokenizer did before it had a second
// implementation.
#include "text/HfSentencePiece.h"
#include "text/TokenizerImpl.h"

#include <filesystem>
#include <memory>

namespace kvsteer::detail {

class SentencePieceTokenizer final : public Tokenizer::Impl {
public:
    // Reads DIR/tokenizer.model (which must exist) and, if present, tokenizer_config.json and
    // added_tokens.json. Throws kvsteer::Error naming the file.
    static std::shared_ptr<const SentencePieceTokenizer> load(const std::filesystem::path& dir);

    std::vector<int64_t> encode(const std::string& text, bool addSpecial) const override;
    std::string decode(const std::vector<int64_t>& ids, bool skipSpecial) const override;
    std::vector<int64_t> encodeSentencePiece(const std::string& text) const override;
    std::string decodeSentencePiece(const std::vector<int64_t>& ids) const override;
    std::string piece(int64_t id) const override;
    int64_t pieceToId(const std::string& piece) const override { return hf_.lookup(piece); }
    int64_t vocabSize() const override { return hf_.vocabSize; }
    int64_t sentencePieceSize() const override { return static_cast<int64_t>(hf_.pieces.size()); }
    int64_t bosId() const override { return hf_.bos; }
    int64_t eosId() const override { return hf_.eos; }
    int64_t unkId() const override { return hf_.unk; }
    int64_t imageTokenId() const override { return hf_.image; }
    int64_t padId() const override { return hf_.pad; }
    bool isSpecial(int64_t id) const override;
    bool addBosToken() const override { return hf_.addBos; }
    bool addEosToken() const override { return hf_.addEos; }
    bool legacy() const override { return hf_.legacy; }
    std::unique_ptr<DetokenizerState> newDetokenizer() const override;

private:
    HfSentencePiece hf_;
};

} // namespace kvsteer::detail
