#include "study/StudyJob.h"

#include "Error.h"
#include "eval/Chair.h"
#include "eval/EvalJob.h"
#include "eval/EvalReport.h"
#include "eval/ShardMerge.h"
#include "io/FolderLock.h"
#include "io/TextFile.h"
#include "models/Model.h"
#include "steer/Atlas.h"
#include "study/StudyFiles.h"
#include "study/StudySummary.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

namespace kvsteer {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// An item line's key: what must be on one line only.
std::string lineKey(const json& line) {
    return line.at("dataset").get<std::string>() + "/" + line.at("id").get<std::string>() + "#" + std::to_string(line.at("plan").get<int>());
}
std::string itemKey(const std::string& dataset, const std::string& id) { return dataset + "/" + id; }

// Every leaf of a JSON value by its path ("shard.count"), to name what differs between two.
void flatten(const json& j, const std::string& path, std::map<std::string, json>& out) {
    if (j.is_object() && !j.empty()) {
        for (auto it = j.begin(); it != j.end(); ++it) flatten(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
    } else {
        out[path] = j;
    }
}

std::vector<std::string> differences(const json& there, const json& here, const std::set<std::string>& ignored) {
    std::map<std::string, json> a, b;
    flatten(there, "", a);
    flatten(here, "", b);
    std::set<std::string> keys;
    for (const auto& [k, v] : a) keys.insert(k);
    for (const auto& [k, v] : b) keys.insert(k);
    std::vector<std::string> d;
    for (const std::string& k : keys) {
        if (ignored.count(k)) continue;
        const json x = a.count(k) ? a[k] : json(), y = b.count(k) ? b[k] : json();
        if (x != y) d.push_back(k + " (" + x.dump() + " there, " + y.dump() + " here)");
    }
    return d;
}

// The shard of an item: by its image's file name (a text item's by its id), so an image's questions
// and plans share one shard and its prefix is computed once.
int shardOfImage(const std::string& image, const std::string& id, int shardCount) {
    const std::string key = image.empty() ? id : fs::path(image).filename().string();
    return int(stableHash(key) % uint64_t(shardCount));
}

// What two runs of one study may differ in: where the files were (the hashes say what they held)
// and the version that wrote them.
const std::set<std::string> kWhereabouts = {"kvsteer_version", "suite.path", "model.directory"};

// A chair answer's counts, and the words that named an object the image does not hold.
ordered_json chairJson(const ScoredAnswer& s, const StudyDataset& set, const std::string& caption, const EvalItem& item) {
    std::vector<std::string> words;
    for (const ChairMention& m : scoreCaption(*set.table, caption, item.objects).hallucinatedMentions) words.push_back(m.text);
    return {{"mentions", s.mentions}, {"hallucinated", s.hallucinated}, {"ground_truth", s.groundTruth}, {"recalled", s.recalled},
            {"hallucinated_words", words}};
}

json numberOrNull(double v) { return std::isnan(v) ? json() : json(v); }

// One line of items.jsonl: an item under one plan.
ordered_json studyItemJson(const EvalItemResult& r, const StudyDataset& set, const StudyPlan& plan) {
    const EvalItem& item = *r.item;
    auto condition = [&](const Generation& g) {
        const ScoredAnswer s = scoreAnswer(set.metric, g, item, set.table.get());
        ordered_json c = {{"ids", g.ids}, {"text", g.text}, {"correct", s.correct}};
        if (!item.target.empty()) c["hits_target"] = studyAnswerHitsTarget(set, g.text, item);
        if (set.metric == EvalMetric::Chair) c["chair"] = chairJson(s, set, g.text, item);
        if (set.metric == EvalMetric::Pope) c["said_yes"] = s.saidYes;
        return c;
    };
    ordered_json j = {{"dataset", set.name}, {"id", item.id}, {"index", item.index}, {"plan", plan.index}, {"plan_hash", plan.hash},
                      {"image", item.image}, {"category", item.category}};
    j["cells"] = {{"source", r.cellsSource.empty() ? "vectors' mask or all" : r.cellsSource}, {"count", r.cells}};
    if (item.box) j["cells"]["box"] = *item.box;
    j["question"] = item.question;
    j["answers"] = item.answers;
    if (!item.target.empty()) j["target"] = item.target;
    if (set.metric == EvalMetric::Pope)
        j["label_yes"] = !item.answers.empty() && normalizeAnswer(item.answers.front()) == "yes";
    j["unsteered"] = condition(r.unsteered);
    j["steered"] = condition(r.steered);
    j["outcome"] = outcomeName(r.outcome);
    j["first_step_kl"] = numberOrNull(r.firstStepKl);
    if (!item.target.empty())
        j["target_logprob"] = {{"unsteered", numberOrNull(r.targetLogProbUnsteered)}, {"steered", numberOrNull(r.targetLogProbSteered)}};
    j["timings"] = {{"prefix_reused", r.prefixReused}, {"prefill_ms", r.prefillMs}, {"edit_ms", r.editMs}, {"decode_ms", r.decodeMs}};
    return j;
}

// The folder's items with all `planCount` lines; lines of an item left incomplete by a killed
// run are dropped from the file, so it is done again whole.
std::vector<json> readCompleteItems(const std::string& dir, size_t planCount) {
    std::vector<json> lines = readDoneItems(dir, true, lineKey);
    std::map<std::string, size_t> perItem;
    for (const json& l : lines) ++perItem[itemKey(l.at("dataset"), l.at("id"))];
    std::vector<json> complete;
    for (const json& l : lines)
        if (perItem[itemKey(l.at("dataset"), l.at("id"))] == planCount) complete.push_back(l);
    if (complete.size() != lines.size()) {
        std::string text;
        for (const json& l : complete) text += l.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
        writeTextAtomically((fs::path(dir) / "items.jsonl").string(), text);
    }
    return complete;
}

void openStudyDirectory(const std::string& dir, const ordered_json& identity, const std::vector<StudyPlan>& plans) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir)) throw Error("output folder " + dir + ": cannot create it");
    const fs::path file = fs::path(dir) / "study.json";
    if (fs::exists(file)) {
        json there;
        try {
            there = json::parse(readTextFile(file.string()));
        } catch (const json::exception& e) {
            throw Error(file.string() + ": not valid JSON (" + e.what() + ")");
        }
        const std::vector<std::string> d = differences(there, identity, kWhereabouts);
        if (!d.empty()) throw Error("output folder " + dir + " holds another study: " + joinedProblems(d) + " (use a new folder)");
        return;
    }
    if (fs::exists(fs::path(dir) / "run.json")) throw Error("output folder " + dir + " holds an eval run, not a study (use a new folder)");
    std::string lines;
    for (const StudyPlan& p : plans) lines += p.json().dump() + "\n";
    writeTextAtomically((fs::path(dir) / "plans.jsonl").string(), lines);
    writeTextAtomically(file.string(), identity.dump(2) + "\n");
}

