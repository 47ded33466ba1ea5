#include "models/qwen2vl/QwenTokenizerSource.h"

#include "Error.h"

#include <filesystem>

namespace kvsteer {

namespace fs = std::filesystem;

void copyQwenTokenizerFiles(const std::string& from, const std::string& out) {
    if (!fs::exists(fs::path(from) / "vocab.json") && !fs::exists(fs::path(from) / "tokenizer.json"))
        throw Error("tokenizer source " + from + ": no vocab.json or tokenizer.json (a Qwen VL directory is needed)");
    fs::create_directories(out);
    for (const char* f : {"vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json", "added_tokens.json", "special_tokens_map.json",
                          "chat_template.json", "generation_config.json"})
        if (fs::exists(fs::path(from) / f)) {
            const fs::path target = fs::path(out) / f;
            fs::copy_file(fs::path(from) / f, target, fs::copy_options::overwrite_existing);
            fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);   // the source may be read-only
        }
}

int64_t requiredTokenId(const Tokenizer& tokenizer, const std::string& token, const std::string& from) {
    const int64_t id = tokenizer.pieceToId(token);
    if (id < 0) throw Error("tokenizer source " + from + ": has no " + token + " token (a Qwen2-VL, Qwen2.5-VL or Qwen3-VL tokenizer is needed)");
    return id;
}

} // namespace kvsteer
