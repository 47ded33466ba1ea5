#pragma once
// The small files of the demo model's llava-hf directory (torch-free): the tokenizer JSON files
// around a SentencePiece tokenizer.model trained by spm_train, and the processor files.
#include <cstdint>
#include <string>

namespace kvsteer::demo {

// Writes added_tokens.json (<image> and <pad> right after the SentencePiece vocabulary),
// tokenizer_config.json (LlamaTokenizer, legacy: true, add_bos_token: true) and
// special_tokens_map.json next to DIR/tokenizer.model, as in a llava-hf directory, then checks
// that kvsteer::Tokenizer reads them back. Returns the id of <image>. Throws kvsteer::Error.
int64_t writeDemoTokenizerFiles(const std::string& dir);

// Copies tokenizer.model and the three JSON files from `from` to `to`.
void copyDemoTokenizerFiles(const std::string& from, const std::string& to);

// processor_config.json and chat_template.json (LLaVA-1.5's), and generation_config.json.
void writeDemoProcessorFiles(const std::string& dir, int64_t bosId, int64_t eosId, int64_t padId);

} // namespace kvsteer::demo
