// tokenizer_config.json and added_tokens.json — see HfTokenizerFiles.h. The defaults and the
// null handling follow transformers 4.45's LlamaTokenizer (GemmaTokenizer reads the same keys;
// its own defaults are applied by HfSentencePiece, which knows the class).
#include "text/HfTokenizerFiles.h"

#include "Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

namespace kvsteer::detail {
namespace {

namespace fs = std::filesystem;

bool optionalBool(const nlohmann::json& obj, const char* key, bool fallback, const std::string& where) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw Error(where + ": \"" + key + "\" must be true or false, got " + it->dump());
    return it->get<bool>();
}

// "<s>" or {"content": "<s>", ...} -> "<s>"; null -> nullopt. Empty texts are rejected: an
// empty added token would match everywhere when splitting.
std::optional<std::string> tokenContent(const nlohmann::json& v, const std::string& where) {
    if (v.is_null()) return std::nullopt;
    const nlohmann::json* text = &v;
    if (v.is_object()) {
        const auto it = v.find("content");
        if (it != v.end()) text = &*it;
    }
    if (text->is_string() && !text->get<std::string>().empty()) return text->get<std::string>();
    throw Error(where + ": expected a non-empty token string or an object with a non-empty \"content\" string, got " + v.dump());
}

int64_t parseTokenId(const std::string& text, const std::string& where) {
    if (text.empty() || text.size() > 10 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw Error(where + ": token id \"" + text + "\" is not a non-negative integer");
    const int64_t id = std::stoll(text);
    if (id > INT32_MAX) throw Error(where + ": token id " + text + " is too large");
    return id;
}

void parseAddedTokensDecoder(const nlohmann::json& decoder, const std::string& where, HfConfig& cfg) {
    if (!decoder.is_object()) throw Error(where + ": \"added_tokens_decoder\" must be an object of id -> token");
    cfg.hasDecoder = true;
    for (const auto& [key, value] : decoder.items()) {
        const std::string entryWhere = where + ": added_tokens_decoder[\"" + key + "\"]";
        AddedToken t;
        t.id = parseTokenId(key, entryWhere);
        if (!value.is_object()) throw Error(entryWhere + " must be an object with \"content\"");
        const auto content = tokenContent(value, entryWhere);
        if (!content) throw Error(entryWhere + " has no content");
        t.content = *content;
        t.lstrip = optionalBool(value, "lstrip", false, entryWhere);
        t.rstrip = optionalBool(value, "rstrip", false, entryWhere);
        t.singleWord = optionalBool(value, "single_word", false, entryWhere);
        t.special = optionalBool(value, "special", false, entryWhere);
        cfg.decoderTokens.push_back(std::move(t));
    }
}

} // namespace

std::string readWholeFile(const fs::path& path, const std::string& what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(what + " at " + path.string() + ": cannot be opened for reading");
    std::ostringstream buf;
    buf << in.rdbuf();
    if (in.bad()) throw Error(what + " at " + path.string() + ": read error");
    return buf.str();
}

nlohmann::json readJsonFile(const fs::path& path, const std::string& what) {
    const std::string text = readWholeFile(path, what);
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error(what + " at " + path.string() + ": invalid JSON (" + e.what() + ")");
    }
}

void readTokenizerConfig(const fs::path& path, HfConfig& cfg) {
    const std::string where = "tokenizer_config.json at " + path.string();
    const nlohmann::json j = readJsonFile(path, "tokenizer_config.json");
    if (!j.is_object()) throw Error(where + ": expected a JSON object at the top level");
    cfg.addBos = optionalBool(j, "add_bos_token", true, where);
    cfg.addEos = optionalBool(j, "add_eos_token", false, where);
    cfg.addBosSet = j.contains("add_bos_token") && !j["add_bos_token"].is_null();
    cfg.addEosSet = j.contains("add_eos_token") && !j["add_eos_token"].is_null();
    cfg.legacy = optionalBool(j, "legacy", true, where);  // HF: None means legacy
    cfg.addPrefixSpace = optionalBool(j, "add_prefix_space", true, where);
    if (const auto it = j.find("tokenizer_class"); it != j.end() && !it->is_null()) {
        if (!it->is_string()) throw Error(where + ": \"tokenizer_class\" must be a string, got " + it->dump());
        cfg.tokenizerClass = it->get<std::string>();
    }
    for (const char* slot : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
        const auto it = j.find(slot);
        if (it == j.end()) continue;
        cfg.slots[slot] = TokenSlot{true, tokenContent(*it, where + ": \"" + slot + "\"")};
    }
    if (const auto it = j.find("additional_special_tokens"); it != j.end() && !it->is_null()) {
        if (!it->is_array()) throw Error(where + ": \"additional_special_tokens\" must be a list");
        for (const auto& v : *it)
            if (auto c = tokenContent(v, where + ": \"additional_special_tokens\"")) cfg.additionalSpecial.push_back(*c);
    }
    if (const auto it = j.find("added_tokens_decoder"); it != j.end() && !it->is_null())
        parseAddedTokensDecoder(*it, where, cfg);
}

void readAddedTokensJson(const fs::path& path, HfConfig& cfg) {
    const std::string where = "added_tokens.json at " + path.string();
    const nlohmann::json j = readJsonFile(path, "added_tokens.json");
    if (!j.is_object()) throw Error(where + ": expected an object mapping token text to integer id, got " + j.type_name());
    for (const auto& [content, value] : j.items()) {
        if (content.empty()) throw Error(where + ": empty token text");
        if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > INT32_MAX)
            throw Error(where + ": id of \"" + content + "\" must be a non-negative integer, got " + value.dump());
        AddedToken t;
        t.content = content;
        t.id = value.get<int64_t>();
        cfg.jsonTokens.push_back(std::move(t));
    }
}

} // namespace kvsteer::detail