std::vector<json> readPlans(const std::string& dir) {
    std::vector<json> plans;
    const std::string text = readTextFile((fs::path(dir) / "plans.jsonl").string());
    size_t at = 0;
    while (at < text.size()) {
        const size_t end = text.find('\n', at);
        plans.push_back(json::parse(text.substr(at, end - at)));
        if (end == std::string::npos) break;
        at = end + 1;
    }
    return plans;
}

} // namespace

bool inStudyShard(const EvalItem& item, int shardIndex, int shardCount) {
    return shardCount <= 1 || shardOfImage(item.image, item.id, shardCount) == shardIndex;
}

ordered_json studyIdentity(const StudyJob& job, const Model& model, const EvalOptions& options, int64_t shardItems) {
    ordered_json datasets = ordered_json::array();
    for (const StudyDataset& d : job.suite->datasets)
        datasets.push_back({{"name", d.name}, {"role", studyRoleName(d.role)}, {"metric", evalMetricName(d.metric)}, {"hash", d.data.hash},
                            {"items", int64_t(d.data.items.size())}, {"synonyms", d.synonyms}});
    std::string planHashes;
    for (const StudyPlan& p : job.plans) planHashes += p.hash;
    const SamplingParams& s = options.generation.sampling;
    return {{"kvsteer_version", KVSTEER_VERSION},
            {"suite", {{"path", job.suite->path}, {"name", job.suite->name}, {"hash", job.suite->hash}}},
            {"datasets", datasets},
            {"model", {{"directory", model.directory()}, {"config_hash", model.config().configHash}}},
            {"plans", {{"count", int64_t(job.plans.size())}, {"hash", hexHash(stableHash(planHashes))}}},
            {"max_new_tokens", options.generation.maxNewTokens},
            {"sampling", {s.temperature, s.topK, s.topP, s.seed}},
            {"shard", {{"index", job.shardIndex}, {"count", job.shardCount}, {"items", shardItems}}}};
}

