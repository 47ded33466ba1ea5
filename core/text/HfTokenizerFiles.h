#pragma once
// The Hugging Face side of a tokenizer directory: tokenizer_config.json (special-token names,
// added_tokens_decoder, add_bos_token, add_eos_token, legacy, add_prefix_space,
// tokenizer_class) and
// added_tokens.json, read into plain structs. Kept apart from the tables they feed so that
// every rule about what these files may contain, and the error that names the file and key
// when they do not, sits in one place. special_tokens_map.json is not read (the same
// special tokens are in tokenizer_config.json, which HF lets override it).
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kvsteer::detail {

struct AddedToken {
    std::string content;
    int64_t id = -1;
    bool lstrip = false, rstrip = false, singleWord = false, special = false;
};

// A special-token slot of tokenizer_config.json: absent (use the LlamaTokenizer default),
// null (no such token) or a string/AddedToken dict.
struct TokenSlot {
    bool present = false;
    std::optional<std::string> content;
};

struct HfConfig {
    std::vector<AddedToken> decoderTokens;   // tokenizer_config.json added_tokens_decoder
    bool hasDecoder = false;
    std::vector<AddedToken> jsonTokens;      // added_tokens.json
    std::map<std::string, TokenSlot> slots;  // bos_token, eos_token, ...
    std::vector<std::string> additionalSpecial;
    bool addBos = true, addEos = false, legacy = true, addPrefixSpace = true;
    // Whether add_bos_token / add_eos_token were written (non-null): the byte-level BPE
    // tokenizer has other defaults (adds nothing) and only honours an explicit value.
    bool addBosSet = false, addEosSet = false;
    std::string tokenizerClass;              // "" when absent or null
};

// The whole file as bytes; throws kvsteer::Error("<what> at <path>: ...") when it cannot be
// read. tokenizer.model is read through it too.
std::string readWholeFile(const std::filesystem::path& path, const std::string& what);

// The file parsed as JSON; throws kvsteer::Error("<what> at <path>: invalid JSON (...)").
nlohmann::json readJsonFile(const std::filesystem::path& path, const std::string& what);

// Each fills its part of `cfg`; throws kvsteer::Error naming the file and the key.
void readTokenizerConfig(const std::filesystem::path& path, HfConfig& cfg);
void readAddedTokensJson(const std::filesystem::path& path, HfConfig& cfg);

} // namespace kvsteer::detail
