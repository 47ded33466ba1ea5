#pragma once
// A study in its output folder, start to end: `kvsteer study` and the studio's Study both run it.
// Every plan is judged on every item of every dataset in one pass (eval/EvalRun.h): an image's
// prefix is computed once for all its questions, plans and datasets; an item's unsteered answer
// once; each plan's edit goes into its own row of the one batched decode loop. So a plan's
// answers equal `kvsteer eval` of that plan alone, bit for bit.
//
// Files in the folder:
//   study.json     what the study is (suite, datasets, model, plans, budget, shard); a run
//                  continued in the folder, and shards merged, must match it, field by field
//   plans.jsonl    each plan resolved: operator, c_k, c_v, layers, heads, mode, vectors + hash
//   items.jsonl    one line per item and plan: dataset, id, plan, image, cells, category, both
//                  answers with ids, their scores, the first step's KL, the target's log-probs.
//                  An item's lines are written together and flushed as its batch ends.
//   runs.jsonl     each run's time (a first run and its continuations)
//   skipped.jsonl  bad lines and items a --skip-bad run recorded
//   summary.json, summary.csv, frontier.json, frontier.svg, grid.svg   at the end (StudySummary.h)
// --shard K/N splits by image: an image's questions and plans all go to one shard (its prefix is
// then computed once), chosen by the stable hash of the image's file name.
#include "eval/EvalRun.h"
#include "study/StudyPlan.h"
#include "study/StudySuite.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

struct StudyJob {
    std::string outDir;
    const StudySuite* suite = nullptr;
    std::vector<StudyPlan> plans;
    int shardIndex = 0, shardCount = 1;
};

struct StudyJobCallbacks {
    std::function<void(size_t items, size_t alreadyDone)> onStart;   // items of this shard, before the first batch
    std::function<void()> onItem;                                     // an item's lines are on disk (all its plans)
    std::function<void(const EvalItem&, const std::string& error)> onSkipped;
    std::function<bool()> stopRequested;                              // asked between batches
};

struct StudyJobResult {
    bool stopped = false;
    EvalTotals totals;                    // of this run
    nlohmann::ordered_json summary;       // null when stopped
};

// Whether `item` is in shard K of N (by its image's file name; a text item by its id).
bool inStudyShard(const EvalItem& item, int shardIndex, int shardCount);

// What study.json holds for `job` on `model` with `options` (the budget and sampling).
nlohmann::ordered_json studyIdentity(const StudyJob& job, const Model& model, const EvalOptions& options, int64_t shardItems);

StudyJobResult runStudyJob(const std::shared_ptr<const Model>& model, const StudyJob& job, const EvalOptions& options,
                           const StudyJobCallbacks& callbacks);

// Merges shard folders of one study into `out` (their study.json must agree but for the shard;
// every shard there once and complete): the items in suite order, the summary. Returns it.
nlohmann::ordered_json mergeStudyShards(const std::vector<std::string>& shardDirs, const std::string& out);

} // namespace kvsteer
