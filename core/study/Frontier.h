#pragma once
// The frontier of a study: the plans that no other plan beats on both target success and
// preservation. Plan B beats plan A when it is at least as good on both and better on one;
// a plan whose axis is undefined (no target set, or no item to preserve) is left out.
#include <vector>

namespace kvsteer {

struct FrontierPoint {
    double targetSuccess = 0, preservation = 0;
};

// The indices of the points on the frontier, by rising target success (falling preservation).
// Equal points are all kept.
std::vector<int> paretoFrontier(const std::vector<FrontierPoint>& points);

} // namespace kvsteer
