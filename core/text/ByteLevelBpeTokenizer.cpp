// ByteLevelBpeTokenizer — see ByteLevelBpeTokenizer.h. Follows transformers 4.45's
// tokenization_qwen2.py (Qwen2Tokenizer: its defaults, prepare_for_tokenization's NFC,
// _tokenize, convert_tokens_to_string, _decode without spaces between special tokens) and
// tokenization_utils.py (added tokens, tokenize, _decode).
#include "text/ByteLevelBpeTokenizer.h"

#include "Error.h"
#include "text/ByteLevelBpeStream.h"
#include "text/UnicodeNormalize.h"
#include "text/Utf8.h"

#include <algorithm>
#include <map>
#include <optional>

namespace kvsteer::detail {

namespace fs = std::filesystem;

namespace {

bool fileExists(const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec);
}

// vocab.json + merges.txt are what the slow tokenizer reads, so they win over tokenizer.json;
// one of the two alone is an error unless a tokenizer.json can stand in.
BpeFiles readBpeFiles(const fs::path& root) {
    const fs::path vocab = root / "vocab.json", merges = root / "merges.txt", json = root / "tokenizer.json";
    if (fileExists(vocab) && fileExists(merges)) return readVocabAndMerges(vocab, merges);
    if (fileExists(json)) return readTokenizerJson(json);
    const fs::path& missing = fileExists(vocab) ? merges : vocab;
    const fs::path& there = fileExists(vocab) ? vocab : merges;
    throw Error("missing tokenizer file: " + missing.string() + " does not exist, but " + there.string() +
                " does; a byte-level BPE tokenizer needs both vocab.json and merges.txt (or a tokenizer.json)");
}

} // namespace

bool ByteLevelBpeTokenizer::present(const fs::path& dir) {
    return fileExists(dir / "vocab.json") || fileExists(dir / "merges.txt") || fileExists(dir / "tokenizer.json");
}

std::shared_ptr<const ByteLevelBpeTokenizer> ByteLevelBpeTokenizer::load(const fs::path& root) {
    auto tok = std::make_shared<ByteLevelBpeTokenizer>();
    tok->where_ = root.string();
    const BpeFiles files = readBpeFiles(root);
    tok->bpe_ = ByteLevelBpe(files);
    tok->preTokenizer_ = PreTokenizer(files.rules.splitPattern, files.rules.fromTokenizerJson);
    tok->nfc_ = files.rules.nfc;
    tok->ignoreMerges_ = files.rules.ignoreMerges;
    HfConfig cfg;
    if (fileExists(root / "tokenizer_config.json")) readTokenizerConfig(root / "tokenizer_config.json", cfg);
    if (fileExists(root / "added_tokens.json")) readAddedTokensJson(root / "added_tokens.json", cfg);
    tok->configure(cfg, files);
    return tok;
}

// Added tokens: tokenizer.json's, then tokenizer_config.json's added_tokens_decoder (HF reads
// added_tokens.json only when that is absent); the first definition of an id wins.
void ByteLevelBpeTokenizer::configure(const HfConfig& cfg, const BpeFiles& files) {
    for (const AddedToken& t : files.addedTokens) added_.add(t);
    for (const AddedToken& t : cfg.decoderTokens) added_.add(t);
    if (!cfg.hasDecoder) {
        for (AddedToken t : cfg.jsonTokens) {
            const auto& extra = cfg.additionalSpecial;
            t.special = std::find(extra.begin(), extra.end(), t.content) != extra.end();
            added_.add(t);
        }
    }
    // A fast tokenizer's files (tokenizer_class PreTrainedTokenizerFast, as Llama-3's) name their
    // special tokens themselves; only the slow Qwen2Tokenizer has defaults.
    resolveSpecialTokens(cfg, cfg.tokenizerClass != "PreTrainedTokenizerFast");
    for (const auto& [id, t] : added_.byId())
        if (t.special) special_.insert(id);
    added_.buildIndex();
    vocabSize_ = std::max(bpe_.endId(), added_.endId());
    image_ = pieceToId("<|image_pad|>");
    // Qwen2Tokenizer never adds BOS/EOS by itself; an explicit add_bos_token / add_eos_token
    // true is honoured all the same. A tokenizer.json's post-processor may put a token first
    // (Llama-3's <|begin_of_text|>): that is its BOS.
    addBos_ = cfg.addBosSet && cfg.addBos;
    addEos_ = cfg.addEosSet && cfg.addEos;
    if (!files.rules.prependToken.empty()) {
        bos_ = pieceToId(files.rules.prependToken);
        if (bos_ < 0)
            throw Error("tokenizer.json at " + where_ + ": the post-processor's token \"" + files.rules.prependToken + "\" is not in the vocabulary");
        addBos_ = true;
    }
}

