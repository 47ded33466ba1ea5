// vocab.json, merges.txt and tokenizer.json — see ByteLevelBpeFiles.h. merges.txt is read the
// way transformers 4.45's Qwen2Tokenizer reads it (strip each line, skip a first "#version:"
// line and empty lines, split on whitespace), except that a line without exactly two symbols
// is an error instead of a rule that can never apply.
#include "text/ByteLevelBpeFiles.h"

#include "Error.h"

#include <nlohmann/json.hpp>

namespace kvsteer::detail {
namespace {

namespace fs = std::filesystem;

std::vector<std::pair<std::string, int64_t>> parseVocab(const nlohmann::json& j, const std::string& where) {
    if (!j.is_object()) throw Error(where + ": expected an object mapping each token to its integer id, got " + j.type_name());
    std::vector<std::pair<std::string, int64_t>> vocab;
    vocab.reserve(j.size());
    for (const auto& [token, id] : j.items()) {
        if (token.empty()) throw Error(where + ": empty token");
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
            throw Error(where + ": id of \"" + token + "\" must be a non-negative integer, got " + id.dump());
        vocab.emplace_back(token, id.get<int64_t>());
    }
    return vocab;
}

// Python's str.split() on the ASCII whitespace a merges line can hold.
std::vector<std::string> splitWhitespace(const std::string& line) {
    std::vector<std::string> words;
    size_t pos = 0;
    while (true) {
        pos = line.find_first_not_of(" \t\r\f\v", pos);
        if (pos == std::string::npos) return words;
        const size_t end = line.find_first_of(" \t\r\f\v", pos);
        words.push_back(line.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
        pos = end;
    }
}

std::vector<BpeMerge> parseMergesTxt(const std::string& text, const std::string& where) {
    std::vector<BpeMerge> merges;
    size_t lineNo = 0;
    for (size_t pos = 0; pos < text.size(); ++lineNo) {
        const size_t eol = text.find('\n', pos);
        const std::string line = text.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
        pos = eol == std::string::npos ? text.size() : eol + 1;
        const std::vector<std::string> words = splitWhitespace(line);
        if (words.empty() || (lineNo == 0 && line.rfind("#version:", 0) == 0)) continue;
        const std::string lineWhere = where + ": line " + std::to_string(lineNo + 1);
        if (words.size() != 2) throw Error(lineWhere + ": expected two symbols separated by a space (\"a b\"), got \"" + line + "\"");
        merges.push_back({words[0], words[1], lineWhere});
    }
    return merges;
}

BpeMerge parseJsonMerge(const nlohmann::json& m, const std::string& where) {
    if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t space = s.find(' ');
        if (space != std::string::npos && space > 0 && space + 1 < s.size() && s.find(' ', space + 1) == std::string::npos)
            return {s.substr(0, space), s.substr(space + 1), where};
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string() && !m[0].get<std::string>().empty() &&
               !m[1].get<std::string>().empty()) {
        return {m[0].get<std::string>(), m[1].get<std::string>(), where};
    }
    throw Error(where + ": expected \"a b\" or [\"a\", \"b\"], got " + m.dump());
}

bool flag(const nlohmann::json& obj, const char* key, const std::string& where) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return false;
    if (!it->is_boolean()) throw Error(where + ": \"" + key + "\" must be true or false, got " + it->dump());
    return it->get<bool>();
}

std::vector<AddedToken> parseJsonAddedTokens(const nlohmann::json& list, const std::string& where) {
    if (!list.is_array()) throw Error(where + ": \"added_tokens\" must be a list");
    std::vector<AddedToken> tokens;
    for (size_t i = 0; i < list.size(); ++i) {
        const nlohmann::json& e = list[i];
        const std::string entryWhere = where + ": added_tokens[" + std::to_string(i) + "]";
        if (!e.is_object() || !e.contains("id") || !e["id"].is_number_integer() || e["id"].get<int64_t>() < 0 ||
            e["id"].get<int64_t>() > INT32_MAX || !e.contains("content") || !e["content"].is_string() ||
            e["content"].get<std::string>().empty())
            throw Error(entryWhere + ": expected an object with a non-negative integer \"id\" and a non-empty \"content\" string, got " + e.dump());
        AddedToken t;
        t.id = e["id"].get<int64_t>();
        t.content = e["content"].get<std::string>();
        t.special = flag(e, "special", entryWhere);
        t.lstrip = flag(e, "lstrip", entryWhere);
        t.rstrip = flag(e, "rstrip", entryWhere);
        t.singleWord = flag(e, "single_word", entryWhere);
        tokens.push_back(std::move(t));
    }
    return tokens;
}

// Options of the tokenizers library's BPE that change the segmentation of a byte-level BPE
// and that Qwen2's files leave off: better refused than silently ignored.
void rejectUnsupportedOptions(const nlohmann::json& model, const std::string& where) {
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const auto it = model.find(key);
        if (it != model.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
            throw Error(where + ": model." + key + " " + it->dump() + " is not supported (expected null or \"\")");
    }
    if (flag(model, "byte_fallback", where + ": model"))
        throw Error(where + ": model.byte_fallback true is not supported (expected false: a byte-level BPE needs no fallback)");
    if (const auto it = model.find("dropout"); it != model.end() && !it->is_null() && !(it->is_number() && it->get<double>() == 0))
        throw Error(where + ": model.dropout " + it->dump() + " is not supported (expected null)");
}

// GPT-2's own pre-tokenizer regex: what ByteLevel with use_regex true splits by.
constexpr const char* kGpt2PreTokenizePattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string typeOf(const nlohmann::json& j) { return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : ""; }

bool normalizerIsNfc(const nlohmann::json& j, const std::string& where) {
    if (!j.contains("normalizer") || j["normalizer"].is_null()) return false;
    if (typeOf(j["normalizer"]) == "NFC") return true;
    throw Error(where + ": normalizer " + j["normalizer"].dump() + " is not supported (expected null or {\"type\": \"NFC\"})");
}

// The ByteLevel pre-tokenizer's options this reader follows: no added prefix space.
void checkByteLevel(const nlohmann::json& b, const std::string& where) {
    if (flag(b, "add_prefix_space", where)) throw Error(where + ": add_prefix_space true is not supported (expected false)");
}

std::string splitPatternOf(const nlohmann::json& j, const std::string& where) {
    const std::string w = where + ": pre_tokenizer";
    const nlohmann::json& p = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json();
    if (typeOf(p) == "ByteLevel") {   // alone: its own GPT-2 regex
        checkByteLevel(p, w);
        if (p.contains("use_regex") && !flag(p, "use_regex", w)) throw Error(w + ": ByteLevel without a regex splits nothing (expected use_regex true)");
        return kGpt2PreTokenizePattern;
    }
    const nlohmann::json* steps = typeOf(p) == "Sequence" && p.contains("pretokenizers") ? &p["pretokenizers"] : nullptr;
    if (steps && steps->is_array() && steps->size() == 2 && typeOf((*steps)[0]) == "Split" && typeOf((*steps)[1]) == "ByteLevel") {
        const nlohmann::json& split = (*steps)[0];
        const bool isolated = split.value("behavior", "") == "Isolated" && !flag(split, "invert", w);
        if (isolated && split.contains("pattern") && split["pattern"].is_object() && split["pattern"].contains("Regex") &&
            split["pattern"]["Regex"].is_string()) {
            checkByteLevel((*steps)[1], w);
            if (flag((*steps)[1], "use_regex", w)) throw Error(w + ": ByteLevel after a Split must not split again (expected use_regex false)");
            return split["pattern"]["Regex"].get<std::string>();
        }
    }
    throw Error(w + " " + p.dump().substr(0, 200) +
                " is not supported (expected Sequence[Split{Regex, Isolated}, ByteLevel{use_regex: false}] as Qwen2 and Llama-3 have, "
                "or ByteLevel{use_regex: true})");
}

// TemplateProcessing's "single": [SpecialToken X, Sequence A] puts X before a text; [Sequence A]
// puts nothing. Inside a Sequence of processors, the TemplateProcessing is the one that counts.
std::string prependTokenOf(const nlohmann::json& j, const std::string& where) {
    const std::string w = where + ": post_processor";
    if (!j.contains("post_processor") || j["post_processor"].is_null()) return "";
    const nlohmann::json* template_ = &j["post_processor"];
    if (typeOf(*template_) == "Sequence" && (*template_).contains("processors") && (*template_)["processors"].is_array())
        for (const nlohmann::json& p : (*template_)["processors"])
            if (typeOf(p) == "TemplateProcessing") template_ = &p;
    if (typeOf(*template_) == "ByteLevel" || typeOf(*template_) == "Sequence") return "";   // offsets only
    if (typeOf(*template_) != "TemplateProcessing" || !template_->contains("single") || !(*template_)["single"].is_array())
        throw Error(w + " " + j["post_processor"].dump().substr(0, 200) + " is not supported (expected TemplateProcessing or ByteLevel)");
    std::string prepend;
    const nlohmann::json& single = (*template_)["single"];
    for (size_t i = 0; i < single.size(); ++i) {
        const nlohmann::json& part = single[i];
        const bool special = part.contains("SpecialToken") && part["SpecialToken"].contains("id") && part["SpecialToken"]["id"].is_string();
        if (special && i == 0) prepend = part["SpecialToken"]["id"].get<std::string>();
        else if (!part.contains("Sequence") || i + 1 != single.size())
            throw Error(w + ": TemplateProcessing.single " + single.dump() + " is not supported (expected a special token, then the text)");
    }
    return prepend;
}

ByteLevelRules rulesOf(const nlohmann::json& j, const nlohmann::json& model, const std::string& where) {
    ByteLevelRules r;
    r.fromTokenizerJson = true;
    r.nfc = normalizerIsNfc(j, where);
    r.splitPattern = splitPatternOf(j, where);
    r.ignoreMerges = flag(model, "ignore_merges", where + ": model");
    r.prependToken = prependTokenOf(j, where);
    if (j.contains("decoder") && !j["decoder"].is_null() && typeOf(j["decoder"]) != "ByteLevel")
        throw Error(where + ": decoder " + j["decoder"].dump().substr(0, 200) + " is not supported (expected {\"type\": \"ByteLevel\"})");
    return r;
}

} // namespace

