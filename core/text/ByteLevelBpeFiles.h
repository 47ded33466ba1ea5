#pragma once
// The files of a byte-level BPE tokenizer, read into plain structs: vocab.json + merges.txt
// (what the slow GPT2Tokenizer / Qwen2Tokenizer read) or the "model" and "added_tokens" of a
// tokenizer.json (what a checkpoint may ship instead). Every rule about what these files may
// contain, and the error naming the file and what was expected, sits here; whether the merges
// and the vocabulary agree is ByteLevelBpe's check.
#include "text/HfTokenizerFiles.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace kvsteer::detail {

struct BpeMerge {
    std::string first, second;
    std::string where;  // "merges.txt at P: line 7", named in errors
};

struct BpeFiles {
    std::string vocabWhere;                              // "vocab.json at P" / "tokenizer.json at P: model.vocab"
    std::vector<std::pair<std::string, int64_t>> vocab;  // token (byte alphabet) -> id
    std::vector<BpeMerge> merges;                        // in rank order
    std::vector<AddedToken> addedTokens;                 // tokenizer.json "added_tokens"
};

// vocab.json: an object of token -> non-negative integer id. merges.txt: an optional
// "#version: ..." first line, then one merge per line, two symbols separated by a space
// (blank lines skipped). Throws kvsteer::Error naming the file, the line and what was expected.
BpeFiles readVocabAndMerges(const std::filesystem::path& vocabJson, const std::filesystem::path& mergesTxt);

// tokenizer.json with "model": {"type": "BPE", "vocab": {...}, "merges": ["a b", ...] or
// [["a", "b"], ...]} and an optional "added_tokens": [{"id", "content", "special", "lstrip",
// "rstrip", "single_word"}, ...]. Throws kvsteer::Error for another model type, and for
// anything malformed.
BpeFiles readTokenizerJson(const std::filesystem::path& tokenizerJson);

} // namespace kvsteer::detail
