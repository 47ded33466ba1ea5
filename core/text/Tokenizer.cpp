// kvsteer::Tokenizer — see Tokenizer.h. This file is the glue: it picks the implementation a
// tokenizer directory calls for and forwards the public calls to it (Tokenizer::Impl,
// TokenizerImpl.h). The work is done in, bottom-up:
//   Utf8, HfTokenizerFiles            shared: UTF-8 rules, tokenizer_config.json / added_tokens.json
//   SentencePiece (tokenizer.model):
//     ProtoReader, SentencePieceBpe   the protobuf and the SentencePiece model
//     HfSentencePiece                 the HF slow LlamaTokenizer / GemmaTokenizer layer
//     SentencePieceTokenizer, SentencePieceStream
//   Byte-level BPE (vocab.json + merges.txt, or tokenizer.json):
//     ByteLevelBpeFiles, ByteLevelBpe the files and the GPT-2 style byte-level BPE model
//     UnicodeNormalize, PreTokenizer  NFC (ICU) and the Qwen2 split regex (PCRE2)
//     AddedVocabulary                 added/special tokens cut out before BPE
//     ByteLevelBpeTokenizer, ByteLevelBpeStream  the HF slow Qwen2Tokenizer layer
//   StreamingDetokenizer              decode, one id at a time
#include "text/Tokenizer.h"

#include "Error.h"
#include "text/ByteLevelBpeTokenizer.h"
#include "text/SentencePieceTokenizer.h"
#include "text/TokenizerImpl.h"

#include <filesystem>
#include <utility>

namespace kvsteer {

namespace fs = std::filesystem;

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

// tokenizer.model first (what the LLaVA and PaliGemma checkpoints ship, sometimes beside a
// tokenizer.json that we do not need); then the byte-level BPE files.
Tokenizer Tokenizer::loadFromDirectory(const std::string& dir) {
    const fs::path root(dir);
    const fs::path modelPath = root / "tokenizer.model";
    std::error_code ec;
    if (fs::is_regular_file(modelPath, ec)) return Tokenizer(detail::SentencePieceTokenizer::load(root));
    if (detail::ByteLevelBpeTokenizer::present(root)) return Tokenizer(detail::ByteLevelBpeTokenizer::load(root));
    throw Error("missing tokenizer: " + modelPath.string() + " does not exist" +
                (fs::exists(modelPath, ec) ? " as a regular file" : "") +
                ", and neither do vocab.json + merges.txt or tokenizer.json (byte-level BPE) in " + root.string());
}

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool addBos) const { return impl_->encode(text, addBos); }
std::vector<int64_t> Tokenizer::encodeSentencePiece(const std::string& text) const { return impl_->encodeSentencePiece(text); }
std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skipSpecial) const { return impl_->decode(ids, skipSpecial); }
std::string Tokenizer::decodeSentencePiece(const std::vector<int64_t>& ids) const { return impl_->decodeSentencePiece(ids); }
std::string Tokenizer::piece(int64_t id) const { return impl_->piece(id); }
int64_t Tokenizer::pieceToId(const std::string& piece) const { return impl_->pieceToId(piece); }
int64_t Tokenizer::vocabSize() const { return impl_->vocabSize(); }
int64_t Tokenizer::sentencePieceSize() const { return impl_->sentencePieceSize(); }
int64_t Tokenizer::bosId() const { return impl_->bosId(); }
int64_t Tokenizer::eosId() const { return impl_->eosId(); }
int64_t Tokenizer::unkId() const { return impl_->unkId(); }
int64_t Tokenizer::imageTokenId() const { return impl_->imageTokenId(); }
int64_t Tokenizer::padId() const { return impl_->padId(); }
bool Tokenizer::isSpecial(int64_t id) const { return impl_->isSpecial(id); }
bool Tokenizer::addBosToken() const { return impl_->addBosToken(); }
bool Tokenizer::addEosToken() const { return impl_->addEosToken(); }
bool Tokenizer::legacy() const { return impl_->legacy(); }

} // namespace kvsteer
