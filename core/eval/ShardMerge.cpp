#include "eval/ShardMerge.h"

#include "Error.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace kvsteer {

namespace fs = std::filesystem;
using nlohmann::json;

ShardLines gatherShardLines(const std::string& command, const std::vector<ShardFolder>& shards, int shardCount, const ShardLineRules& rules) {
    std::map<int, std::string> byShard;
    for (const ShardFolder& s : shards)
        if (!byShard.emplace(s.index, s.dir).second)
            throw Error(command + ": shard " + std::to_string(s.index) + " is given twice (" + byShard[s.index] + " and " + s.dir + ")");
    std::vector<std::string> problems;
    for (int k = 0; k < shardCount; ++k)
        if (!byShard.count(k)) problems.push_back("shard " + std::to_string(k) + "/" + std::to_string(shardCount) + " is missing");

    ShardLines all;
    all.timings.perShard = nlohmann::ordered_json::array();
    std::map<std::string, std::string> seen;   // line key -> "its file line N"
    std::set<std::string> badLines;            // every shard recorded the dataset's bad lines: keep them once
    // readDoneItems has checked each line's key (the "id" without rules.key).
    auto keyOf = [&](const json& line) { return rules.key ? rules.key(line) : line.at("id").get<std::string>(); };
    for (const ShardFolder& s : shards) {
        const std::vector<json> done = readDoneItems(s.dir, false, rules.key);
        int64_t skippedItems = 0;
        for (const json& k : readSkipped(s.dir)) {
            if (!k.value("id", "").empty()) {
                ++skippedItems;
                all.skipped.push_back(k);
            } else if (badLines.insert(k.dump()).second) {   // a bad line was never given to a shard
                all.skipped.push_back(k);
            }
        }
        const int64_t want = s.items * rules.linesPerItem;
        if (int64_t(done.size()) + skippedItems * rules.linesPerItem < want)
            problems.push_back(s.dir + " is not complete (" + std::to_string(done.size()) + " item lines and " + std::to_string(skippedItems) +
                               " skipped items, of " + std::to_string(s.items) + " items x " + std::to_string(rules.linesPerItem) + " = " +
                               std::to_string(want) + " item lines)");
        for (size_t i = 0; i < done.size(); ++i) {
            const std::string key = keyOf(done[i]);
            const std::string where = (fs::path(s.dir) / "items.jsonl").string() + " line " + std::to_string(i + 1);
            const auto [it, fresh] = seen.emplace(key, where);
            if (!fresh)
                problems.push_back("item \"" + key + "\" is in " + it->second + " and in " + where + "; an item belongs to one shard only (this one to shard " +
                                   std::to_string(rules.shardOf(done[i])) + "/" + std::to_string(shardCount) +
                                   "): remove it from the other folder, or rerun that shard into a new folder");
            all.lines.push_back(done[i]);
        }
        const RunTimings t = readRunTimings(s.dir);
        all.timings.seconds += t.seconds;
        all.timings.prefillMs += t.prefillMs;
        all.timings.decodeMs += t.decodeMs;
        all.timings.itemsTimed += t.itemsTimed;
        all.timings.perShard.push_back({{"shard", s.index},
                                        {"folder", s.dir},
                                        {"items", int64_t(done.size()) / std::max(1, rules.linesPerItem)},
                                        {"seconds", t.seconds},
                                        {"items_timed", t.itemsTimed},
                                        {"items_per_s", t.seconds > 0 ? double(t.itemsTimed) / t.seconds : 0.0}});
    }
    if (!problems.empty()) throw Error(command + ": " + joinedProblems(problems));
    return all;
}

} // namespace kvsteer
