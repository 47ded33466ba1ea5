#include "study/Frontier.h"

#include <algorithm>
#include <cmath>

namespace kvsteer {

std::vector<int> paretoFrontier(const std::vector<FrontierPoint>& points) {
    auto defined = [](const FrontierPoint& p) { return !std::isnan(p.targetSuccess) && !std::isnan(p.preservation); };
    auto beats = [](const FrontierPoint& b, const FrontierPoint& a) {
        return b.targetSuccess >= a.targetSuccess && b.preservation >= a.preservation &&
               (b.targetSuccess > a.targetSuccess || b.preservation > a.preservation);
    };
    std::vector<int> frontier;
    for (size_t a = 0; a < points.size(); ++a) {
        if (!defined(points[a])) continue;
        bool beaten = false;
        for (size_t b = 0; b < points.size() && !beaten; ++b) beaten = defined(points[b]) && beats(points[b], points[a]);
        if (!beaten) frontier.push_back(int(a));
    }
    std::stable_sort(frontier.begin(), frontier.end(), [&](int x, int y) {
        const FrontierPoint &p = points[size_t(x)], &q = points[size_t(y)];
        return p.targetSuccess != q.targetSuccess ? p.targetSuccess < q.targetSuccess : p.preservation > q.preservation;
    });
    return frontier;
}

} // namespace kvsteer
