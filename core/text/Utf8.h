#pragma once
// UTF-8 the way SentencePiece judges it, plus the few byte-string and Python str helpers the
// tokenizer needs. These rules are shared by the normalizer, the decoder, the Hugging Face
// layer and the streaming detokenizer, and each of them must draw the line between valid and
// invalid bytes at exactly the same place, or encode/decode stop being bit-exact with
// sentencepiece 0.1.97 and transformers.
#include <cstddef>
#include <string>
#include <string_view>

namespace kvsteer::detail {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Plain byte comparisons. On UTF-8 text a byte prefix/suffix that is itself valid UTF-8 is
// also a character prefix/suffix, so no decoding is needed.
bool startsWith(std::string_view s, std::string_view prefix);
bool endsWith(std::string_view s, std::string_view suffix);
std::string replaceAll(std::string_view s, std::string_view from, std::string_view to);

// SentencePiece's string_util::OneCharLen: the length a lead byte announces (1 for
// continuation bytes), used to step through text that is already known to be valid.
size_t oneCharLen(unsigned char lead);

// SentencePiece's DecodeUTF8 + IsValidDecodeUTF8: is the character at the start of `s`
// valid? `length` receives its size, or 1 for an invalid byte. Invalid means: bad lead
// byte, missing/bad continuation bytes, overlong, surrogate or above U+10FFFF. Note that a
// truncated sequence (E2 82 then end) is invalid byte by byte — SentencePiece emits one
// U+FFFD per byte there, unlike Python's errors='replace' which emits one for the whole
// maximal prefix. The slow HF tokenizer returns SentencePiece's string, so we follow it.
bool decodeUtf8Char(std::string_view s, size_t* length);

// Bytes -> text the way SentencePiece's decoder treats a run of byte pieces.
std::string bytesToText(std::string_view bytes);

// True when `b` is a proper prefix of some well-formed UTF-8 character, i.e. more bytes
// could still make it valid. (Well-formedness per Unicode Table 3-7, which is exactly what
// decodeUtf8Char accepts.) Used by the streaming detokenizer to hold bytes back.
bool isIncompleteUtf8(std::string_view b);

// Python's bytes.decode("utf-8", errors="replace"), which byte-level BPE tokenizers (GPT-2,
// Qwen2) return: each *maximal subpart* of an ill-formed sequence becomes one U+FFFD (E2 82 then
// end -> one U+FFFD, where bytesToText gives two), then decoding resumes at the next byte.
std::string pythonUtf8Decode(std::string_view bytes);
// How many bytes at the start of `s` the step above consumes: the valid character's length,
// or the length of the maximal subpart it replaces (at least 1). `s` must not be empty.
size_t pythonUtf8Step(std::string_view s, bool* valid);

// Python's str.lstrip() / str.rstrip() with no argument: the lstrip/rstrip flags of added
// tokens strip whatever Python calls whitespace, which is more than ASCII spaces.
std::string pythonLstrip(std::string_view s);
std::string pythonRstrip(std::string_view s);

} // namespace kvsteer::detail
