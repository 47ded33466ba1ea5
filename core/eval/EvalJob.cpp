#include "eval/EvalJob.h"

#include "io/FolderLock.h"
#include "models/Model.h"

#include <set>

namespace kvsteer {

RunIdentity runIdentity(const EvalDataset& dataset, const Model& model, const std::string& steeringHash, const std::string& metric,
                        int maxNewTokens, int64_t shardItems) {
    RunIdentity id;
    id.datasetPath = dataset.path;
    id.datasetHash = dataset.hash;
    id.datasetItems = int64_t(dataset.items.size());
    id.modelDirectory = model.directory();
    id.modelConfigHash = model.config().configHash;
    id.steeringHash = steeringHash;
    id.metric = metric;
    id.maxNewTokens = maxNewTokens;
    id.shardItems = shardItems;
    return id;
}

std::vector<const EvalItem*> itemsLeftToRun(const std::string& dir, const std::vector<const EvalItem*>& items, std::set<std::string> done,
                                            const std::function<std::string(const EvalItem&)>& keyOf, const std::vector<BadLine>& badLines,
                                            ItemWriter& writer) {
    const std::vector<nlohmann::json> skipped = readSkipped(dir);
    if (done.empty() && skipped.empty())
        for (const BadLine& b : badLines) writer.skipped("", b.line, b.error);
    for (const auto& j : skipped) done.insert(j.value("id", ""));
    std::vector<const EvalItem*> remaining;
    for (const EvalItem* item : items)
        if (!done.count(keyOf(*item))) remaining.push_back(item);
    return remaining;
}

EvalJobResult runEvalJob(const std::shared_ptr<const Model>& model, const EvalJob& job, const EvalSteering& steering,
                         const EvalOptions& options, const EvalJobCallbacks& callbacks) {
    // Held to the end, summary included: a second writer (another `kvsteer eval`, the studio's
    // Evaluate) would append the same items again and summarize a half-written file.
    const FolderLock lock(job.outDir);
    openRunDirectory(job.outDir, job.identity);
    // Continue where a stopped or killed run left off: its items (and skipped items) are done.
    std::set<std::string> done;
    for (const auto& j : readDoneItems(job.outDir)) done.insert(j.at("id").get<std::string>());
    ItemWriter writer(job.outDir);
    const std::vector<const EvalItem*> remaining =
        itemsLeftToRun(job.outDir, job.items, done, [](const EvalItem& item) { return item.id; }, job.badLines, writer);
    if (callbacks.onStart) callbacks.onStart(job.items.size(), job.items.size() - remaining.size());

    EvalCallbacks run;
    run.onItem = [&](const EvalItemResult& r) {
        writer.write(itemJson(r, options.metric));
        if (callbacks.onItem) callbacks.onItem(r);
    };
    run.onSkipped = [&](const EvalItem& item, const std::string& error) {
        writer.skipped(item.id, item.line, error);
        if (callbacks.onSkipped) callbacks.onSkipped(item, error);
    };
    run.stopRequested = callbacks.stopRequested;
    EvalJobResult result;
    result.totals = runEval(model, remaining, steering, options, run);
    result.stopped = result.totals.stopped;
    // This run's time joins the folder's earlier runs' (a rerun of a finished run adds nothing).
    if (result.totals.items > 0 || result.stopped) recordRunTimings(job.outDir, runTimingsOf(result.totals, result.totals.items));
    if (result.stopped) return result;
    result.summary = summarize(job.identity, readDoneItems(job.outDir), readRunTimings(job.outDir), readSkipped(job.outDir));
    writeSummaryFiles(job.outDir, result.summary);
    return result;
}

} // namespace kvsteer
