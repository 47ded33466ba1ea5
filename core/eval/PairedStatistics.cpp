#include "eval/PairedStatistics.h"

#include "Error.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace kvsteer {

std::vector<int> clusterIndices(const std::vector<std::string>& keys, int* clusterCount) {
    std::map<std::string, int> index;
    std::vector<int> out;
    for (const std::string& k : keys) out.push_back(index.emplace(k, int(index.size())).first->second);
    if (clusterCount) *clusterCount = int(index.size());
    return out;
}

std::vector<Interval> clusteredBootstrap(const std::vector<int>& clusterOf, size_t statisticCount,
                                         const std::function<void(const std::vector<size_t>&, std::vector<double>&)>& statistics,
                                         int resamples, uint64_t seed) {
    std::vector<Interval> out(statisticCount);
    if (clusterOf.empty() || resamples < 1) return out;
    std::vector<std::vector<size_t>> members;
    for (size_t i = 0; i < clusterOf.size(); ++i) {
        if (size_t(clusterOf[i]) >= members.size()) members.resize(size_t(clusterOf[i]) + 1);
        members[size_t(clusterOf[i])].push_back(i);
    }
    // A cluster drawn uniformly from 0..C-1 with 64-bit arithmetic (no std distribution: the
    // interval must not depend on the standard library's implementation).
    std::mt19937_64 rng(seed);
    const uint64_t clusters = members.size();
    std::vector<std::vector<double>> draws(statisticCount);
    std::vector<size_t> items;
    std::vector<double> values(statisticCount);
    for (int r = 0; r < resamples; ++r) {
        items.clear();
        for (uint64_t c = 0; c < clusters; ++c) {
            const std::vector<size_t>& m = members[rng() % clusters];
            items.insert(items.end(), m.begin(), m.end());
        }
        std::fill(values.begin(), values.end(), std::nan(""));
        statistics(items, values);
        for (size_t k = 0; k < statisticCount; ++k)
            if (!std::isnan(values[k])) draws[k].push_back(values[k]);
    }
    for (size_t k = 0; k < statisticCount; ++k) {
        std::vector<double>& d = draws[k];
        if (d.empty()) {
            out[k] = {std::nan(""), std::nan("")};
            continue;
        }
        std::sort(d.begin(), d.end());
        auto at = [&](double q) {   // the q-quantile, linear between order statistics
            const double pos = q * double(d.size() - 1);
            const size_t i = size_t(std::floor(pos));
            const double f = pos - double(i);
            return i + 1 < d.size() ? d[i] * (1 - f) + d[i + 1] * f : d[i];
        };
        out[k] = {at(0.025), at(0.975)};
    }
    return out;
}

std::map<std::string, Interval> pairedBootstrap(EvalMetric metric, const std::vector<ScoredAnswer>& unsteered,
                                                const std::vector<ScoredAnswer>& steered, const std::vector<int>& clusterOf, int resamples,
                                                uint64_t seed) {
    if (unsteered.size() != steered.size()) throw Error("bootstrap: the two conditions must score the same items");
    if (!clusterOf.empty() && clusterOf.size() != unsteered.size()) throw Error("bootstrap: one cluster per item");
    std::map<std::string, Interval> out;
    if (unsteered.empty() || resamples < 1) return out;
    std::vector<int> clusters = clusterOf;
    if (clusters.empty())
        for (size_t i = 0; i < unsteered.size(); ++i) clusters.push_back(int(i));
    const std::vector<std::string> names = [&] {
        std::vector<std::string> n;
        for (const auto& entry : metricValues(metric, unsteered)) n.push_back(entry.first);
        return n;
    }();
    std::vector<ScoredAnswer> a, b;
    const std::vector<Interval> intervals = clusteredBootstrap(
        clusters, names.size(),
        [&](const std::vector<size_t>& items, std::vector<double>& values) {
            a.clear();
            b.clear();
            for (size_t i : items) {
                a.push_back(unsteered[i]);
                b.push_back(steered[i]);
            }
            const auto ma = metricValues(metric, a), mb = metricValues(metric, b);
            for (size_t k = 0; k < names.size(); ++k) values[k] = mb.at(names[k]) - ma.at(names[k]);
        },
        resamples, seed);
    for (size_t k = 0; k < names.size(); ++k) out[names[k]] = intervals[k];
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
