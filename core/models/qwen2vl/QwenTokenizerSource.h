#pragma once
// Where make-random's Qwen presets (qwen2.5-vl-7b, qwen3-vl-*) get a tokenizer: a Qwen VL
// directory's files copied into the new model, and the special tokens' ids read from them, so the
// config.json written beside them names the ids the tokenizer really has.
#include "text/Tokenizer.h"

#include <cstdint>
#include <string>

namespace kvsteer {

// Copies vocab.json, merges.txt, tokenizer.json, the tokenizer and chat-template configs and
// generation_config.json (those present) from `from` into `out`, creating it. Throws
// kvsteer::Error when `from` has neither vocab.json nor tokenizer.json.
void copyQwenTokenizerFiles(const std::string& from, const std::string& out);

// The id of `token`; throws kvsteer::Error naming `from` when the tokenizer lacks it.
int64_t requiredTokenId(const Tokenizer& tokenizer, const std::string& token, const std::string& from);

} // namespace kvsteer
