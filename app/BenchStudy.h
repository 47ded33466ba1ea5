#pragma once
// bench's study row: what P plans judged in one pass (kvsteer study's way: an image's prefix and
// an item's unsteered answer once, each plan's edit in its own decode row, KL and target
// measures on) cost against one plan's eval of the same items.
#include "eval/EvalDataset.h"

#include <memory>
#include <vector>

namespace kvsteer {

class Model;

struct StudyCost {
    int plans = 0;
    int64_t items = 0;
    double evalMs = 0;    // one plan's eval, best of the repeats
    double studyMs = 0;   // the P plans in one pass, best of the repeats
    double ratio() const { return evalMs > 0 ? studyMs / evalMs : 0; }   // the bound: 1 + 0.35 P
    double itemPlansPerS() const { return studyMs > 0 ? 1000.0 * double(items * plans) / studyMs : 0; }
    double separateItemPlansPerS() const { return evalMs > 0 ? 1000.0 * double(items) / evalMs : 0; }
};

// P plans of scale over each item's box: c_v 0.5, 1, 2, 4 (then 8, 16, ...) x c_k 0, 1, the first P.
StudyCost measureStudyCost(const std::shared_ptr<const Model>& model, const std::vector<const EvalItem*>& items, int plans, int repeat);

} // namespace kvsteer