BpeFiles readVocabAndMerges(const fs::path& vocabJson, const fs::path& mergesTxt) {
    BpeFiles files;
    files.vocabWhere = "vocab.json at " + vocabJson.string();
    files.vocab = parseVocab(readJsonFile(vocabJson, "vocab.json"), files.vocabWhere);
    files.merges = parseMergesTxt(readWholeFile(mergesTxt, "merges.txt"), "merges.txt at " + mergesTxt.string());
    return files;
}

BpeFiles readTokenizerJson(const fs::path& tokenizerJson) {
    const std::string where = "tokenizer.json at " + tokenizerJson.string();
    const nlohmann::json j = readJsonFile(tokenizerJson, "tokenizer.json");
    if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
        throw Error(where + ": expected an object with a \"model\" object");
    const nlohmann::json& model = j["model"];
    const std::string type = model.contains("type") && model["type"].is_string() ? model["type"].get<std::string>() : "";
    if (type != "BPE")
        throw Error(where + ": model.type is " + (type.empty() ? "missing" : "\"" + type + "\"") +
                    "; only a \"BPE\" model (byte-level, as Qwen2's) is supported");
    if (!model.contains("vocab") || !model.contains("merges") || !model["merges"].is_array())
        throw Error(where + ": the BPE model needs a \"vocab\" object and a \"merges\" list");
    rejectUnsupportedOptions(model, where);
    BpeFiles files;
    files.vocabWhere = where + ": model.vocab";
    files.vocab = parseVocab(model["vocab"], files.vocabWhere);
    const nlohmann::json& merges = model["merges"];
    files.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i)
        files.merges.push_back(parseJsonMerge(merges[i], where + ": model.merges[" + std::to_string(i) + "]"));
    if (j.contains("added_tokens") && !j["added_tokens"].is_null()) files.addedTokens = parseJsonAddedTokens(j["added_tokens"], where);
    files.rules = rulesOf(j, model, where);
    return files;
}

} // namespace kvsteer::detail
