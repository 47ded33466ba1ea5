#pragma once
// Unicode NFC for UTF-8 text, through ICU (libicu): byte-level BPE tokenizers (Qwen2) compose
// their input first, like Python's unicodedata.normalize("NFC", text). Kept apart so that
// only this file sees ICU.
#include <string>
#include <string_view>

namespace kvsteer::detail {

// NFC of `utf8`. Ill-formed UTF-8 (which a Python str cannot hold) is read with each maximal
// ill-formed subsequence as U+FFFD. Throws kvsteer::Error if ICU fails.
std::string nfc(std::string_view utf8);

} // namespace kvsteer::detail
