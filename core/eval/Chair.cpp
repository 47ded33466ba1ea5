#include "eval/Chair.h"

#include "Error.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kvsteer {
namespace {

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string joinWords(const std::vector<std::string>& words, size_t begin, size_t n) {
    std::string out;
    for (size_t k = begin; k < begin + n; ++k) out += (k > begin ? " " : "") + words[k];
    return out;
}

// Table phrases go through the captions' own normalisation, so a phrase and the caption words it
// is meant to match can never disagree on case or punctuation.
std::string normalizePhrase(const std::string& text) {
    const std::vector<std::string> words = captionWords(text);
    return joinWords(words, 0, words.size());
}

// "a, b," -> {"a", " b", ""}: unlike getline, a trailing comma yields its empty piece, so it is
// refused like ",," rather than silently dropped.
std::vector<std::string> splitCommas(const std::string& list) {
    std::vector<std::string> pieces;
    size_t start = 0;
    for (size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
        pieces.push_back(list.substr(start, comma - start));
    pieces.push_back(list.substr(start));
    return pieces;
}

// A caption word and the singulars it may be a regular plural of, most literal first: a word the
// table holds as written (skis, scissors, people) never gets a letter stripped.
std::vector<std::string> singularForms(const std::string& w) {
    std::vector<std::string> forms{w};
    auto endsWith = [&](const char* suffix) {
        const size_t n = std::char_traits<char>::length(suffix);
        return w.size() > n && w.compare(w.size() - n, n, suffix) == 0;
    };
    if (endsWith("s")) forms.push_back(w.substr(0, w.size() - 1));
    if (endsWith("es")) forms.push_back(w.substr(0, w.size() - 2));
    if (endsWith("ies")) forms.push_back(w.substr(0, w.size() - 3) + "y");
    return forms;
}

// The category of words[begin, begin + n), its last word also read as a plural; null if the
// table has no such phrase. An empty category: the phrase names no object.
const std::string* lookup(const SynonymTable& table, const std::vector<std::string>& words, size_t begin, size_t n) {
    const std::string head = n > 1 ? joinWords(words, begin, n - 1) + " " : "";
    for (const std::string& last : singularForms(words[begin + n - 1])) {
        const auto it = table.phrases.find(head + last);
        if (it != table.phrases.end()) return &it->second;
    }
    return nullptr;
}

// Reads a table line by line; remembers where each phrase was defined so that a conflicting line
// can name the first one.
class TableReader {
public:
    explicit TableReader(const std::string& path) { table_.source = path; }

    void readLine(const std::string& text, int line) {
        const std::string body = trim(text.substr(0, text.find('#')));
        if (body.empty()) return;
        const size_t colon = body.find(':');
        if (colon == std::string::npos)
            throw Error(where(line) + ": expected 'category: synonym, synonym, ...' (there is no ':')");
        const std::string category = readCategory(trim(body.substr(0, colon)), line);
        const std::string list = trim(body.substr(colon + 1));
        if (list.empty()) {
            if (category.empty()) throw Error(where(line) + ": '-:' lists no phrase (expected '-: phrase, phrase, ...')");
            return;   // "elephant:" - the category alone
        }
        for (const std::string& piece : splitCommas(list)) {
            const std::string phrase = normalizePhrase(piece);
            if (phrase.empty())
                throw Error(where(line) + ": an empty synonym (two commas in a row, or a trailing comma); expected 'category: synonym, synonym, ...'");
            addPhrase(phrase, category, line);
        }
    }

    SynonymTable finish() {
        if (table_.categories.empty())
            throw Error("synonym table " + table_.source + " has no category (expected lines 'category: synonym, synonym, ...')");
        return std::move(table_);
    }

private:
    std::string where(int line) const { return "synonym table " + table_.source + " line " + std::to_string(line); }

    // "-" is the no-object list; any other name is a category, and a synonym of itself.
    std::string readCategory(const std::string& raw, int line) {
        if (raw == "-") return "";
        const std::string category = normalizePhrase(raw);
        if (category.empty())
            throw Error(where(line) + ": the category before ':' is empty (expected 'category: synonym, synonym, ...')");
        if (std::find(table_.categories.begin(), table_.categories.end(), category) == table_.categories.end())
            table_.categories.push_back(category);
        addPhrase(category, category, line);
        return category;
    }

    void addPhrase(const std::string& phrase, const std::string& category, int line) {
        const auto [it, added] = table_.phrases.emplace(phrase, category);
        if (!added && it->second != category) {
            const std::string was = it->second.empty() ? "listed as naming no object" : "a synonym of " + it->second;
            throw Error(where(line) + ": '" + phrase + "' is already " + was + " (line " + std::to_string(lineOf_[phrase]) +
                        "); a phrase names one category");
        }
        if (!added) return;
        lineOf_[phrase] = line;
        const int words = int(std::count(phrase.begin(), phrase.end(), ' ')) + 1;
        table_.longestPhrase = std::max(table_.longestPhrase, words);
    }

    SynonymTable table_;
    std::map<std::string, int> lineOf_;
};

} // namespace

SynonymTable loadSynonymTable(const std::string& path) {
    // An ifstream opens a folder without complaint and then reads nothing; ask first.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) throw Error("synonym table " + path + " is not a readable file");
    std::ifstream in(path);
    if (!in) throw Error("synonym table " + path + " is not a readable file");
    TableReader reader(path);
    int line = 0;
    for (std::string text; std::getline(in, text);) reader.readLine(text, ++line);
    if (in.bad()) throw Error("synonym table " + path + ": reading failed after line " + std::to_string(line));
    return reader.finish();
}

const std::vector<std::string>& shippedSynonymTables() {
    static const std::vector<std::string> names{"coco", "shapes"};
    return names;
}

std::string synonymTablePath(const std::string& nameOrPath, const std::string& chairDir) {
    const auto& names = shippedSynonymTables();
    if (std::find(names.begin(), names.end(), nameOrPath) == names.end()) return nameOrPath;
    return (std::filesystem::path(chairDir) / (nameOrPath + ".txt")).string();
}

SynonymTable resolveSynonymTable(const std::string& nameOrPath, const std::string& chairDir) {
    const std::string path = synonymTablePath(nameOrPath, chairDir);
    std::error_code ec;
    if (path == nameOrPath && !std::filesystem::exists(path, ec))
        throw Error("synonym table '" + nameOrPath + "' is neither a shipped table (coco, shapes) nor a file");
    return loadSynonymTable(path);
}

std::vector<std::string> captionWords(const std::string& text) {
    std::string spaced;
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        spaced += std::ispunct(u) ? ' ' : char(std::tolower(u));
    }
    std::istringstream in(spaced);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

std::string categoryOf(const SynonymTable& table, const std::string& objectName) {
    const std::vector<std::string> words = captionWords(objectName);
    const std::string* category = words.empty() ? nullptr : lookup(table, words, 0, words.size());
    if (!category || category->empty())
        throw Error("object '" + objectName + "' is no category of synonym table " + table.source +
                    " (expected a category or one of its synonyms)");
    return *category;
}

std::vector<ChairMention> findMentions(const SynonymTable& table, const std::string& caption) {
    const std::vector<std::string> words = captionWords(caption);
    std::vector<ChairMention> mentions;
    for (size_t i = 0; i < words.size();) {
        // Longest first: "hot dog" must be tried before "hot" and "dog" can match alone.
        size_t n = std::min(size_t(std::max(table.longestPhrase, 1)), words.size() - i);
        const std::string* category = nullptr;
        for (; n > 0 && !(category = lookup(table, words, i, n)); --n) {}
        if (!category) {
            ++i;
            continue;
        }
        if (!category->empty()) mentions.push_back({*category, joinWords(words, i, n), int(i)});
        i += n;
    }
    return mentions;
}

ChairScore scoreCaption(const SynonymTable& table, const std::string& caption, const std::vector<std::string>& objects) {
    std::set<std::string> truth;
    for (const std::string& o : objects) truth.insert(categoryOf(table, o));
    ChairScore s;
    s.groundTruth = int(truth.size());
    for (ChairMention& m : findMentions(table, caption)) {
        ++s.mentions;
        s.mentionedCategories.insert(m.category);
        if (truth.count(m.category)) continue;
        ++s.hallucinated;
        s.hallucinatedMentions.push_back(std::move(m));
    }
    for (const std::string& c : truth) s.recalled += int(s.mentionedCategories.count(c));
    s.anyHallucinated = s.hallucinated > 0;
    return s;
}

std::map<std::string, double> chairValues(const std::vector<ChairScore>& scores) {
    auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    double mentions = 0, hallucinated = 0, hallucinatedCaptions = 0, truth = 0, recalled = 0;
    for (const ChairScore& s : scores) {
        mentions += s.mentions;
        hallucinated += s.hallucinated;
        hallucinatedCaptions += s.anyHallucinated;
        truth += s.groundTruth;
        recalled += s.recalled;
    }
    return {{"chair_i", ratio(hallucinated, mentions)},
            {"chair_s", ratio(hallucinatedCaptions, double(scores.size()))},
            {"recall", ratio(recalled, truth)}};
}

} // namespace kvsteer
