#pragma once
// One row of bench's tables: what was measured on one model at one thread count, and its JSON
// form (what --json prints, and what a child process hands back to the bench that started it).
#include "BenchStudy.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace kvsteer {

struct BenchRow {
    std::string model, weights, device = "cpu";
    int threads = 0;                      // the kernels' threads it ran on
    bool besideBusy = false;              // measured beside one busy process (--beside-busy)
    double loadS = 0, encodeMs = 0, prefillTokS = 0, decodeTokS = 0, rooflineTokS = 0, pairStepsS = 0, peakRssGB = 0, pairRssGB = 0;
    double readGBs = 0;   // the decode weights' read bandwidth (CUDA: a copy's): roofline = readGBs / weight bytes per token
    double deviceMemGB = 0;   // CUDA: the most device memory in use after any phase (allocator cache and context included)
    double firstEditMs = 0, editMs = 0;   // the pair's edit: the first after loading, the best of the others
    // The 4 x 3 atlas (batched) against the same 12 settings run one at a time.
    double atlasMs = 0, separateSteerMs = 0, separateDecodeMs = 0;
    double atlasCost() const { return separateSteerMs > 0 ? atlasMs / separateSteerMs : 0; }
    // The same on the demo scene (red circle, shipped red->blue vectors, the circle painted), for
    // the bundled demo model: the atlas the studio's first run shows.
    double demoAtlasMs = 0, demoSteerMs = 0, demoDecodeMs = 0;
    double demoAtlasCost() const { return demoSteerMs > 0 ? demoAtlasMs / demoSteerMs : 0; }
    // Eval: items/s on a demo-pope set (6 questions per image), with and without prefix reuse.
    double evalItemsS = 0, evalNoReuseItemsS = 0;
    StudyCost study;
    double evalReuseGain() const { return evalNoReuseItemsS > 0 ? evalItemsS / evalNoReuseItemsS : 0; }
    int64_t parameters = 0, promptTokens = 0, weightBytesPerToken = 0;
    double pairCost() const { return pairStepsS > 0 ? decodeTokS / pairStepsS : 0; }
};

nlohmann::json toJson(const BenchRow& r);
BenchRow rowFromJson(const nlohmann::json& j);

} // namespace kvsteer
