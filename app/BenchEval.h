#pragma once
// bench's eval and study rows, on a demo-pope set written for the run.
#include "BenchRow.h"

#include <memory>

namespace kvsteer {

class Model;

// Eval's items/s with and without prefix reuse (row.evalItemsS, evalNoReuseItemsS), then a
// study of `studyPlans` plans against one plan's eval (row.study), on `images` ShapeWorld scenes.
void measureEval(const std::shared_ptr<Model>& model, int images, int studyPlans, int repeat, BenchRow& row);

} // namespace kvsteer
