#pragma once
// The uncertainty of a steered-minus-unsteered difference over the same items.
//   paired bootstrap   resample the items with replacement (the same resample for both
//                      conditions), compute the metric's difference on each resample; the 95 %
//                      interval is the 2.5th and 97.5th percentile of those differences. A fixed
//                      seed (std::mt19937_64, 2000 resamples by default) makes it reproducible.
//   McNemar's exact    b items right unsteered and wrong steered, c the reverse; under no effect
//                      each discordant item is a fair coin: p = min(1, 2 · P[Binom(b+c, ½) ≤ min(b, c)]).
#include "eval/Scoring.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvsteer {

struct Interval {
    double lo = 0, hi = 0;
};

// Per metric name, the 95 % interval of metric(steered) − metric(unsteered).
std::map<std::string, Interval> pairedBootstrap(EvalMetric metric, const std::vector<ScoredAnswer>& unsteered,
                                                const std::vector<ScoredAnswer>& steered, int resamples = 2000, uint64_t seed = 20261126);

double mcnemarExactP(int64_t b, int64_t c);

} // namespace kvsteer
