// SentencePieceTokenizer — see SentencePieceTokenizer.h. Loading and the thin glue over
// HfSentencePiece that used to sit in Tokenizer.cpp.
#include "text/SentencePieceTokenizer.h"

#include "Error.h"
#include "text/SentencePieceStream.h"

#include <utility>

namespace kvsteer::detail {

namespace fs = std::filesystem;

std::shared_ptr<const SentencePieceTokenizer> SentencePieceTokenizer::load(const fs::path& root) {
    const fs::path modelPath = root / "tokenizer.model";
    auto tok = std::make_shared<SentencePieceTokenizer>();
    HfSentencePiece& hf = tok->hf_;
    hf.modelPath = modelPath.string();
    const std::string bytes = readWholeFile(modelPath, "tokenizer.model");
    ParsedModel parsed;
    try {
        parsed = parseModelProto(bytes);
    } catch (const ProtoError& e) {
        throw Error("tokenizer.model at " + hf.modelPath + ": not a SentencePiece model (protobuf: " + e.detail + ")");
    }
    hf.buildSentencePiece(std::move(parsed));

    HfConfig cfg;
    std::error_code ec;
    if (fs::exists(root / "tokenizer_config.json", ec)) readTokenizerConfig(root / "tokenizer_config.json", cfg);
    if (fs::exists(root / "added_tokens.json", ec)) readAddedTokensJson(root / "added_tokens.json", cfg);
    hf.buildHuggingFace(cfg);
    return tok;
}

std::vector<int64_t> SentencePieceTokenizer::encode(const std::string& text, bool addSpecial) const {
    std::vector<int64_t> ids = hf_.plainTokenize() ? hf_.tokenizeLegacy(text) : hf_.tokenizeNonLegacy(text);
    if (addSpecial && hf_.addBos && hf_.bos >= 0) ids.insert(ids.begin(), hf_.bos);
    if (addSpecial && hf_.addEos && hf_.eos >= 0) ids.push_back(hf_.eos);
    return ids;
}

std::string SentencePieceTokenizer::decode(const std::vector<int64_t>& ids, bool skipSpecial) const {
    return hf_.hfDecode(ids, skipSpecial);
}

std::vector<int64_t> SentencePieceTokenizer::encodeSentencePiece(const std::string& text) const {
    return hf_.spEncode(text, hf_.addDummyPrefix);
}

std::string SentencePieceTokenizer::decodeSentencePiece(const std::vector<int64_t>& ids) const {
    std::vector<std::string> pieceTexts;
    pieceTexts.reserve(ids.size());
    for (int64_t id : ids) {
        if (id < 0 || id >= sentencePieceSize())
            throw Error("token id " + std::to_string(id) + " is not a piece of " + hf_.modelPath + " (" +
                        std::to_string(sentencePieceSize()) + " pieces)");
        pieceTexts.push_back(hf_.pieces[static_cast<size_t>(id)].text);
    }
    return hf_.spDecode(pieceTexts, hf_.addDummyPrefix);
}

std::string SentencePieceTokenizer::piece(int64_t id) const {
    hf_.checkId(id);
    return hf_.tokenText(id);
}

bool SentencePieceTokenizer::isSpecial(int64_t id) const {
    if (!hf_.validId(id)) return false;
    if (hf_.hfSpecial.count(id)) return true;
    if (hf_.added.find(id)) return false;
    const PieceType t = hf_.spType(static_cast<int>(id));
    return t == PieceType::Control || t == PieceType::Unknown;
}

std::unique_ptr<DetokenizerState> SentencePieceTokenizer::newDetokenizer() const {
    return std::make_unique<SentencePieceStream>(hf_);
}

} // namespace kvsteer::detail
