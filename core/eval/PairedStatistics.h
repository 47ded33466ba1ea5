#pragma once
// The uncertainty of a steered-minus-unsteered difference over the same items.
//   paired bootstrap   resample the clusters with replacement — an image and all its questions
//                      go together, since questions about one picture are not independent (POPE
//                      asks six about each) — the same resample for both conditions, and compute
//                      the metric's difference on each resample; the 95 % interval is the 2.5th
//                      and 97.5th percentile of those differences. Without cluster keys every
//                      item is its own cluster (the item-level bootstrap). A fixed seed
//                      (std::mt19937_64, 2000 resamples by default) makes it reproducible.
//   McNemar's exact    b items right unsteered and wrong steered, c the reverse; under no effect
//                      each discordant item is a fair coin: p = min(1, 2 · P[Binom(b+c, ½) ≤ min(b, c)]).
#include "eval/Scoring.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kvsteer {

struct Interval {
    double lo = 0, hi = 0;
};

constexpr int kBootstrapResamples = 2000;
constexpr uint64_t kBootstrapSeed = 20261126;

// Each item's cluster as a dense index 0..C-1 (in order of first appearance), from its key (the
// image); `clusterCount` gets C.
std::vector<int> clusterIndices(const std::vector<std::string>& keys, int* clusterCount = nullptr);

// The 95 % intervals of statistics over items resampled by cluster: `statistics` gets the
// resample's item indices (an item as often as its cluster was drawn) and fills one value per
// statistic (NaN for a statistic undefined on that resample: it is left out of that interval).
std::vector<Interval> clusteredBootstrap(const std::vector<int>& clusterOf, size_t statisticCount,
                                         const std::function<void(const std::vector<size_t>& items, std::vector<double>& values)>& statistics,
                                         int resamples = kBootstrapResamples, uint64_t seed = kBootstrapSeed);

// Per metric name, the 95 % interval of metric(steered) − metric(unsteered). `clusterOf` (one per
// item, or empty for items) groups the items that are resampled together.
std::map<std::string, Interval> pairedBootstrap(EvalMetric metric, const std::vector<ScoredAnswer>& unsteered,
                                                const std::vector<ScoredAnswer>& steered, const std::vector<int>& clusterOf = {},
                                                int resamples = kBootstrapResamples, uint64_t seed = kBootstrapSeed);

double mcnemarExactP(int64_t b, int64_t c);

} // namespace kvsteer
