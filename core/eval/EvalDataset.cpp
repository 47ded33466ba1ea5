#include "eval/EvalDataset.h"

#include "Error.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace kvsteer {

namespace fs = std::filesystem;

namespace {

// What one line failed on, before the file and line are added.
struct LineError {
    std::string what;
};

std::string text(const nlohmann::json& j, const char* field, bool required) {
    if (!j.contains(field)) {
        if (required) throw LineError{"missing field \"" + std::string(field) + "\""};
        return "";
    }
    const nlohmann::json& v = j[field];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
    throw LineError{"field \"" + std::string(field) + "\" must be a string"};
}

std::string resolve(const std::string& file, const std::string& base, const char* what) {
    fs::path p(file);
    if (p.is_relative()) p = fs::path(base) / p;
    if (!fs::is_regular_file(p)) throw LineError{std::string(what) + " " + p.string() + " does not exist"};
    return p.string();
}

bool isFileMask(const std::string& mask) { return mask.rfind("rect:", 0) != 0 && mask.rfind("tokens:", 0) != 0; }

EvalItem parseItem(const nlohmann::json& j, const std::string& base) {
    if (!j.is_object()) throw LineError{"expected a JSON object"};
    EvalItem item;
    const bool pope = j.contains("question_id") || j.contains("text") || j.contains("label");
    if (pope) {
        item.id = text(j, "question_id", true);
        item.question = text(j, "text", true);
        std::string label = text(j, "label", true);
        for (char& c : label) c = char(std::tolower(static_cast<unsigned char>(c)));
        if (label != "yes" && label != "no") throw LineError{"field \"label\" must be \"yes\" or \"no\", not \"" + label + "\""};
        item.answers = {label};
    } else {
        item.id = text(j, "id", true);
        item.question = text(j, "question", true);
        if (!j.contains("answer")) throw LineError{"missing field \"answer\""};
        const nlohmann::json& a = j["answer"];
        if (a.is_string()) item.answers = {a.get<std::string>()};
        else if (a.is_array() && !a.empty() && std::all_of(a.begin(), a.end(), [](const nlohmann::json& x) { return x.is_string(); }))
            item.answers = a.get<std::vector<std::string>>();
        else throw LineError{"field \"answer\" must be a string or a non-empty list of strings"};
        item.mask = text(j, "mask", false);
        if (!item.mask.empty() && isFileMask(item.mask)) item.mask = resolve(item.mask, base, "mask");
        if (j.contains("box")) {
            const nlohmann::json& b = j["box"];
            if (!b.is_array() || b.size() != 4 || !std::all_of(b.begin(), b.end(), [](const nlohmann::json& x) { return x.is_number(); }))
                throw LineError{"field \"box\" must be [x0, y0, x1, y1] (four numbers, image pixels)"};
            std::array<double, 4> box{b[0].get<double>(), b[1].get<double>(), b[2].get<double>(), b[3].get<double>()};
            if (!(box[0] < box[2] && box[1] < box[3])) throw LineError{"field \"box\" must have x0 < x1 and y0 < y1"};
            item.box = box;
        }
        item.target = text(j, "target", false);
        if (j.contains("objects")) {
            const nlohmann::json& o = j["objects"];
            if (!o.is_array() || !std::all_of(o.begin(), o.end(), [](const nlohmann::json& x) { return x.is_string(); }))
                throw LineError{"field \"objects\" must be a list of strings (the object categories in the image)"};
            item.objects = o.get<std::vector<std::string>>();
        }
    }
    item.category = text(j, "category", false);
    if (item.id.empty()) throw LineError{"the id is empty"};
    if (item.question.empty()) throw LineError{"the question is empty"};
    const std::string image = text(j, "image", pope);
    if (!image.empty()) item.image = resolve(image, base, "image");
    if (item.image.empty() && item.box) throw LineError{"a \"box\" needs an \"image\""};
    if (item.mask.empty() == false && item.box) throw LineError{"give a \"mask\" or a \"box\", not both"};
    return item;
}

} // namespace

uint64_t stableHash(const std::string& bytes) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

std::string hexHash(uint64_t h) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

EvalDataset loadEvalDataset(const std::string& path, const std::string& imagesDir, bool skipBad) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("dataset " + path + ": cannot open");
    std::stringstream all;
    all << in.rdbuf();
    const std::string bytes = all.str();
    EvalDataset ds;
    ds.path = path;
    ds.hash = hexHash(stableHash(bytes));
    const std::string base = !imagesDir.empty() ? imagesDir : fs::path(path).parent_path().string();
    std::istringstream lines(bytes);
    std::set<std::string> ids;
    int lineNo = 0;
    for (std::string line; std::getline(lines, line);) {
        ++lineNo;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        try {
            nlohmann::json j;
            try {
                j = nlohmann::json::parse(line);
            } catch (const nlohmann::json::exception& e) {
                throw LineError{std::string("not valid JSON (") + e.what() + ")"};
            }
            EvalItem item = parseItem(j, base);
            if (!ids.insert(item.id).second) throw LineError{"id \"" + item.id + "\" appears twice"};
            item.line = lineNo;
            item.index = int64_t(ds.items.size());
            ds.items.push_back(std::move(item));
        } catch (const LineError& e) {
            const std::string where = "dataset " + path + " line " + std::to_string(lineNo) + ": " + e.what;
            if (!skipBad) throw Error(where, {Remedy::SkipBadItems});
            ds.bad.push_back({lineNo, where});
        }
    }
    if (ds.items.empty()) throw Error("dataset " + path + ": no items");
    return ds;
}

} // namespace kvsteer
