#include "models/qwen2vl/QwenChatTemplate.h"

#include "Error.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace kvsteer {

namespace {

namespace fs = std::filesystem;

const char* kQwen2VlSystemMessage = "You are a helpful assistant.";

std::string readText(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string() + ": cannot open");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The template text of a JSON file's "chat_template": a string, or a list of named templates
// ({"name": "default", "template": ...}). "" when the file has none.
std::string templateIn(const fs::path& path) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(readText(path));
    } catch (const nlohmann::json::exception& e) {
        throw Error(path.string() + ": not valid JSON (" + e.what() + ")");
    }
    if (!j.is_object() || !j.contains("chat_template")) return "";
    const nlohmann::json& t = j["chat_template"];
    if (t.is_string()) return t.get<std::string>();
    if (t.is_array())
        for (const auto& named : t)
            if (named.is_object() && named.value("name", "") == "default" && named.contains("template") && named["template"].is_string())
                return named["template"].get<std::string>();
    return "";
}

std::string findTemplate(const fs::path& dir) {
    if (fs::exists(dir / "chat_template.jinja")) return readText(dir / "chat_template.jinja");
    for (const char* file : {"chat_template.json", "tokenizer_config.json"})
        if (fs::exists(dir / file))
            if (std::string t = templateIn(dir / file); !t.empty()) return t;
    return "";
}

} // namespace

std::string qwenDefaultSystemMessage(const std::string& directory) {
    const std::string tmpl = findTemplate(directory);
    // A literal system turn: the newline written as one (JSON-decoded) or as "\n" inside a Jinja
    // string; no quote, brace or tag inside, so template code is never taken for the message.
    static const std::regex turn(R"(<\|im_start\|>system(?:\n|\\n)([^'"{}<]+)<\|im_end\|>)");
    std::smatch m;
    if (std::regex_search(tmpl, m, turn)) return m[1];
    return kQwen2VlSystemMessage;
}

} // namespace kvsteer
