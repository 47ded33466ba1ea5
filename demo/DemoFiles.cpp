#include "demo/DemoFiles.h"

#include "Error.h"
#include "text/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace kvsteer::demo {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

void writeJson(const fs::path& path, const ordered_json& j) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write " + path.string());
    out << j.dump(2) << "\n";
    if (!out) throw Error("write error on " + path.string());
}

ordered_json tokenEntry(const std::string& content, bool special) {
    ordered_json e = {{"content", content}, {"lstrip", false}, {"normalized", false}, {"rstrip", false}, {"single_word", false}};
    if (special) e["special"] = true;
    return e;
}

} // namespace

int64_t writeDemoTokenizerFiles(const std::string& dir) {
    const fs::path d(dir);
    if (!fs::exists(d / "tokenizer.model")) throw Error("tokenizer directory " + dir + ": no tokenizer.model (run spm_train first)");
    // Only the SentencePiece model at first: its size gives the ids of the added tokens.
    for (const char* f : {"added_tokens.json", "tokenizer_config.json", "special_tokens_map.json"}) fs::remove(d / f);
    const Tokenizer sp = Tokenizer::loadFromDirectory(dir);
    const int64_t n = sp.sentencePieceSize();
    if (sp.unkId() != 0 || sp.bosId() != 1 || sp.eosId() != 2)
        throw Error("tokenizer " + dir + "/tokenizer.model: expected <unk>=0 <s>=1 </s>=2 as in Llama (train with --unk_id=0 --bos_id=1 --eos_id=2)");
    const int64_t image = n, pad = n + 1;

    writeJson(d / "added_tokens.json", ordered_json{{"<image>", image}, {"<pad>", pad}});
    ordered_json decoder;
    decoder["0"] = tokenEntry("<unk>", true);
    decoder["1"] = tokenEntry("<s>", true);
    decoder["2"] = tokenEntry("</s>", true);
    decoder[std::to_string(image)] = tokenEntry("<image>", true);
    decoder[std::to_string(pad)] = tokenEntry("<pad>", true);
    writeJson(d / "tokenizer_config.json", ordered_json{
                                               {"add_bos_token", true},
                                               {"add_eos_token", false},
                                               {"add_prefix_space", true},
                                               {"added_tokens_decoder", decoder},
                                               {"additional_special_tokens", {"<image>"}},
                                               {"bos_token", "<s>"},
                                               {"clean_up_tokenization_spaces", false},
                                               {"eos_token", "</s>"},
                                               {"legacy", true},
                                               {"model_max_length", 1024},
                                               {"pad_token", "<pad>"},
                                               {"processor_class", "LlavaProcessor"},
                                               {"sp_model_kwargs", ordered_json::object()},
                                               {"spaces_between_special_tokens", false},
                                               {"tokenizer_class", "LlamaTokenizer"},
                                               {"unk_token", "<unk>"},
                                               {"use_default_system_prompt", false},
                                           });
    ordered_json image0 = tokenEntry("<image>", false);
    writeJson(d / "special_tokens_map.json", ordered_json{
                                                 {"additional_special_tokens", {image0}},
                                                 {"bos_token", tokenEntry("<s>", false)},
                                                 {"eos_token", tokenEntry("</s>", false)},
                                                 {"pad_token", tokenEntry("<pad>", false)},
                                                 {"unk_token", tokenEntry("<unk>", false)},
                                             });
    const Tokenizer full = Tokenizer::loadFromDirectory(dir);
    if (full.imageTokenId() != image || full.padId() != pad || full.vocabSize() != n + 2)
        throw Error("tokenizer " + dir + ": the written files do not read back as expected (<image> " +
                    std::to_string(full.imageTokenId()) + ", <pad> " + std::to_string(full.padId()) + ")");
    return image;
}

void copyDemoTokenizerFiles(const std::string& from, const std::string& to) {
    fs::create_directories(to);
    for (const char* f : {"tokenizer.model", "added_tokens.json", "tokenizer_config.json", "special_tokens_map.json"}) {
        if (!fs::exists(fs::path(from) / f)) throw Error("tokenizer directory " + from + ": " + f + " is missing");
        if (fs::exists(fs::path(to) / f) && fs::equivalent(fs::path(from) / f, fs::path(to) / f)) continue;
        fs::copy_file(fs::path(from) / f, fs::path(to) / f, fs::copy_options::overwrite_existing);
        fs::permissions(fs::path(to) / f, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
    }
}

void writeDemoProcessorFiles(const std::string& dir, int64_t bosId, int64_t eosId, int64_t padId) {
    const fs::path d(dir);
    writeJson(d / "processor_config.json", ordered_json{{"image_token", "<image>"},
                                                        {"patch_size", 14},
                                                        {"processor_class", "LlavaProcessor"},
                                                        {"vision_feature_select_strategy", "default"}});
    writeJson(d / "chat_template.json",
              ordered_json{{"chat_template",
                            "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': '}}"
                            "{% endif %}{# Render all images first #}{% for content in message['content'] | selectattr('type', "
                            "'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}{# Render all text next #}{% if message['role'] != "
                            "'assistant' %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ "
                            "content['text'] + ' '}}{% endfor %}{% else %}{% for content in message['content'] | selectattr('type', "
                            "'equalto', 'text') %}{% generation %}{{ content['text'] + ' '}}{% endgeneration %}{% endfor %}{% endif "
                            "%}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"}});
    writeJson(d / "generation_config.json", ordered_json{{"bos_token_id", bosId},
                                                         {"eos_token_id", eosId},
                                                         {"pad_token_id", padId},
                                                         {"max_new_tokens", 16},
                                                         {"do_sample", false}});
}

} // namespace kvsteer::demo
