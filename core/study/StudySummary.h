#pragma once
// A study's summary, computed from its files alone (study.json, plans.jsonl, items.jsonl), so a
// run, a run continued after a kill and merged shards give the same summary (timings aside).
//
// For each plan and dataset:
//   - the set's metric unsteered and steered, and the difference with its 95 % interval;
//     pope: accuracy, precision, recall, f1, yes_ratio; exact / contains: accuracy;
//     chair: chair_i, chair_s, recall (eval/Chair.h) and accuracy (no hallucinated object)
//   - target sets: success, the fraction of steered answers that match the item's target
//     (and the unsteered fraction beside it)
//   - preserve sets: preservation, of the items the unsteered model answered right, the
//     fraction still right steered (null when it got none right)
//   - a degenerate steered answer (the atlas's class: a token repeated, "blue blue blue blue")
//     is neither a success nor kept, whatever the metric reads in it
//   - the first step's KL(unsteered || steered), the target's teacher-forced log-prob
//     difference (steered - unsteered), the fraction of degenerate and of changed answers
//   - McNemar's exact p on correctness (item-level: discordant items counted one by one)
//   - the same broken down by the items' category
// Per plan: target success (mean over the target sets) and preservation (mean over the preserve
// sets), the two axes of the frontier. Every interval is a bootstrap that resamples images (an
// image's questions, across the sets, go together: eval/PairedStatistics.h).
#include "eval/EvalReport.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kvsteer {

nlohmann::ordered_json summarizeStudy(const nlohmann::json& identity, const std::vector<nlohmann::json>& plans,
                                      const std::vector<nlohmann::json>& items, const RunTimings& timings,
                                      const std::vector<nlohmann::json>& skipped);

// The item lines in suite order: dataset (as study.json lists them), item index, plan.
std::vector<nlohmann::json> sortedStudyLines(const nlohmann::json& identity, std::vector<nlohmann::json> items);

} // namespace kvsteer
