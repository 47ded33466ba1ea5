#pragma once
// The chat template a checkpoint ships, as text: chat_template.jinja, else chat_template.json's
// "chat_template", else tokenizer_config.json's (a string, or the "default" of a list of named
// templates). The families read it to recognise their layout (QwenChatTemplate,
// Llama3ChatTemplate); kvsteer runs no Jinja.
#include <string>

namespace kvsteer {

struct ChatTemplateFile {
    std::string text;     // "" when the directory has none
    std::string source;   // the file it came from
};

// Throws kvsteer::Error naming the file when a JSON file is not valid JSON.
ChatTemplateFile readChatTemplate(const std::string& directory);

} // namespace kvsteer
