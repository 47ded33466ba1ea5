#include "Tokenizers.h"

#include "FuzzSupport.h"

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

namespace kvsteer::fuzz {

namespace {

std::string utf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += char(cp);
    } else if (cp < 0x800) {
        s += char(0xC0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3F));
    } else {
        s += char(0xE0 | (cp >> 12));
        s += char(0x80 | ((cp >> 6) & 0x3F));
        s += char(0x80 | (cp & 0x3F));
    }
    return s;
}

const std::vector<std::pair<std::string, std::string>>& smallMerges() {
    static const std::vector<std::pair<std::string, std::string>> merges = {
        {"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}, {"i", "n"}, {"a", "n"}, {"Ġ", "a"}, {"r", "e"}, {"o", "n"}};
    return merges;
}

nlohmann::json smallVocab() {
    nlohmann::json v = nlohmann::json::object();
    int64_t id = 0;
    for (int b = 0; b < 256; ++b) v[byteSymbol(uint8_t(b))] = id++;
    for (const auto& [a, b] : smallMerges()) v[a + b] = id++;
    return v;
}

std::string smallBpeDir() {
    static const std::string dir = [] {
        const std::string d = scratchDir() + "/small-bpe";
        std::filesystem::create_directories(d);
        writeScratch("small-bpe/vocab.json", smallVocabJson());
        writeScratch("small-bpe/merges.txt", smallMergesTxt());
        return d;
    }();
    return dir;
}

} // namespace

std::string byteSymbol(uint8_t byte) {
    const bool printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174;
    if (printable) return utf8(byte);
    int shifted = 0;   // rank of this byte among the non-printable ones
    for (int b = 0; b < byte; ++b)
        if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) ++shifted;
    return utf8(256 + shifted);
}

std::string smallVocabJson() { return smallVocab().dump(); }

std::string smallMergesTxt() {
    std::string s = "#version: 0.2\n";
    for (const auto& [a, b] : smallMerges()) s += a + " " + b + "\n";
    return s;
}

std::string smallTokenizerJson() {
    nlohmann::json merges = nlohmann::json::array();
    for (const auto& [a, b] : smallMerges()) merges.push_back(a + " " + b);
    const int64_t end = 256 + static_cast<int64_t>(smallMerges().size());
    nlohmann::json added = nlohmann::json::array();
    added.push_back({{"id", end}, {"content", "<|endoftext|>"}, {"special", true}, {"lstrip", false},
                     {"rstrip", false}, {"single_word", false}, {"normalized", false}});
    return nlohmann::json{{"version", "1.0"},
                          {"added_tokens", added},
                          {"model", {{"type", "BPE"}, {"vocab", smallVocab()}, {"merges", merges}}}}
        .dump();
}

const Tokenizer& textTokenizer(uint8_t which) {
    static std::map<int, std::unique_ptr<Tokenizer>> loaded;
    const std::string ref = referenceDir();
    const int slot = which % 4;
    auto it = loaded.find(slot);
    if (it != loaded.end()) return *it->second;
    std::string dir;
    if (slot == 0) {
        dir = demoModelDir();
    } else if (ref.empty()) {
        dir = smallBpeDir();
    } else {
        static const char* const names[] = {"", "tiny-paligemma", "tiny-qwen2vl", "tiny-llava"};
        dir = ref + "/" + names[slot];
    }
    auto tok = std::make_unique<Tokenizer>(Tokenizer::loadFromDirectory(dir));
    return *loaded.emplace(slot, std::move(tok)).first->second;
}

} // namespace kvsteer::fuzz
