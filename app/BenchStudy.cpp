#include "BenchStudy.h"

#include "eval/EvalRun.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace kvsteer {

StudyCost measureStudyCost(const std::shared_ptr<const Model>& model, const std::vector<const EvalItem*>& items, int plans, int repeat) {
    std::vector<EvalSteering> grid;
    for (int i = 0; int(grid.size()) < plans; ++i)
        for (double ck : {0.0, 1.0}) {
            if (int(grid.size()) == plans) break;
            EvalSteering s;
            s.plan.op = SteeringOperator::Scale;
            s.plan.ck = {ck};
            s.plan.cv = {0.5 * std::pow(2.0, i)};
            grid.push_back(s);
        }
    EvalOptions eo;
    eo.generation.maxNewTokens = 4;
    StudyCost cost;
    cost.plans = plans;
    cost.items = int64_t(items.size());
    auto timed = [&](const std::vector<EvalSteering>& steerings, bool measures) {
        eo.measures = measures;
        double best = 1e300;
        for (int r = 0; r < repeat; ++r) best = std::min(best, runEval(model, items, steerings, eo, {}).totalMs);
        return best;
    };
    cost.evalMs = timed({grid[2 % grid.size()]}, false);   // c_v 2, c_k 0: eval's row
    cost.studyMs = timed(grid, true);
    return cost;
}

} // namespace kvsteer
