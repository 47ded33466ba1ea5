#include "TokenizeCommand.h"

#include "CliOptions.h"
#include "CommandLine.h"
#include "Error.h"
#include "text/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>

namespace kvsteer {

namespace {

// {"text", "ids", "pieces"}: each piece is its id decoded alone (special tokens as their text).
nlohmann::ordered_json tokenized(const Tokenizer& tok, const std::string& text, bool special) {
    const std::vector<int64_t> ids = tok.encode(text, special);
    std::vector<std::string> pieces;
    for (int64_t id : ids) pieces.push_back(tok.decode({id}, false));
    return {{"text", text}, {"ids", ids}, {"pieces", pieces}};
}

void print(const nlohmann::ordered_json& line) {
    std::cout << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

} // namespace

int commandTokenize(int argc, char** argv) {
    CommandLine cl({"model", "text", "jsonl"}, {"special"});
    cl.parse(argc, argv, 2);
    if (cl.has("text") == cl.has("jsonl")) throw UsageError("tokenize needs --text TEXT or --jsonl FILE (one of the two)");
    const Tokenizer tok = Tokenizer::loadFromDirectory(modelDirectory(cl));
    const bool special = cl.has("special");
    if (cl.has("text")) {
        print(tokenized(tok, cl.get("text"), special));
        return 0;
    }
    const std::string path = cl.get("jsonl");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("texts " + path + ": cannot open");
    size_t lineNo = 0;
    for (std::string line; std::getline(in, line);) {
        ++lineNo;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = "texts " + path + " line " + std::to_string(lineNo);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
            throw Error(where + ": not valid JSON (" + e.what() + ")");
        }
        if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
            throw Error(where + ": expected an object with a \"text\" string, got " + line.substr(0, 80));
        print(tokenized(tok, j["text"].get<std::string>(), special));
    }
    return 0;
}

} // namespace kvsteer
