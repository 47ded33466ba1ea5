#pragma once
// What eval-merge and study-merge share: reading shard folders of one job into one list of item
// lines. Every shard 0..N-1 must be there once and complete (its lines, or its skipped items, for
// every item it was given), and no line may be in two shards. Whether the shards are of the same
// job (run.json, study.json) and how the merged folder is written stay each command's.
#include "eval/EvalReport.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace kvsteer {

// One shard folder, as its identity file describes it.
struct ShardFolder {
    std::string dir;
    int index = 0;            // K of --shard K/N
    int64_t items = 0;        // the items the shard was given
};

// How a job's item lines are told apart.
struct ShardLineRules {
    int linesPerItem = 1;                                       // a study writes one line per plan
    std::function<std::string(const nlohmann::json&)> key;      // what must be on one line only; empty: the "id"
    std::function<int(const nlohmann::json&)> shardOf;          // the shard a line belongs to (named when one is in two)
};

struct ShardLines {
    std::vector<nlohmann::json> lines;      // every shard's item lines, shard after shard, each in file order
    std::vector<nlohmann::json> skipped;    // every shard's skipped items, and the dataset's bad lines once
    RunTimings timings;                     // added up (whether the shards ran side by side is not known), each in perShard
};

// Reads the shards' items.jsonl, skipped.jsonl and runs.jsonl without writing to them (a shard
// folder is another run's, which may still be writing). Throws kvsteer::Error starting with
// `command` ("eval-merge") that names every shard missing, given twice or incomplete, and every
// line in two shards with both files and lines.
ShardLines gatherShardLines(const std::string& command, const std::vector<ShardFolder>& shards, int shardCount, const ShardLineRules& rules);

} // namespace kvsteer
