#pragma once
// ByteLevelBpeTokenizer: the Tokenizer::Impl for a byte-level BPE directory (Qwen2, Qwen2-VL,
// Llama-3, GPT-2 style) on top of ByteLevelBpe: the normalizer (NFC or none), added and special
// tokens cut out whole, the pre-tokenizer regex, BPE per piece (a piece that is a token whole
// with ignore_merges); decode back to bytes read as UTF-8 with errors="replace". vocab.json +
// merges.txt get transformers 4.45's slow Qwen2Tokenizer rules; a tokenizer.json its own
// (ByteLevelRules), as HF `tokenizers` runs it.
#include "text/AddedVocabulary.h"
#include "text/ByteLevelBpe.h"
#include "text/PreTokenizer.h"
#include "text/TokenizerImpl.h"

#include <filesystem>
#include <memory>
#include <unordered_set>

namespace kvsteer::detail {

class ByteLevelBpeTokenizer final : public Tokenizer::Impl {
public:
    // Whether DIR has the files: vocab.json or merges.txt (then both are required unless a
    // tokenizer.json stands in), or a tokenizer.json.
    static bool present(const std::filesystem::path& dir);
    // vocab.json + merges.txt if there, else tokenizer.json; plus tokenizer_config.json and
    // added_tokens.json when present. Throws kvsteer::Error naming the file.
    static std::shared_ptr<const ByteLevelBpeTokenizer> load(const std::filesystem::path& dir);

    std::vector<int64_t> encode(const std::string& text, bool addSpecial) const override;
    std::string decode(const std::vector<int64_t>& ids, bool skipSpecial) const override;
    std::vector<int64_t> encodeSentencePiece(const std::string& text) const override;
    std::string decodeSentencePiece(const std::vector<int64_t>& ids) const override;
    std::string piece(int64_t id) const override;
    int64_t pieceToId(const std::string& piece) const override;
    int64_t vocabSize() const override { return vocabSize_; }
    int64_t sentencePieceSize() const override { return 0; }
    int64_t bosId() const override { return bos_; }
    int64_t eosId() const override { return eos_; }
    int64_t unkId() const override { return unk_; }
    int64_t imageTokenId() const override { return image_; }
    int64_t padId() const override { return pad_; }
    bool isSpecial(int64_t id) const override { return special_.count(id) > 0; }
    bool addBosToken() const override { return addBos_; }
    bool addEosToken() const override { return addEos_; }
    bool legacy() const override { return false; }
    std::unique_ptr<DetokenizerState> newDetokenizer() const override;

    // For ByteLevelBpeStream: throws kvsteer::Error for an id outside the vocabulary; the added
    // token with this id or nullptr; the bytes of an ordinary token.
    void checkId(int64_t id) const;
    const AddedToken* addedToken(int64_t id) const { return added_.find(id); }
    const std::string& tokenBytes(int64_t id) const { return bpe_.bytesOf(id); }

private:
    void configure(const HfConfig& cfg, const BpeFiles& files);
    void resolveSpecialTokens(const HfConfig& cfg, bool slowDefaults);
    std::vector<int64_t> encodeText(const std::string& text) const;

    std::string where_;  // the directory, named in errors
    ByteLevelBpe bpe_;
    AddedVocabulary added_;
    PreTokenizer preTokenizer_;
    bool nfc_ = true, ignoreMerges_ = false;
    std::unordered_set<int64_t> special_;  // HF all_special_ids + added tokens flagged special
    int64_t bos_ = -1, eos_ = -1, unk_ = -1, pad_ = -1, image_ = -1, vocabSize_ = 0;
    bool addBos_ = false, addEos_ = false;
};

} // namespace kvsteer::detail
