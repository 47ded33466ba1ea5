// HfSentencePiece, the Hugging Face slow LlamaTokenizer / GemmaTokenizer layer — see
// HfSentencePiece.h.
//
// Follows transformers 4.45: tokenization_utils.py (added-token registration, tokenize,
// _decode), tokenization_llama.py (tokenize/_tokenize, convert_tokens_to_string) and
// tokenization_gemma.py (its defaults and its own _decode).
#include "text/HfSentencePiece.h"

#include "Error.h"
#include "text/Utf8.h"

#include <algorithm>
#include <cstddef>
#include <optional>

namespace kvsteer {

using detail::HfConfig;
using detail::kSpaceSymbol;
using detail::replaceAll;
using detail::startsWith;

// Registers an added token (AddedVocabulary's rules) and grows the vocabulary to hold it.
void detail::HfSentencePiece::addToken(const AddedToken& t) {
    added.add(t);
    vocabSize = std::max(vocabSize, t.id + 1);
}

// HF registers every configured special token as an added token: it keeps the id it
// already has (added token or piece), or is appended at the end of the vocabulary.
int64_t detail::HfSentencePiece::resolveSpecial(const std::string& content) {
    int64_t id = lookup(content);
    if (id < 0) {
        id = added.addSpecial(content, vocabSize);
        vocabSize = std::max(vocabSize, id + 1);
    } else if (added.idOf(content) < 0) {
        added.addSpecial(content, id);  // a piece of the model used as a special token: split on it too
    }
    hfSpecial.insert(id);
    return id;
}

namespace {

// Which Python class's rules to follow. Nothing in tokenizer.model tells Llama and Gemma apart
// (both are SentencePiece BPE with byte fallback), and the decode rules live in the class's
// code, not in any file; tokenizer_config.json's tokenizer_class is what AutoTokenizer itself
// uses to pick the class, so it is what we go by. The fast class name counts too: loading
// with use_fast=False maps GemmaTokenizerFast to the slow GemmaTokenizer. Anything else,
// or no tokenizer_class at all, keeps the LlamaTokenizer rules (LLaVA's files).
bool isGemmaClass(const std::string& tokenizerClass) {
    return tokenizerClass == "GemmaTokenizer" || tokenizerClass == "GemmaTokenizerFast";
}

} // namespace

void detail::HfSentencePiece::buildHuggingFace(const HfConfig& cfg) {
    vocabSize = static_cast<int64_t>(pieces.size());
    gemma = isGemmaClass(cfg.tokenizerClass);
    addBos = cfg.addBos;
    addEos = cfg.addEos;
    legacy = cfg.legacy;
    addPrefixSpace = cfg.addPrefixSpace;

    // HF reads added_tokens.json only when tokenizer_config.json has no added_tokens_decoder.
    for (const AddedToken& t : cfg.decoderTokens) addToken(t);
    if (!cfg.hasDecoder) {
        for (AddedToken t : cfg.jsonTokens) {
            t.special = std::find(cfg.additionalSpecial.begin(), cfg.additionalSpecial.end(), t.content) != cfg.additionalSpecial.end();
            addToken(t);
        }
    }
    for (const auto& [id, t] : added.byId())
        if (t.special) hfSpecial.insert(id);

    // The class's __init__ defaults, overridden by tokenizer_config.json (null = no such token).
    using Defaults = std::map<std::string, std::optional<std::string>>;
    const Defaults defaults =
        gemma ? Defaults{{"bos_token", "<bos>"}, {"eos_token", "<eos>"}, {"unk_token", "<unk>"}, {"pad_token", "<pad>"}}
              : Defaults{{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"}};
    const auto slotContent = [&](const std::string& slot) -> std::optional<std::string> {
        if (auto it = cfg.slots.find(slot); it != cfg.slots.end()) return it->second.content;
        if (auto it = defaults.find(slot); it != defaults.end()) return it->second;
        return std::nullopt;
    };
    std::map<std::string, int64_t> slotIds;
    for (const char* slot : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"})
        if (auto c = slotContent(slot)) slotIds[slot] = resolveSpecial(*c);
    for (const std::string& c : cfg.additionalSpecial) {
        const int64_t id = resolveSpecial(c);
        if (id >= static_cast<int64_t>(pieces.size())) splitOff.insert(id);
    }
    for (const auto& [id, t] : added.byId())
        if (!hfSpecial.count(id)) splitOff.insert(id);

    const auto slotId = [&](const char* slot) { auto it = slotIds.find(slot); return it == slotIds.end() ? int64_t{-1} : it->second; };
    bos = slotId("bos_token");
    eos = slotId("eos_token");
    unk = slotId("unk_token");
    if (unk < 0) unk = spUnkId;
    if (auto c = slotContent("unk_token")) unkTokenText = *c;
    pad = slotId("pad_token");
    if (pad < 0) pad = lookup("<pad>");
    image = lookup("<image>");

    added.buildIndex();
}

// ---------------------------------------------------------------------------------------
// Lookups
// ---------------------------------------------------------------------------------------

// HF convert_tokens_to_ids without the <unk> fallback: added tokens first.
int64_t detail::HfSentencePiece::lookup(const std::string& piece) const {
    if (const int64_t id = added.idOf(piece); id >= 0) return id;
    if (auto it = reserved.find(piece); it != reserved.end()) return it->second;
    if (auto it = mergeable.find(piece); it != mergeable.end()) return it->second;
    return -1;
}

bool detail::HfSentencePiece::validId(int64_t id) const {
    return id >= 0 && (id < static_cast<int64_t>(pieces.size()) || added.find(id));
}

void detail::HfSentencePiece::checkId(int64_t id) const {
    if (!validId(id))
        throw Error("token id " + std::to_string(id) + " is out of range for the tokenizer at " + modelPath + " (" +
                    std::to_string(pieces.size()) + " pieces, " + std::to_string(vocabSize) + " ids with added tokens)");
}

const std::string& detail::HfSentencePiece::tokenText(int64_t id) const {
    if (const AddedToken* t = added.find(id)) return t->content;
    return pieces[static_cast<size_t>(id)].text;
}

// ---------------------------------------------------------------------------------------
// Encode
// ---------------------------------------------------------------------------------------

// legacy=true: every non-special part is encoded by SentencePiece on its own.
std::vector<int64_t> detail::HfSentencePiece::tokenizeLegacy(const std::string& text) const {
    const std::vector<std::string> parts = added.split(text);
    std::vector<int64_t> ids;
    for (const std::string& part : parts) {
        if (part.empty()) continue;
        if (const int64_t id = added.idOf(part); id >= 0) {
            ids.push_back(id);
            continue;
        }
        const auto chunk = spEncode(part, addDummyPrefix);
        ids.insert(ids.end(), chunk.begin(), chunk.end());
    }
    return ids;
}

// legacy=false (LlamaTokenizer.tokenize/_tokenize): the model runs without the dummy
// prefix; one "▁" is put in front of the whole text instead, and a part starting with a
// space is encoded behind the unk token text (then those pieces are dropped) so that
// SentencePiece does not eat its leading "▁".
std::vector<int64_t> detail::HfSentencePiece::tokenizeNonLegacy(const std::string& input) const {
    if (input.empty()) return {};
    std::string text = replaceAll(input, kSpaceSymbol, " ");
    if (addPrefixSpace) text.insert(0, kSpaceSymbol);
    const std::vector<std::string> parts = added.split(text);

    const size_t unkLength = spEncode(unkTokenText, false).size();
    std::vector<int64_t> ids;
    std::vector<bool> fromAdded;
    for (const std::string& part : parts) {
        if (part.empty()) continue;
        if (const int64_t id = added.idOf(part); id >= 0) {
            ids.push_back(id);
            fromAdded.push_back(true);
            continue;
        }
        std::vector<int64_t> chunk;
        if (startsWith(part, kSpaceSymbol) || startsWith(part, " ")) {
            chunk = spEncode(unkTokenText + part, false);
            if (chunk.size() >= unkLength) chunk.erase(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(unkLength));
        } else {
            chunk = spEncode(part, false);
        }
        ids.insert(ids.end(), chunk.begin(), chunk.end());
        fromAdded.insert(fromAdded.end(), chunk.size(), false);
    }
    // A lone "▁" in front of a special token is dropped.
    if (ids.size() > 1 && !fromAdded[0] && ids[0] < static_cast<int64_t>(pieces.size()) &&
        pieces[static_cast<size_t>(ids[0])].text == kSpaceSymbol && fromAdded[1] && hfSpecial.count(ids[1]))
        ids.erase(ids.begin());
    return ids;
}

// ---------------------------------------------------------------------------------------
// Decode
// ---------------------------------------------------------------------------------------

// LlamaTokenizer.convert_tokens_to_string.
std::string detail::HfSentencePiece::convertTokensToString(const std::vector<int64_t>& ids) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int64_t id : ids) tokens.push_back(tokenText(id));
    // The prefix space HF (or the dummy prefix) put in front is removed from the first token.
    if (addPrefixSpace && startsWith(tokens[0], kSpaceSymbol)) tokens[0].erase(0, kSpaceSymbol.size());

    std::string out;
    std::vector<std::string> sub;
    bool prevIsSpecial = false;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (hfSpecial.count(ids[i])) {
            if (!prevIsSpecial && i != 0 && legacy) out += ' ';
            out += spDecode(sub, hfDummyPrefix()) + tokens[i];
            prevIsSpecial = true;
            sub.clear();
        } else {
            if (prevIsSpecial && i == 1 && addPrefixSpace && !startsWith(tokens[i], kSpaceSymbol)) out += ' ';
            sub.push_back(tokens[i]);
            prevIsSpecial = false;
        }
    }
    return out + spDecode(sub, hfDummyPrefix());
}

std::string detail::HfSentencePiece::hfDecode(const std::vector<int64_t>& ids, bool skipSpecial) const {
    return gemma ? gemmaDecode(ids, skipSpecial) : llamaDecode(ids, skipSpecial);
}

// PreTrainedTokenizer._decode with spaces_between_special_tokens=True (HF's default; the
// value stored in tokenizer_config.json is not consulted by decode()).
std::string detail::HfSentencePiece::llamaDecode(const std::vector<int64_t>& ids, bool skipSpecial) const {
    std::vector<std::string> subTexts;
    std::vector<int64_t> current;
    for (int64_t id : ids) {
        checkId(id);
        if (skipSpecial && hfSpecial.count(id)) continue;
        if (!splitOff.count(id)) {
            current.push_back(id);
            continue;
        }
        if (!current.empty()) {
            std::string s = convertTokensToString(current);
            if (!s.empty()) subTexts.push_back(std::move(s));
            current.clear();
        }
        subTexts.push_back(tokenText(id));
    }
    if (!current.empty()) subTexts.push_back(convertTokensToString(current));

    std::string out;
    for (size_t i = 0; i < subTexts.size(); ++i) {
        if (i > 0) out += ' ';
        out += subTexts[i];
    }
    return out;
}

// GemmaTokenizer._decode, which replaces the base class's: every added token (special or
// not, e.g. <loc0213>) is written as its text, each run of other ids between them goes
// through SentencePiece's decoder on its own (a fresh decoder state per run), and the parts
// are joined with nothing in between (its spaces_between_special_tokens defaults to False and
// decode() does not pass the tokenizer_config.json value). No prefix space is removed and no
// clean-up is done; a "▁" still left at the end (in an added token's text, or assembled from
// byte pieces) becomes a space.
std::string detail::HfSentencePiece::gemmaDecode(const std::vector<int64_t>& ids, bool skipSpecial) const {
    std::string out;
    std::vector<std::string> run;
    for (int64_t id : ids) {
        checkId(id);  // the slow tokenizer raises "piece id is out of range"
        if (skipSpecial && hfSpecial.count(id)) continue;
        if (const AddedToken* t = added.find(id)) {
            out += spDecode(run, hfDummyPrefix()) + t->content;
            run.clear();
        } else {
            run.push_back(pieces[static_cast<size_t>(id)].text);
        }
    }
    out += spDecode(run, hfDummyPrefix());
    return replaceAll(out, kSpaceSymbol, " ");
}

} // namespace kvsteer
