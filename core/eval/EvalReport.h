#pragma once
// The files of an eval run, in its output folder:
//   run.json       what the run is: dataset, model, steering spec and metric (by hash), the
//                  resolved plan (operator, c_k, c_v, layers, heads, mode, vectors), the shard.
//                  A run continued in the same folder, and shards merged, must match it.
//   items.jsonl    one line per item, appended and flushed as each batch ends: index, id, image,
//                  category, question, answers, the cells steered, and per condition
//                  ("unsteered", "steered") ids, text, correct (and said_yes for pope); the
//                  outcome class, timings.
//   runs.jsonl     one line per run that worked in the folder (a first run, each continuation):
//                  its seconds, items and prefill / decode time; the summary's timings add them.
//   skipped.jsonl  the bad lines and items a --skip-bad run recorded
//   summary.json, summary.csv, metrics.svg   written at the end, each atomically
//   .kvsteer.lock  the FolderLock of the run (or merge) writing the folder, and who that is
// The summary is computed from items.jsonl in dataset order, so a resumed run, a run stopped and
// continued, and merged shards all give the summary one clean run gives (timings aside). One
// writer at a time (io/FolderLock.h); an id on two lines of items.jsonl is refused.
#include "eval/EvalRun.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace kvsteer {

struct RunIdentity {
    std::string datasetPath, datasetHash;
    int64_t datasetItems = 0;
    std::string modelDirectory, modelConfigHash;
    std::string steeringHash;
    std::string metric;
    int maxNewTokens = 0;
    int shardIndex = 0, shardCount = 1;
    int64_t shardItems = 0;          // the items this shard evaluates
    nlohmann::ordered_json plan;     // the resolved plan, for people (its hash is in steeringHash); null = not recorded
};

// --shard K/N: the item's stable hash of its id, mod N, is K.
bool inShard(const EvalItem& item, int shardIndex, int shardCount);

// What an identity check or a merge found wrong, as one clause for its error: "a; b; c".
std::string joinedProblems(const std::vector<std::string>& problems);

// Makes `dir` (when new) and writes run.json, or checks the one there: a run of another dataset,
// model, steering spec, metric, budget or shard is refused naming each field that differs, and
// each field of the plan with both values.
void openRunDirectory(const std::string& dir, const RunIdentity& identity);
RunIdentity readRunIdentity(const std::string& dir);

// The items done in `dir`, in file order (item k is line k + 1). A last line cut short by a killed
// run is left out, and with `repairTornLine` removed from the file, so the run continues cleanly
// after the last whole item (only the folder's writer may repair it). An id on two lines is an
// Error naming both lines: each item is counted once.
std::vector<nlohmann::json> readDoneItems(const std::string& dir, bool repairTornLine = true);
// The same with another key than "id" for what must be on one line only (a study's lines are
// one per item and plan); `keyOf` throws nlohmann::json::exception for a line without one.
std::vector<nlohmann::json> readDoneItems(const std::string& dir, bool repairTornLine,
                                          const std::function<std::string(const nlohmann::json&)>& keyOf);

// The bad lines and items recorded in `dir`'s skipped.jsonl ({"id", "line", "error"}).
std::vector<nlohmann::json> readSkipped(const std::string& dir);

// Appends lines to items.jsonl / skipped.jsonl, each flushed to disk before the next.
class ItemWriter {
public:
    explicit ItemWriter(const std::string& dir);
    ~ItemWriter();
    ItemWriter(const ItemWriter&) = delete;
    ItemWriter& operator=(const ItemWriter&) = delete;
    void write(const nlohmann::json& line);
    // Lines that belong together (a study item's plans) in one write, flushed: a killed run leaves
    // them all, or some and a torn last line, which the study's reader drops with the item's other
    // lines (it keeps only items with every line).
    void writeTogether(const std::vector<nlohmann::ordered_json>& lines);
    void skipped(const std::string& id, int line, const std::string& error);

private:
    std::string dir_;
    std::FILE* items_ = nullptr;
    std::FILE* skipped_ = nullptr;
};

nlohmann::ordered_json itemJson(const EvalItemResult& r, EvalMetric metric);

struct RunTimings {
    double seconds = 0;              // wall time of the run(s) that made these items, added
    double prefillMs = 0, decodeMs = 0;
    int64_t itemsTimed = 0;          // items evaluated in that time
    nlohmann::ordered_json perShard; // merged shards: each one's timings (null otherwise)
};

// A run's timings from its totals; `itemsTimed` the items it finished (a study: items, not lines).
RunTimings runTimingsOf(const EvalTotals& totals, int64_t itemsTimed);

// Appends one run's timings to dir/runs.jsonl, and reads them all back added up (a folder whose
// items were made by a first run and its continuations).
void recordRunTimings(const std::string& dir, const RunTimings& run);
RunTimings readRunTimings(const std::string& dir);

// The summary of `items` (any order; dataset order is restored): per condition the metric's
// values, the differences with paired-bootstrap 95 % intervals, McNemar's exact p for accuracy,
// the fraction of answers steering changed and the outcome classes. An id twice is an Error.
nlohmann::ordered_json summarize(const RunIdentity& identity, std::vector<nlohmann::json> items, const RunTimings& timings,
                                 const std::vector<nlohmann::json>& skipped = {});

// summary.json, summary.csv and metrics.svg into `dir`, each atomically.
void writeSummaryFiles(const std::string& dir, const nlohmann::ordered_json& summary);

// Merges shard folders into `out`: their run.json must agree (dataset, model, spec, metric,
// budget, shard count), every shard 0..N-1 must be there once and complete, and no item may be
// in two. Writes out/run.json, the items in dataset order and the summary, holding out's
// FolderLock; returns the summary. The shard folders are only read.
nlohmann::ordered_json mergeShards(const std::vector<std::string>& shardDirs, const std::string& out);

} // namespace kvsteer
