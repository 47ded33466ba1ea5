// kvsteer::Tokenizer — see Tokenizer.h. This file is the glue: it loads a tokenizer
// directory and forwards the public calls to Tokenizer::Impl. The work is done in, bottom-up:
//   Utf8               UTF-8 with SentencePiece's exact validity rules
//   ProtoReader        the bounds-checked protobuf reader of tokenizer.model (ModelProto)
//   HfTokenizerFiles   tokenizer_config.json and added_tokens.json
//   SentencePieceBpe   the SentencePiece tables, normalizer, BPE merge loop, byte fallback, decoder
//   TokenizerImpl      the HF slow LlamaTokenizer / GemmaTokenizer layer: added-token splitting,
//                      encode, decode
//   StreamingDetokenizer  decode, one id at a time
#include "text/Tokenizer.h"

#include "Error.h"
#include "text/TokenizerImpl.h"

#include <filesystem>
#include <utility>

namespace kvsteer {

namespace fs = std::filesystem;
using detail::HfConfig;
using detail::ParsedModel;
using detail::parseModelProto;
using detail::PieceType;
using detail::ProtoError;
using detail::readAddedTokensJson;
using detail::readTokenizerConfig;
using detail::readWholeFile;

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Tokenizer Tokenizer::loadFromDirectory(const std::string& dir) {
    const fs::path root(dir);
    const fs::path modelPath = root / "tokenizer.model";
    std::error_code ec;
    if (!fs::is_regular_file(modelPath, ec))
        throw Error("missing tokenizer: " + modelPath.string() + " does not exist" +
                    (fs::exists(modelPath, ec) ? " as a regular file" : ""));

    auto impl = std::make_shared<Impl>();
    impl->modelPath = modelPath.string();
    const std::string bytes = readWholeFile(modelPath, "tokenizer.model");
    ParsedModel parsed;
    try {
        parsed = parseModelProto(bytes);
    } catch (const ProtoError& e) {
        throw Error("tokenizer.model at " + impl->modelPath + ": not a SentencePiece model (protobuf: " + e.detail + ")");
    }
    impl->buildSentencePiece(std::move(parsed));

    HfConfig cfg;
    if (fs::exists(root / "tokenizer_config.json", ec)) readTokenizerConfig(root / "tokenizer_config.json", cfg);
    if (fs::exists(root / "added_tokens.json", ec)) readAddedTokensJson(root / "added_tokens.json", cfg);
    impl->buildHuggingFace(cfg);
    return Tokenizer(std::move(impl));
}

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool addBos) const {
    std::vector<int64_t> ids = impl_->plainTokenize() ? impl_->tokenizeLegacy(text) : impl_->tokenizeNonLegacy(text);
    if (addBos && impl_->addBos && impl_->bos >= 0) ids.insert(ids.begin(), impl_->bos);
    if (addBos && impl_->addEos && impl_->eos >= 0) ids.push_back(impl_->eos);
    return ids;
}

std::vector<int64_t> Tokenizer::encodeSentencePiece(const std::string& text) const {
    return impl_->spEncode(text, impl_->addDummyPrefix);
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skipSpecial) const {
    return impl_->hfDecode(ids, skipSpecial);
}

std::string Tokenizer::decodeSentencePiece(const std::vector<int64_t>& ids) const {
    std::vector<std::string> pieceTexts;
    pieceTexts.reserve(ids.size());
    for (int64_t id : ids) {
        if (id < 0 || id >= sentencePieceSize())
            throw Error("token id " + std::to_string(id) + " is not a piece of " + impl_->modelPath + " (" +
                        std::to_string(sentencePieceSize()) + " pieces)");
        pieceTexts.push_back(impl_->pieces[static_cast<size_t>(id)].text);
    }
    return impl_->spDecode(pieceTexts, impl_->addDummyPrefix);
}

std::string Tokenizer::piece(int64_t id) const {
    impl_->checkId(id);
    return impl_->tokenText(id);
}

int64_t Tokenizer::pieceToId(const std::string& piece) const { return impl_->lookup(piece); }
int64_t Tokenizer::vocabSize() const { return impl_->vocabSize; }
int64_t Tokenizer::sentencePieceSize() const { return static_cast<int64_t>(impl_->pieces.size()); }
int64_t Tokenizer::bosId() const { return impl_->bos; }
int64_t Tokenizer::eosId() const { return impl_->eos; }
int64_t Tokenizer::unkId() const { return impl_->unk; }
int64_t Tokenizer::imageTokenId() const { return impl_->image; }
int64_t Tokenizer::padId() const { return impl_->pad; }
bool Tokenizer::addBosToken() const { return impl_->addBos; }
bool Tokenizer::addEosToken() const { return impl_->addEos; }
bool Tokenizer::legacy() const { return impl_->legacy; }

bool Tokenizer::isSpecial(int64_t id) const {
    if (!impl_->validId(id)) return false;
    if (impl_->hfSpecial.count(id)) return true;
    if (impl_->addedById.count(id)) return false;
    const PieceType t = impl_->spType(static_cast<int>(id));
    return t == PieceType::Control || t == PieceType::Unknown;
}

} // namespace kvsteer
