#include "BenchEval.h"

#include "demo/DemoPope.h"
#include "eval/EvalDataset.h"
#include "eval/EvalRun.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace kvsteer {

namespace fs = std::filesystem;

// Eval's throughput: a demo-pope set of `images` ShapeWorld scenes (6 questions each, a box each),
// steered with scale (c_v 2 over the box, no vectors needed), 4 new tokens, batches of 8 rows;
// with the image's prefix computed once per image, and with every prompt prefilled whole. Then a
// study of `studyPlans` plans on the same items against one plan's eval (BenchStudy.h).
void measureEval(const std::shared_ptr<Model>& model, int images, int studyPlans, int repeat, BenchRow& row) {
    const fs::path dir = fs::temp_directory_path() / ("kvsteer-bench-eval-" + std::to_string(getpid()));
    demo::DemoPopeOptions o;
    o.images = images;
    demo::writeDemoPope(dir.string(), o);
    const EvalDataset ds = loadEvalDataset((dir / "pope.jsonl").string(), "", false);
    std::vector<const EvalItem*> items;
    for (const EvalItem& i : ds.items) items.push_back(&i);
    EvalSteering steering;
    steering.plan.op = SteeringOperator::Scale;
    steering.plan.ck = {0.0};
    steering.plan.cv = {2.0};
    EvalOptions eo;
    eo.generation.maxNewTokens = 4;
    for (bool reuse : {true, false}) {
        eo.prefixReuse = reuse;
        double best = 0;
        for (int r = 0; r < repeat; ++r) {
            const EvalTotals t = runEval(model, items, steering, eo, {});
            best = std::max(best, 1000.0 * t.items / t.totalMs);
        }
        (reuse ? row.evalItemsS : row.evalNoReuseItemsS) = best;
    }
    row.study = measureStudyCost(model, items, studyPlans, repeat);
    fs::remove_all(dir);
}

} // namespace kvsteer
