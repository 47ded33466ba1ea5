#pragma once
// The default system message of a Qwen checkpoint's chat template. Qwen2-VL's template opens every
// conversation with "You are a helpful assistant."; Qwen2.5's text models with "You are Qwen,
// created by Alibaba Cloud. You are a helpful assistant."; Qwen3-VL's with none (a system turn
// only when one is given). The message is read from the template the checkpoint ships
// (chat_template.jinja, chat_template.json or tokenizer_config.json's "chat_template", the first
// found), not interpreted as Jinja: the literal system turn "<|im_start|>system\n...<|im_end|>" is
// looked for.
#include <optional>
#include <string>

namespace kvsteer {

// The template's literal system message; none when it has no literal system turn (or no template).
// Throws kvsteer::Error naming the file when a template file is not valid JSON.
std::optional<std::string> qwenTemplateSystemMessage(const std::string& directory);

// Qwen2-VL / Qwen2: the template's message, and Qwen2-VL's when it has none.
std::string qwenDefaultSystemMessage(const std::string& directory);

} // namespace kvsteer
