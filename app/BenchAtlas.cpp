#include "BenchAtlas.h"

#include "Elapsed.h"
#include "generate/Session.h"
#include "io/Image.h"
#include "models/Model.h"
#include "models/Prompt.h"
#include "steer/Atlas.h"
#include "steer/LayerRange.h"
#include "steer/Mask.h"
#include "steer/PlanOptions.h"
#include "steer/SteeredRun.h"
#include "steer/SteeringVectors.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

namespace kvsteer {

namespace {

// A 4 x 3 atlas (c_v 4, 8, 16, 32 × all / early / middle layers, 8 greedy tokens a cell, stopping
// at EOS) from the kept snapshot, batched as the studio runs it, against the same 12 settings as
// 12 separate `kvsteer steer` runs (edit + the side-by-side pair) and as 12 separate steered
// decodes (the unbatched sweep). All three produce the same ids (test_atlas), so the times compare.
struct AtlasTimes {
    double atlasMs = 1e300, steerMs = 1e300, decodeMs = 1e300;
};

AtlasTimes timeAtlas(Session& session, const SteeringPlan& plan, int repeat) {
    const int layers = session.model().config().text.numLayers;
    std::vector<LayerRange> rows{parseLayerRange("all", layers)};
    for (const char* t : {"early", "middle"})
        if (layers >= 3) rows.push_back(parseLayerRange(t, layers));
    while (rows.size() < 3) rows.push_back(rows.front());
    const std::vector<AtlasSetting> settings = atlasGrid(plan, rows, {4, 8, 16, 32});
    AtlasOptions options;
    options.maxNewTokens = 8;
    GenerationOptions gen;
    gen.maxNewTokens = options.maxNewTokens;
    auto ms = [](auto&& f) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        return msSince(t0);
    };
    AtlasTimes t;
    for (int r = 0; r < repeat; ++r) {
        t.atlasMs = std::min(t.atlasMs, ms([&] { runAtlas(session, plan, settings, options); }));
        t.steerMs = std::min(t.steerMs, ms([&] {
            for (const AtlasSetting& s : settings) runSteered(session, session.prompt(), planForSetting(plan, s), gen);
        }));
        t.decodeMs = std::min(t.decodeMs, ms([&] {
            session.generate(gen);
            for (const AtlasSetting& s : settings) {
                const SteeredCache steered = applyPlan(session, planForSetting(plan, s));
                GenerationOptions g = gen;
                g.attentionBias = steered.attentionBias;
                session.decode(steered.cache, session.lastPromptToken(), g);
            }
        }));
    }
    return t;
}

} // namespace

void measureAtlas(Session& session, const SteeringPlan& plan, int repeat, BenchRow& row) {
    const AtlasTimes t = timeAtlas(session, plan, repeat);
    row.atlasMs = t.atlasMs;
    row.separateSteerMs = t.steerMs;
    row.separateDecodeMs = t.decodeMs;
}

// The demo scene, when `model` is the bundled demo model and its files are there.
void measureDemoAtlas(std::shared_ptr<Model> model, int repeat, BenchRow& row) {
    if (model->config().name != "kvsteer/shapes-demo" || !std::filesystem::exists(KVSTEER_DEMO_IMAGE)) return;
    const ImageU8 image = loadImage(KVSTEER_DEMO_IMAGE);
    Session session(model);
    session.prefill(buildPrompt(*model, "What color is the circle?", false, &image), 64);
    SteeringFileInfo info;
    const SteeringVectors vectors = loadSteeringFile(KVSTEER_DEMO_VECTORS, *model, &info);
    const VisualSpan& span = session.snapshot().visualSpan;
    const SteeringPlan plan = makePlan(PlanOptions(), &vectors, info, loadMask("rect:6,9,15,18", span.gridHeight, span.gridWidth), span,
                                       model->config().text.numLayers);
    const AtlasTimes t = timeAtlas(session, plan, repeat);
    row.demoAtlasMs = t.atlasMs;
    row.demoSteerMs = t.steerMs;
    row.demoDecodeMs = t.decodeMs;
}

} // namespace kvsteer
