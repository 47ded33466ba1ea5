#pragma once
// The default system message of a Qwen checkpoint's chat template. Qwen2-VL's template opens every
// conversation with "You are a helpful assistant."; Qwen2.5's text models with "You are Qwen,
// created by Alibaba Cloud. You are a helpful assistant." The message is read from the template
// the checkpoint ships (chat_template.jinja, chat_template.json or tokenizer_config.json's
// "chat_template", the first found), not interpreted as Jinja: the literal system turn
// "<|im_start|>system\n...<|im_end|>" is looked for, and a template without one (or no template)
// gets Qwen2-VL's message.
#include <string>

namespace kvsteer {

// Throws kvsteer::Error naming the file when a template file is not valid JSON.
std::string qwenDefaultSystemMessage(const std::string& directory);

} // namespace kvsteer
