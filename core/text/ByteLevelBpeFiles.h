#pragma once
// The files of a byte-level BPE tokenizer, read into plain structs: vocab.json + merges.txt
// (what the slow GPT2Tokenizer / Qwen2Tokenizer read) or the "model" and "added_tokens" of a
// tokenizer.json (what a checkpoint may ship instead). Every rule about what these files may
// contain, and the error naming the file and what was expected, sits here; whether the merges
// and the vocabulary agree is ByteLevelBpe's check.
#include "text/HfTokenizerFiles.h"
#include "text/PreTokenizer.h"

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

// What happens around the BPE model: tokenizer.json states it (normalizer, pre_tokenizer,
// model.ignore_merges, post_processor); vocab.json + merges.txt leave it to the slow
// Qwen2Tokenizer's fixed rules, which are the defaults here.
struct ByteLevelRules {
    bool nfc = true;                                       // normalizer NFC (tokenizer.json null: none)
    std::string splitPattern = kQwen2PreTokenizePattern;   // the Split pre-tokenizer's regex
    bool ignoreMerges = false;   // a pre-token that is itself a vocabulary entry is emitted whole (Llama-3)
    std::string prependToken;    // post_processor's TemplateProcessing: the special token put before a text ("" none)
    bool fromTokenizerJson = false;   // the fast tokenizer's files: no slow-tokenizer defaults for special tokens
};

struct BpeFiles {
    std::string vocabWhere;                              // "vocab.json at P" / "tokenizer.json at P: model.vocab"
    std::vector<std::pair<std::string, int64_t>> vocab;  // token (byte alphabet) -> id
    std::vector<BpeMerge> merges;                        // in rank order
    std::vector<AddedToken> addedTokens;                 // tokenizer.json "added_tokens"
    ByteLevelRules rules;
};

// vocab.json: an object of token -> non-negative integer id. merges.txt: an optional
// "#version: ..." first line, then one merge per line, two symbols separated by a space
// (blank lines skipped). Throws kvsteer::Error naming the file, the line and what was expected.
BpeFiles readVocabAndMerges(const std::filesystem::path& vocabJson, const std::filesystem::path& mergesTxt);

// tokenizer.json with "model": {"type": "BPE", "vocab": {...}, "merges": ["a b", ...] or
// [["a", "b"], ...], "ignore_merges"} and an optional "added_tokens": [{"id", "content",
// "special", "lstrip", "rstrip", "single_word"}, ...]; the rules from "normalizer" (null or
// NFC), "pre_tokenizer" (a Split regex with Isolated behaviour followed by ByteLevel without its
// own regex — Qwen2's and Llama-3's — or ByteLevel with GPT-2's regex), "post_processor" (a
// TemplateProcessing that puts one special token before the text, or none) and "decoder"
// (ByteLevel). Throws kvsteer::Error for another model type, for any other normalizer,
// pre-tokenizer or decoder (better refused than silently segmented differently), and for
// anything malformed.
BpeFiles readTokenizerJson(const std::filesystem::path& tokenizerJson);

} // namespace kvsteer::detail
