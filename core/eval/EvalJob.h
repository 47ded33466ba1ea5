#pragma once
// An eval run in its output folder, start to end — what `kvsteer eval` and the studio's Evaluate
// dock both do around runEval: the folder is opened (or checked, to continue the run it holds),
// the items already there are skipped, each new item is appended as its batch ends, and once every
// item is done the summary files are written. SIGINT or a Stop ends it after the current batch,
// with the folder ready to continue. The folder is locked for the whole job (io/FolderLock.h): a
// second writer is refused, naming this one.
#include "eval/EvalReport.h"
#include "eval/EvalRun.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace kvsteer {

struct EvalJob {
    std::string outDir;
    RunIdentity identity;                 // dataset, model, spec and shard (see EvalReport.h)
    std::vector<const EvalItem*> items;   // the items this run (this shard) evaluates
    std::vector<BadLine> badLines;        // the dataset's skipped lines, recorded on a fresh start
};

struct EvalJobCallbacks {
    std::function<void(size_t total, size_t alreadyDone)> onStart;   // before the first batch
    std::function<void(const EvalItemResult&)> onItem;              // after it is on disk
    std::function<void(const EvalItem&, const std::string& error)> onSkipped;
    std::function<bool()> stopRequested;                            // asked between batches
};

struct EvalJobResult {
    bool stopped = false;
    EvalTotals totals;                    // of this run (not of an earlier one it continued)
    nlohmann::ordered_json summary;       // null when stopped
};

// The identity of a run of `dataset` on `model` (run.json): the shard fields are the caller's,
// shardItems the items it evaluates.
RunIdentity runIdentity(const EvalDataset& dataset, const Model& model, const std::string& steeringHash, const std::string& metric,
                        int maxNewTokens, int64_t shardItems);

// Where a job continues in its folder (eval's and study's): the items whose key is in `done` (their
// lines are on disk) or among skipped.jsonl's ids are left out; a fresh folder (nothing done or
// skipped) first records the datasets' bad lines through `writer`. Returns the items left to run.
std::vector<const EvalItem*> itemsLeftToRun(const std::string& dir, const std::vector<const EvalItem*>& items, std::set<std::string> done,
                                            const std::function<std::string(const EvalItem&)>& keyOf, const std::vector<BadLine>& badLines,
                                            ItemWriter& writer);

EvalJobResult runEvalJob(const std::shared_ptr<const Model>& model, const EvalJob& job, const EvalSteering& steering,
                         const EvalOptions& options, const EvalJobCallbacks& callbacks);

} // namespace kvsteer
