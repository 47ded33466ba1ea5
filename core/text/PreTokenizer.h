#pragma once
// PreTokenizer: the regex split a byte-level BPE tokenizer applies before BPE — Python's
// re.findall with the `regex` module: the text becomes the list of its non-overlapping
// matches, leftmost first (text no alternative matches would be dropped; Qwen2's pattern
// matches every character). Compiled once with PCRE2 in UTF + UCP mode (so \p{L}, \p{N} and
// (?i) are Unicode-aware, as in `regex`) and JIT-compiled where PCRE2 can. `regex`'s \s is the
// Unicode White_Space property, while PCRE2's UCP \s also takes U+180E MONGOLIAN VOWEL
// SEPARATOR (seen when cross-checking against `regex`: "\u180e't" splits differently), so
// \s / \S are compiled as \p{White_Space} / \P{White_Space}.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kvsteer::detail {

// Qwen2Tokenizer's PRETOKENIZE_REGEX: English contractions, letter runs with at most one
// leading non-letter non-digit, single digits, punctuation runs with an optional leading
// space, newline runs, and whitespace (a run before a word leaves its last space to the word).
inline constexpr const char* kQwen2PreTokenizePattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

class PreTokenizer {
public:
    // Throws kvsteer::Error if PCRE2 rejects the pattern. `keepUnmatched`: the text between two
    // matches is a piece too (the tokenizers library's Split with "Isolated" behaviour) rather
    // than dropped (findall). The same for Qwen2's and Llama-3's patterns, which match every character.
    explicit PreTokenizer(const std::string& pattern = kQwen2PreTokenizePattern, bool keepUnmatched = false);
    ~PreTokenizer();
    PreTokenizer(PreTokenizer&&) noexcept;
    PreTokenizer& operator=(PreTokenizer&&) noexcept;

    // The matches in `text` (valid UTF-8; throws kvsteer::Error otherwise), as views into it.
    // Safe to call from several threads at once.
    std::vector<std::string_view> split(std::string_view text) const;

private:
    struct Compiled;
    std::unique_ptr<Compiled> compiled_;
    bool keepUnmatched_ = false;
};

} // namespace kvsteer::detail