// The special-token slots, from tokenizer_config.json or Qwen2Tokenizer's __init__ defaults
// (null = no such token). A slot's text keeps the id it has (added token or vocabulary token)
// or, like HF, is added at the end of the vocabulary.
void ByteLevelBpeTokenizer::resolveSpecialTokens(const HfConfig& cfg, bool slowDefaults) {
    std::map<std::string, std::string> defaults;
    if (slowDefaults) defaults = {{"eos_token", "<|endoftext|>"}, {"unk_token", "<|endoftext|>"}, {"pad_token", "<|endoftext|>"}};
    const auto resolve = [&](const std::string& content) {
        int64_t id = added_.idOf(content);
        if (id < 0) id = bpe_.idOf(content);
        if (id < 0) id = std::max(bpe_.endId(), added_.endId());
        return added_.addSpecial(content, id);
    };
    std::map<std::string, int64_t> slotIds;
    for (const char* slot : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
        std::optional<std::string> content;
        if (const auto it = cfg.slots.find(slot); it != cfg.slots.end()) content = it->second.content;
        else if (const auto d = defaults.find(slot); d != defaults.end()) content = d->second;
        if (content) slotIds[slot] = resolve(*content);
    }
    for (const std::string& c : cfg.additionalSpecial) resolve(c);
    const auto slotId = [&](const char* slot) { const auto it = slotIds.find(slot); return it == slotIds.end() ? int64_t{-1} : it->second; };
    bos_ = slotId("bos_token");
    eos_ = slotId("eos_token");
    unk_ = slotId("unk_token");
    pad_ = slotId("pad_token");
}

// ---------------------------------------------------------------------------------------
// Encode
// ---------------------------------------------------------------------------------------

std::vector<int64_t> ByteLevelBpeTokenizer::encode(const std::string& text, bool addSpecial) const {
    std::vector<int64_t> ids;
    for (const std::string& part : added_.split(nfc_ ? nfc(text) : text)) {
        if (part.empty()) continue;
        if (const int64_t id = added_.idOf(part); id >= 0) {
            ids.push_back(id);
            continue;
        }
        const std::vector<int64_t> chunk = encodeText(part);
        ids.insert(ids.end(), chunk.begin(), chunk.end());
    }
    // Never two BOS: a text that starts with it (a rendered chat template) gets no second one,
    // where HF's tokenizer(text) would add it again.
    if (addSpecial && addBos_ && bos_ >= 0 && (ids.empty() || ids.front() != bos_)) ids.insert(ids.begin(), bos_);
    if (addSpecial && addEos_ && eos_ >= 0) ids.push_back(eos_);
    return ids;
}

// Qwen2Tokenizer._tokenize: every regex piece is BPE-encoded on its own. With ignore_merges a
// piece that is a vocabulary entry is that entry, whatever the merges would make of it.
std::vector<int64_t> ByteLevelBpeTokenizer::encodeText(const std::string& text) const {
    std::vector<int64_t> ids;
    for (std::string_view piece : preTokenizer_.split(text)) {
        if (const int64_t whole = ignoreMerges_ ? bpe_.idOfBytes(piece) : -1; whole >= 0) {
            ids.push_back(whole);
            continue;
        }
        const std::vector<int64_t> chunk = bpe_.encodeBytes(piece);
        ids.insert(ids.end(), chunk.begin(), chunk.end());
    }
    return ids;
}

std::vector<int64_t> ByteLevelBpeTokenizer::encodeSentencePiece(const std::string&) const {
    throw Error("encodeSentencePiece: the tokenizer at " + where_ + " is byte-level BPE, not SentencePiece (no tokenizer.model)");
}

// ---------------------------------------------------------------------------------------
// Decode
// ---------------------------------------------------------------------------------------

// PreTrainedTokenizer._decode with Qwen2's spaces_between_special_tokens=False: the bytes of
// each run of ordinary tokens are decoded together (a character may span tokens), added tokens
// are written as their text. (HF sends the few special tokens that are not "additional" —
// here <|endoftext|> — through the byte alphabet inside the run instead; for ASCII texts such
// as these that gives the same string.)
std::string ByteLevelBpeTokenizer::decode(const std::vector<int64_t>& ids, bool skipSpecial) const {
    std::string out, run;
    for (int64_t id : ids) {
        checkId(id);
        if (skipSpecial && special_.count(id)) continue;
        if (const AddedToken* t = added_.find(id)) {
            out += pythonUtf8Decode(run) + t->content;
            run.clear();
        } else {
            run += bpe_.bytesOf(id);
        }
    }
    return out + pythonUtf8Decode(run);
}

std::string ByteLevelBpeTokenizer::decodeSentencePiece(const std::vector<int64_t>&) const {
    throw Error("decodeSentencePiece: the tokenizer at " + where_ + " is byte-level BPE, not SentencePiece (no tokenizer.model)");
}

std::unique_ptr<DetokenizerState> ByteLevelBpeTokenizer::newDetokenizer() const {
    return std::make_unique<ByteLevelBpeStream>(*this);
}

// ---------------------------------------------------------------------------------------
// Lookups
// ---------------------------------------------------------------------------------------

void ByteLevelBpeTokenizer::checkId(int64_t id) const {
    if (!bpe_.contains(id) && !added_.find(id))
        throw Error("token id " + std::to_string(id) + " is out of range for the byte-level BPE tokenizer at " + where_ + " (" +
                    std::to_string(vocabSize_) + " ids with added tokens)");
}

std::string ByteLevelBpeTokenizer::piece(int64_t id) const {
    checkId(id);
    if (const AddedToken* t = added_.find(id)) return t->content;
    return bpe_.token(id);
}

int64_t ByteLevelBpeTokenizer::pieceToId(const std::string& piece) const {
    const int64_t id = added_.idOf(piece);
    return id >= 0 ? id : bpe_.idOf(piece);
}

} // namespace kvsteer::detail
