#pragma once
// bench's atlas rows: a 4 x 3 atlas from the kept snapshot, batched as the studio runs it, against
// the same 12 settings as 12 `kvsteer steer` runs and as 12 single-stream decodes.
#include "BenchRow.h"

#include <memory>

namespace kvsteer {

class Model;
class Session;
struct SteeringPlan;

// On `session`'s prompt with `plan`'s vectors and map: row.atlasMs, separateSteerMs, separateDecodeMs.
void measureAtlas(Session& session, const SteeringPlan& plan, int repeat, BenchRow& row);

// The studio's first scene (red_circle.png, the shipped red->blue vectors, the circle painted), when
// `model` is the bundled demo model and those files are there: row.demoAtlasMs, demoSteerMs, demoDecodeMs.
void measureDemoAtlas(std::shared_ptr<Model> model, int repeat, BenchRow& row);

} // namespace kvsteer