StudyJobResult runStudyJob(const std::shared_ptr<const Model>& model, const StudyJob& job, const EvalOptions& options,
                           const StudyJobCallbacks& callbacks) {
    // Which set each item is in, and the items of this shard, in suite order.
    std::map<const EvalItem*, const StudyDataset*> setOf;
    std::vector<const EvalItem*> items;
    for (const StudyDataset& d : job.suite->datasets)
        for (const EvalItem& item : d.data.items)
            if (inStudyShard(item, job.shardIndex, job.shardCount)) {
                setOf[&item] = &d;
                items.push_back(&item);
            }
    const FolderLock lock(job.outDir);
    const ordered_json identity = studyIdentity(job, *model, options, int64_t(items.size()));
    openStudyDirectory(job.outDir, identity, job.plans);
    std::set<std::string> done;
    for (const json& l : readCompleteItems(job.outDir, job.plans.size())) done.insert(itemKey(l.at("dataset"), l.at("id")));
    ItemWriter writer(job.outDir);   // opened after readCompleteItems, which may rewrite items.jsonl
    std::vector<BadLine> badLines;   // the sets' (--skip-bad), recorded on a fresh start
    for (const StudyDataset& d : job.suite->datasets) badLines.insert(badLines.end(), d.data.bad.begin(), d.data.bad.end());
    const std::vector<const EvalItem*> remaining = itemsLeftToRun(
        job.outDir, items, done, [&](const EvalItem& item) { return itemKey(setOf.at(&item)->name, item.id); }, badLines, writer);
    if (callbacks.onStart) callbacks.onStart(items.size(), items.size() - remaining.size());

    std::vector<EvalSteering> steerings;
    for (const StudyPlan& p : job.plans) {
        EvalSteering s;
        s.plan = p.options;
        s.vectors = p.vectors.get();
        s.vectorsInfo = p.vectorsInfo;
        steerings.push_back(s);
    }
    EvalOptions o = options;
    o.measures = true;
    std::vector<ordered_json> pending;   // the current item's lines, written once all its plans are in
    EvalCallbacks run;
    run.onItem = [&](const EvalItemResult& r) {
        const StudyDataset& set = *setOf.at(r.item);
        pending.push_back(studyItemJson(r, set, job.plans[size_t(r.plan)]));
        if (pending.size() < job.plans.size()) return;
        writer.writeTogether(pending);
        pending.clear();
        if (callbacks.onItem) callbacks.onItem();
    };
    run.onSkipped = [&](const EvalItem& item, const std::string& error) {
        writer.skipped(itemKey(setOf.at(&item)->name, item.id), item.line, error);
        if (callbacks.onSkipped) callbacks.onSkipped(item, error);
    };
    run.stopRequested = callbacks.stopRequested;
    StudyJobResult result;
    result.totals = runEval(model, remaining, steerings, o, run);
    result.stopped = result.totals.stopped;
    if (result.totals.items > 0 || result.stopped)   // totals count an item once per plan
        recordRunTimings(job.outDir, runTimingsOf(result.totals, result.totals.items / int64_t(job.plans.size())));
    if (result.stopped) return result;
    result.summary = summarizeStudy(json::parse(readTextFile((fs::path(job.outDir) / "study.json").string())), readPlans(job.outDir),
                                    readCompleteItems(job.outDir, job.plans.size()), readRunTimings(job.outDir), readSkipped(job.outDir));
    writeStudyFiles(job.outDir, result.summary);
    return result;
}

ordered_json mergeStudyShards(const std::vector<std::string>& shardDirs, const std::string& out) {
    if (shardDirs.empty()) throw Error("study-merge: no shard folders");
    std::vector<json> ids;
    for (const std::string& d : shardDirs) {
        const fs::path f = fs::path(d) / "study.json";
        if (!fs::exists(f)) throw Error("study-merge: " + d + " holds no study.json (not a study folder)");
        ids.push_back(json::parse(readTextFile(f.string())));
    }
    const json& first = ids.front();
    const int count = first.at("shard").at("count").get<int>();
    std::set<std::string> ignored = kWhereabouts;
    ignored.insert({"shard.index", "shard.items"});
    std::vector<ShardFolder> shards;
    for (size_t i = 0; i < shardDirs.size(); ++i) {
        const std::vector<std::string> d = differences(first, ids[i], ignored);
        if (!d.empty()) throw Error("study-merge: " + shardDirs[i] + " is not a shard of the same study as " + shardDirs[0] + ": " + joinedProblems(d));
        shards.push_back({shardDirs[i], ids[i].at("shard").at("index").get<int>(), ids[i].at("shard").at("items").get<int64_t>()});
    }
    const std::vector<json> plans = readPlans(shardDirs.front());
    ShardLineRules rules;
    rules.linesPerItem = int(plans.size());
    rules.key = lineKey;
    rules.shardOf = [&](const json& line) { return shardOfImage(line.at("image").get<std::string>(), line.at("id").get<std::string>(), count); };
    const ShardLines all = gatherShardLines("study-merge", shards, count, rules);
    const std::vector<json>& items = all.lines;
    json merged = first;
    merged["shard"] = {{"index", 0}, {"count", 1}, {"items", int64_t(items.size() / std::max<size_t>(1, plans.size()))}};
    const FolderLock lock(out);
    std::string planLines, itemLines;
    for (const json& p : plans) planLines += p.dump() + "\n";
    const ordered_json summary = summarizeStudy(merged, plans, items, all.timings, all.skipped);
    for (const json& l : sortedStudyLines(merged, items)) itemLines += l.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    writeTextAtomically((fs::path(out) / "study.json").string(), merged.dump(2) + "\n");
    writeTextAtomically((fs::path(out) / "plans.jsonl").string(), planLines);
    writeTextAtomically((fs::path(out) / "items.jsonl").string(), itemLines);
    writeStudyFiles(out, summary);
    return summary;
}

} // namespace kvsteer
