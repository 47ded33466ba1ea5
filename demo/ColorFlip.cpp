#include "demo/ColorFlip.h"

#include "Error.h"
#include "demo/DemoEval.h"
#include "demo/ShapeWorld.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "generate/Session.h"
#include "steer/Recipes.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/from_blob.h>

namespace kvsteer::demo {

namespace {

const char* kQuestion = "What color is the circle?";

at::Tensor gridTensor(const std::vector<float>& cells) {
    return at::from_blob(const_cast<float*>(cells.data()), {kGridSize, kGridSize}, at::kFloat).clone();
}

std::string answer(const Session& session, const KVCache& cache, const std::vector<at::Tensor>& bias) {
    GenerationOptions gen;
    gen.maxNewTokens = 4;
    gen.attentionBias = bias;
    return normalizeAnswer(session.decode(cache, session.lastPromptToken(), gen).text);
}

} // namespace

SteeringVectors redToBlueVectors(const std::shared_ptr<const Model>& model, int pairs, uint64_t seed) {
    if (pairs < 1) throw Error("redToBlueVectors: needs at least one pair");
    // The image-pairs recipe, blue minus red, over the whole grid: resources/examples/red-to-blue
    // holds the first 8 of these pairs as PNGs for `kvsteer extract --recipe image-pairs`.
    std::vector<ImagePair> list;
    for (int i = 0; i < pairs; ++i) {
        const ColorPair pair = makeColorPair(steerSceneId(seed, static_cast<uint64_t>(i)));
        list.push_back({pair.imageTo, pair.imageFrom, kQuestion, "", "pair " + std::to_string(i)});
    }
    return extractImagePairs(model, list, ExtractOptions{});
}

ColorFlipResult measureColorFlip(const std::shared_ptr<const Model>& model, const SteeringVectors& vectors,
                                 const ColorFlipOptions& options) {
    ColorFlipResult r;
    SteeringPlan plan;
    plan.vectors = vectors;
    plan.ck = {options.ck};
    plan.cv = {options.cv};
    plan.mode = options.mode;
    plan.layers = options.layers;
    for (int i = 0; i < options.scenes; ++i) {
        const ColorPair pair = makeColorPair(steerSceneId(options.seed, static_cast<uint64_t>(i)));
        if (pair.emptyMask.empty()) continue;   // no background region of the circle's size
        Session session(model);
        session.prefill(buildPrompt(*model, kQuestion, false, &pair.imageFrom), 4);
        ++r.scenes;
        if (answer(session, session.snapshot(), {}) == "red") ++r.baselineRed;
        plan.strength = gridTensor(pair.mask);
        SteeredCache onCircle = applyPlan(session, plan);
        if (answer(session, onCircle.cache, onCircle.attentionBias) == "blue") ++r.flippedOnCircle;
        plan.strength = gridTensor(pair.emptyMask);
        SteeredCache onBackground = applyPlan(session, plan);
        if (answer(session, onBackground.cache, onBackground.attentionBias) == "blue") ++r.flippedOnBackground;
    }
    return r;
}

} // namespace kvsteer::demo
