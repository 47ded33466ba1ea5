#pragma once
// The demo's steering experiment: extract a red→blue direction with the steering engine's
// image-pair recipe (the same scene with the circle blue vs red), paint it over the red circle of
// held-out scenes, and count how often "What color is the circle?" flips to "blue" — against the
// same strength painted over empty background (the control).
#include "steer/SteeringPlan.h"
#include "steer/SteeringVectors.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace kvsteer {
class Model;
}

namespace kvsteer::demo {

// Mean of image-pair vectors (A = circle blue, B = circle red) over `pairs` scenes
// steerSceneId(seed, i). Per head, post-RoPE.
SteeringVectors redToBlueVectors(const std::shared_ptr<const Model>& model, int pairs, uint64_t seed);

struct ColorFlipOptions {
    int scenes = 100;
    uint64_t seed = 1;             // held-out scenes steerSceneId(seed, i); keep it != the extraction seed
    double ck = 0, cv = 8;
    PlanMode mode = PlanMode::EditOnly;
    std::vector<int> layers;       // empty = all
};

struct ColorFlipResult {
    int scenes = 0;
    int baselineRed = 0;           // unsteered answers "red" (the model sees the scene right)
    int flippedOnCircle = 0;       // steered over the circle: answers "blue"
    int flippedOnBackground = 0;   // same strength over empty background: answers "blue"
    double rate(int n) const { return scenes ? double(n) / scenes : 0.0; }
};

ColorFlipResult measureColorFlip(const std::shared_ptr<const Model>& model, const SteeringVectors& vectors,
                                 const ColorFlipOptions& options);

} // namespace kvsteer::demo
