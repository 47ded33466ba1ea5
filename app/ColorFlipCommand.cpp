#include "ColorFlipCommand.h"

#include "CliOptions.h"
#include "CommandLine.h"
#include "demo/ColorFlip.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "steer/SteeringVectors.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>

namespace kvsteer {

namespace {

std::vector<double> numberList(const std::string& text) {
    std::vector<double> v;
    std::stringstream ss(text);
    for (std::string item; std::getline(ss, item, ',');) {
        try {
            v.push_back(std::stod(item));
        } catch (const std::exception&) {
            throw UsageError("'" + item + "' is not a number");
        }
    }
    return v;
}

} // namespace

int commandDemoSteer(int argc, char** argv) {
    CommandLine cl(withOptions({"pairs", "n", "seed", "ck", "cv", "mode", "save-vectors"}, modelOptionNames()), {});
    cl.parse(argc, argv, 2);
    auto model = loadModel(cl);
    const int pairs = cl.getInt("pairs", 16);
    const uint64_t seed = cl.getU64("seed", 1);
    if (seed == 0) throw UsageError("--seed 0 is the extraction seed; held-out scenes need another");
    std::cerr << "extracting red->blue vectors from " << pairs << " image pairs ...\n";
    const SteeringVectors vectors = demo::redToBlueVectors(model, pairs, 0);
    if (cl.has("save-vectors")) {
        SteeringFileInfo info;
        recordModel(info, *model);
        info.op = SteeringOperator::Add;
        const auto cks = numberList(cl.get("ck", "0")), cvs = numberList(cl.get("cv", "8"));
        info.ck = {cks.front()};
        info.cv = {cvs.front()};
        info.recipe = "image-pair";
        info.recipeInputsJson = nlohmann::json{{"prompt", "What color is the circle?"}, {"pairs", pairs},
                                               {"image_a", "ShapeWorld steer scenes 0..n-1, circle blue"},
                                               {"image_b", "the same scenes, circle red"}}.dump();
        info.promptTemplate = model->applyTemplate("{question}", true);
        saveSteeringFile(cl.get("save-vectors"), vectors, info);
    }
    const std::string mode = cl.get("mode", "both");
    if (mode != "edit-only" && mode != "propagate" && mode != "both") throw UsageError("--mode must be edit-only, propagate or both");
    std::printf("| mode | c_k | c_v | scenes | unsteered says red | flips to blue (circle painted) | flips to blue (background painted) |\n"
                "|---|---|---|---|---|---|---|\n");
    for (const char* m : {"edit-only", "propagate"}) {
        if (mode != "both" && mode != m) continue;
        for (double ck : numberList(cl.get("ck", "0")))
            for (double cv : numberList(cl.get("cv", "8"))) {
                demo::ColorFlipOptions o;
                o.scenes = cl.getInt("n", 100);
                o.seed = seed;
                o.ck = ck;
                o.cv = cv;
                o.mode = std::string(m) == "propagate" ? PlanMode::Propagate : PlanMode::EditOnly;
                const demo::ColorFlipResult r = demo::measureColorFlip(model, vectors, o);
                std::printf("| %s | %g | %g | %d | %.1f %% | %.1f %% | %.1f %% |\n", m, ck, cv, r.scenes, 100 * r.rate(r.baselineRed),
                            100 * r.rate(r.flippedOnCircle), 100 * r.rate(r.flippedOnBackground));
                std::fflush(stdout);
            }
    }
    return 0;
}

} // namespace kvsteer
