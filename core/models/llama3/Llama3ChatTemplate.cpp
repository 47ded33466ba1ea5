#include "models/llama3/Llama3ChatTemplate.h"

#include "Error.h"
#include "models/common/ChatTemplateFile.h"

#include <nlohmann/json.hpp>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>

namespace kvsteer {

namespace {

namespace fs = std::filesystem;

nlohmann::json readJson(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error(path.string() + ": not valid JSON (" + e.what() + ")");
    }
}

// Python's str.strip(): the template's `| trim`.
std::string trimmed(const std::string& s) {
    const char* space = " \t\n\r\f\v";
    const size_t begin = s.find_first_not_of(space);
    if (begin == std::string::npos) return "";
    return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

std::string todayDate() {   // strftime("%d %b %Y"), as the templates that compute it
    const std::time_t now = std::time(nullptr);
    char text[32];
    std::strftime(text, sizeof text, "%d %b %Y", std::localtime(&now));
    return text;
}

std::string captured(const std::string& text, const char* pattern) {
    std::smatch m;
    const std::regex re(pattern);
    return std::regex_search(text, m, re) ? std::string(m[1]) : "";
}

} // namespace

Llama3ChatTemplate Llama3ChatTemplate::fromDirectory(const std::string& directory) {
    Llama3ChatTemplate t;
    const fs::path dir(directory);
    if (fs::exists(dir / "tokenizer_config.json")) {
        const nlohmann::json config = readJson(dir / "tokenizer_config.json");
        if (config.contains("bos_token") && config["bos_token"].is_string()) t.bos_ = config["bos_token"].get<std::string>();
    }
    const ChatTemplateFile file = readChatTemplate(directory);
    const std::string& text = file.text;
    t.source_ = file.source;
    if (text.empty()) {
        t.problem_ = directory + " has no chat template (chat_template.jinja, chat_template.json or tokenizer_config.json's "
                                 "\"chat_template\"): a base model's prompt is raw text";
        return t;
    }
    for (const char* marker : {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"})
        if (text.find(marker) == std::string::npos) {
            t.problem_ = "the chat template in " + t.source_ + " is not the Llama-3 header layout (no " + marker + ")";
            return t;
        }
    t.trims_ = std::regex_search(text, std::regex(R"(\|\s*trim)"));
    t.knowledgeDate_ = captured(text, R"(Cutting Knowledge Date: ([^\\"\n]+))");
    t.knowledgeBlock_ = !t.knowledgeDate_.empty();
    if (t.knowledgeBlock_) {
        t.todayDate_ = captured(text, R"(date_string\s*=\s*["']([^"']+)["'])");
        if (t.todayDate_.empty()) t.todayDate_ = todayDate();
    }
    return t;
}

std::string Llama3ChatTemplate::render(const std::vector<ChatMessage>& messages) const {
    if (!recognised()) throw Error(problem_, {Remedy::RawPrompt});
    auto turn = [&](const std::string& role, const std::string& content) {
        return "<|start_header_id|>" + role + "<|end_header_id|>\n\n" + content + "<|eot_id|>";
    };
    std::string out = bos_;
    size_t first = 0;
    if (knowledgeBlock_) {   // the system turn is always there, the (trimmed) message, if any, after the dates
        const bool system = !messages.empty() && messages.front().role == "system";
        out += turn("system", "Cutting Knowledge Date: " + knowledgeDate_ + "\nToday Date: " + todayDate_ + "\n\n" +
                                  (system ? trimmed(messages.front().content) : std::string()));
        first = system ? 1 : 0;
    }
    for (size_t i = first; i < messages.size(); ++i)
        out += turn(messages[i].role, trims_ ? trimmed(messages[i].content) : messages[i].content);
    return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

std::string Llama3ChatTemplate::describe() const {
    if (!recognised()) return "none usable (" + problem_ + "; prompts must be given raw)";
    std::string d = "Llama-3 header layout from " + source_;
    if (knowledgeBlock_) d += ", with Llama-3.1's system block (Cutting Knowledge Date: " + knowledgeDate_ + ", Today Date: " + todayDate_ + ")";
    return d;
}

} // namespace kvsteer
