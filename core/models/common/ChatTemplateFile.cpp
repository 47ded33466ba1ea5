#include "models/common/ChatTemplateFile.h"

#include "Error.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kvsteer {

namespace {

namespace fs = std::filesystem;

std::string readText(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string() + ": cannot open");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// A JSON file's "chat_template": a string, or the list of named templates' "default".
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

} // namespace

ChatTemplateFile readChatTemplate(const std::string& directory) {
    const fs::path dir(directory);
    if (fs::exists(dir / "chat_template.jinja")) return {readText(dir / "chat_template.jinja"), (dir / "chat_template.jinja").string()};
    for (const char* file : {"chat_template.json", "tokenizer_config.json"})
        if (fs::exists(dir / file))
            if (std::string t = templateIn(dir / file); !t.empty()) return {t, (dir / file).string()};
    return {};
}

} // namespace kvsteer
