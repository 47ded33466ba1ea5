#include "models/qwen2vl/QwenChatTemplate.h"

#include "models/common/ChatTemplateFile.h"

#include <regex>

namespace kvsteer {

namespace {

const char* kQwen2VlSystemMessage = "You are a helpful assistant.";

} // namespace

std::optional<std::string> qwenTemplateSystemMessage(const std::string& directory) {
    const std::string tmpl = readChatTemplate(directory).text;
    // A literal system turn: the newline written as one (JSON-decoded) or as "\n" inside a Jinja
    // string; no quote, brace or tag inside, so template code is never taken for the message.
    static const std::regex turn(R"(<\|im_start\|>system(?:\n|\\n)([^'"{}<]+)<\|im_end\|>)");
    std::smatch m;
    if (std::regex_search(tmpl, m, turn)) return std::string(m[1]);
    return std::nullopt;
}

std::string qwenDefaultSystemMessage(const std::string& directory) {
    return qwenTemplateSystemMessage(directory).value_or(kQwen2VlSystemMessage);
}

} // namespace kvsteer
