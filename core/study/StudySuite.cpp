#include "study/StudySuite.h"

#include "Error.h"
#include "eval/Chair.h"
#include "io/TextFile.h"

#include <algorithm>
#include <filesystem>
#include <set>

namespace kvsteer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// One dataset entry, with each problem appended to `problems` (the entry is skipped on any).
void readDataset(const json& e, const std::string& where, const std::string& baseDir, const std::string& imagesDir, bool skipBad,
                 const std::string& chairTablesDir, const std::string& synonymsOverride, std::vector<StudyDataset>& out,
                 std::vector<std::string>& problems) {
    const size_t before = problems.size();
    auto problem = [&](const std::string& field, const std::string& what) { problems.push_back(where + "." + field + ": " + what); };
    if (!e.is_object()) {
        problems.push_back(where + ": expected an object {\"name\", \"data\", \"role\", \"metric\"}");
        return;
    }
    static const std::set<std::string> known{"name", "data", "role", "metric", "mask", "synonyms", "images"};
    for (auto it = e.begin(); it != e.end(); ++it)
        if (!known.count(it.key())) problem(it.key(), "unknown field (known: name, data, role, metric, mask, synonyms, images)");
    auto text = [&](const char* field, bool required) -> std::string {
        if (!e.contains(field)) {
            if (required) problem(field, "missing");
            return "";
        }
        if (!e[field].is_string() || e[field].get<std::string>().empty()) {
            problem(field, "expected a non-empty string, got " + e[field].dump());
            return "";
        }
        return e[field].get<std::string>();
    };
    StudyDataset d;
    d.name = text("name", true);
    const std::string data = text("data", true), role = text("role", true), metric = text("metric", true);
    d.mask = text("mask", false);
    const bool maskFile = !d.mask.empty() && d.mask.rfind("rect:", 0) != 0 && d.mask.rfind("tokens:", 0) != 0;
    if (maskFile && fs::path(d.mask).is_relative()) d.mask = (fs::path(baseDir) / d.mask).string();   // beside the suite
    if (maskFile && !fs::is_regular_file(d.mask)) problem("mask", "the mask file " + d.mask + " does not exist");
    d.synonyms = text("synonyms", false);
    if (!synonymsOverride.empty()) d.synonyms = synonymsOverride;
    std::string images = text("images", false);
    if (!role.empty() && role != "target" && role != "preserve") problem("role", "expected \"target\" or \"preserve\", got \"" + role + "\"");
    d.role = role == "target" ? StudyRole::Target : StudyRole::Preserve;
    if (!metric.empty()) {
        try {
            d.metric = parseEvalMetric(metric);
        } catch (const Error&) {
            problem("metric", "expected pope, exact, contains or chair, got \"" + metric + "\"");
        }
    }
    const bool chair = d.metric == EvalMetric::Chair;
    if (chair && d.synonyms.empty()) problem("synonyms", "a chair set needs a synonym table: \"coco\", \"shapes\" or a file");
    if (problems.size() > before || data.empty()) return;
    try {
        if (chair) {
            const std::vector<std::string>& shipped = shippedSynonymTables();
            std::string table = d.synonyms;   // a shipped table's name, or a file beside the suite (a flag's: as given)
            if (synonymsOverride.empty() && std::find(shipped.begin(), shipped.end(), table) == shipped.end() && fs::path(table).is_relative())
                table = (fs::path(baseDir) / table).string();
            d.table = std::make_shared<const SynonymTable>(resolveSynonymTable(table, chairTablesDir));
        }
    } catch (const Error& e2) {
        problem("synonyms", e2.what());
    }
    if (!images.empty() && fs::path(images).is_relative()) images = (fs::path(baseDir) / images).string();
    try {
        const fs::path file = fs::path(data).is_relative() ? fs::path(baseDir) / data : fs::path(data);
        d.data = loadEvalDataset(file.string(), !images.empty() ? images : imagesDir, skipBad);
    } catch (const Error& e2) {
        problem("data", e2.what());
        return;
    }
    // What the role and the metric need of each item.
    for (EvalItem& item : d.data.items) {
        const std::string line = d.data.path + " line " + std::to_string(item.line) + ": ";
        if (d.role == StudyRole::Target && item.target.empty()) problems.push_back(line + "an item of a target set needs \"target\" (the answer steering aims at)");
        if (chair && item.objects.empty()) problems.push_back(line + "an item of a chair set needs \"objects\" (the objects the image holds)");
        if (chair && d.table)
            try {
                scoreCaption(*d.table, "", item.objects);   // every ground-truth object must be in the table
            } catch (const Error& e2) {
                problems.push_back(line + e2.what());
            }
        if (item.mask.empty() && !item.box && !d.mask.empty()) item.mask = d.mask;
    }
    if (problems.size() == before) out.push_back(std::move(d));
}

} // namespace

std::string studyRoleName(StudyRole role) { return role == StudyRole::Target ? "target" : "preserve"; }

StudySuite loadStudySuite(const std::string& path, const std::string& imagesDir, bool skipBad, const std::string& chairTablesDir,
                          const std::string& synonyms) {
    StudySuite suite;
    suite.path = path;
    json j;
    try {
        j = json::parse(readTextFile(path));
    } catch (const json::exception& e) {
        throw Error("suite " + path + ": not valid JSON (" + e.what() + ")");
    }
    if (!j.is_object() || !j.contains("datasets") || !j["datasets"].is_array() || j["datasets"].empty())
        throw Error("suite " + path + ": expected an object with \"datasets\": a non-empty list of {\"name\", \"data\", \"role\", \"metric\"}");
    for (auto it = j.begin(); it != j.end(); ++it)
        if (it.key() != "name" && it.key() != "datasets" && it.key() != "plans")
            throw Error("suite " + path + ": unknown field \"" + it.key() + "\" (known: name, datasets, plans)");
    suite.name = j.value("name", fs::path(path).stem().string());
    if (j.contains("plans")) suite.plans = j["plans"];
    const std::string baseDir = fs::path(path).parent_path().string();
    std::vector<std::string> problems;
    std::set<std::string> names;
    for (size_t i = 0; i < j["datasets"].size(); ++i) {
        readDataset(j["datasets"][i], "suite " + path + ": datasets[" + std::to_string(i) + "]", baseDir, imagesDir, skipBad, chairTablesDir, synonyms,
                    suite.datasets, problems);
        const json& name = j["datasets"][i].is_object() ? j["datasets"][i].value("name", json()) : json();
        if (name.is_string() && !names.insert(name.get<std::string>()).second)
            problems.push_back("suite " + path + ": datasets[" + std::to_string(i) + "].name: \"" + name.get<std::string>() + "\" is used twice");
    }
    if (!problems.empty()) {
        std::string all = "suite " + path + " has " + std::to_string(problems.size()) + " problem" + (problems.size() > 1 ? "s" : "") + ":";
        for (const std::string& p : problems) all += "\n  " + p;
        throw Error(all);
    }
    std::string hashes = readTextFile(path);
    for (const StudyDataset& d : suite.datasets) hashes += d.name + ":" + d.data.hash;
    suite.hash = hexHash(stableHash(hashes));
    return suite;
}

bool studyAnswerHitsTarget(const StudyDataset& set, const std::string& answer, const EvalItem& item) {
    if (item.target.empty()) return false;
    if (set.metric == EvalMetric::Chair) return answerCorrect(EvalMetric::Contains, answer, {item.target});
    return answerCorrect(set.metric, answer, {item.target});
}

} // namespace kvsteer
