#include "eval/PairedStatistics.h"

#include "Error.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace kvsteer {

std::map<std::string, Interval> pairedBootstrap(EvalMetric metric, const std::vector<ScoredAnswer>& unsteered,
                                                const std::vector<ScoredAnswer>& steered, int resamples, uint64_t seed) {
    if (unsteered.size() != steered.size()) throw Error("bootstrap: the two conditions must score the same items");
    std::map<std::string, Interval> out;
    if (unsteered.empty() || resamples < 1) return out;
    std::mt19937_64 rng(seed);
    // An index drawn uniformly from 0..n-1 with 64-bit arithmetic (no std distribution: the
    // interval must not depend on the standard library's implementation).
    const uint64_t n = unsteered.size();
    std::map<std::string, std::vector<double>> diffs;
    std::vector<ScoredAnswer> a(n), b(n);
    for (int r = 0; r < resamples; ++r) {
        for (uint64_t i = 0; i < n; ++i) {
            const uint64_t k = rng() % n;
            a[i] = unsteered[k];
            b[i] = steered[k];
        }
        const auto ma = metricValues(metric, a), mb = metricValues(metric, b);
        for (const auto& [name, v] : mb) diffs[name].push_back(v - ma.at(name));
    }
    for (auto& entry : diffs) {   // (not a structured binding: C++17 lambdas cannot capture one)
        std::vector<double>& d = entry.second;
        std::sort(d.begin(), d.end());
        auto at = [&](double q) {   // the q-quantile, linear between order statistics
            const double pos = q * double(d.size() - 1);
            const size_t i = size_t(std::floor(pos));
            const double f = pos - double(i);
            return i + 1 < d.size() ? d[i] * (1 - f) + d[i + 1] * f : d[i];
        };
        out[entry.first] = {at(0.025), at(0.975)};
    }
    return out;
}

double mcnemarExactP(int64_t b, int64_t c) {
    const int64_t n = b + c;
    if (n == 0) return 1.0;
    const int64_t k = std::min(b, c);
    // P[X <= k] for X ~ Binom(n, 1/2), summed in log space so large n does not overflow.
    double tail = 0;
    for (int64_t i = 0; i <= k; ++i)
        tail += std::exp(std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1) - double(n) * std::log(2.0));
    return std::min(1.0, 2 * tail);
}

} // namespace kvsteer
