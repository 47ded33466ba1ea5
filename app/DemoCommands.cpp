#include "DemoCommands.h"

#include "CommandLine.h"
#include "Error.h"
#include "demo/DemoEval.h"
#include "demo/DemoTrainer.h"
#include "demo/ShapeWorld.h"
#include "models/ModelRegistry.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace kvsteer {

namespace fs = std::filesystem;
using namespace kvsteer::demo;

namespace {

void parseCurriculum(const std::string& text, DemoTrainOptions& o) {
    double v[3];
    size_t start = 0;
    try {
        for (int i = 0; i < 3; ++i) {
            const size_t comma = text.find(',', start);
            if ((i < 2) != (comma != std::string::npos)) throw std::invalid_argument(text);
            size_t used = 0;
            const std::string part = text.substr(start, i < 2 ? comma - start : std::string::npos);
            v[i] = std::stod(part, &used);
            if (used != part.size() || v[i] < 0 || v[i] > 1) throw std::invalid_argument(text);
            start = comma + 1;
        }
    } catch (const std::exception&) {
        throw UsageError("option --curriculum: expected three fractions A,B,C in [0,1] (one shape until A, at most two until B, "
                         "big shapes shrinking until C), got '" + text + "'");
    }
    o.oneShapeUntil = v[0];
    o.twoShapesUntil = v[1];
    o.bigShapesUntil = v[2];
}

} // namespace

int commandTrainDemo(int argc, char** argv) {
    CommandLine cl({"out", "tokenizer-dir", "minutes", "steps", "seed", "batch", "lr", "threads", "validate-every", "curriculum",
                    "dtype", "log-every", "types", "vision-steps", "vision-lr", "vision-fraction", "vision-lr-scale", "grounding", "sizes"},
                   {});
    cl.parse(argc, argv, 2);
    if (!cl.has("out") || !cl.has("tokenizer-dir")) throw UsageError("train-demo needs --out DIR and --tokenizer-dir DIR");
    DemoTrainOptions o;
    o.outDir = cl.get("out");
    o.tokenizerDir = cl.get("tokenizer-dir");
    o.minutes = cl.getDouble("minutes", 0);
    o.steps = cl.getInt("steps", 0);
    if (o.minutes <= 0 && o.steps <= 0) o.minutes = 60;
    if (o.minutes < 0 || o.steps < 0) throw UsageError("--minutes and --steps must be >= 0");
    o.seed = cl.getU64("seed", 0);
    o.imagesPerStep = cl.getInt("batch", o.imagesPerStep);
    o.learningRate = cl.getDouble("lr", o.learningRate);
    o.threads = cl.getInt("threads", 1);
    o.validateEvery = cl.getInt("validate-every", o.validateEvery);
    o.logEvery = std::max(1, cl.getInt("log-every", o.logEvery));
    o.dtype = cl.get("dtype", "f32");
    if (cl.has("curriculum")) parseCurriculum(cl.get("curriculum"), o);
    o.questionTypes = cl.get("types", "");
    o.visionPretrainSteps = cl.getInt("vision-steps", static_cast<int>(o.visionPretrainSteps));
    o.visionPretrainLr = cl.getDouble("vision-lr", o.visionPretrainLr);
    o.visionPretrainFraction = cl.getDouble("vision-fraction", o.visionPretrainFraction);
    o.visionLrScale = cl.getDouble("vision-lr-scale", o.visionLrScale);
    if (o.visionLrScale < 0) throw UsageError("--vision-lr-scale must be >= 0 (0 freezes the tower after stage 0)");
    o.groundingWeight = cl.getDouble("grounding", o.groundingWeight);
    if (o.groundingWeight < 0) throw UsageError("--grounding must be >= 0 (0 turns the grounding loss off)");
    if (cl.has("sizes")) {
        // vision hidden,layers,heads,mlp,text hidden,layers,heads,kv heads,mlp
        int v[9];
        if (std::sscanf(cl.get("sizes").c_str(), "%d,%d,%d,%d,%d,%d,%d,%d,%d", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) != 9)
            throw UsageError("option --sizes: expected 9 integers: vision hidden,layers,heads,mlp,text hidden,layers,heads,kv heads,mlp");
        o.sizes.visionHidden = v[0];
        o.sizes.visionLayers = v[1];
        o.sizes.visionHeads = v[2];
        o.sizes.visionMlp = v[3];
        o.sizes.textHidden = v[4];
        o.sizes.textLayers = v[5];
        o.sizes.textHeads = v[6];
        o.sizes.textKvHeads = v[7];
        o.sizes.textMlp = v[8];
    }
    const DemoTrainResult r = trainDemoModel(o);
    std::printf("steps %lld  images %lld  seconds %.0f  final_loss %.4f  validation %.3f\n", static_cast<long long>(r.steps),
                static_cast<long long>(r.images), r.seconds, r.finalLoss, r.validationAccuracy);
    return 0;
}

int commandEvalDemo(int argc, char** argv, const std::string& defaultModelDir) {
    CommandLine cl({"model", "n", "seed", "max-new-tokens", "threads", "show-failures"}, {"json"});
    cl.parse(argc, argv, 2);
    const std::string dir = cl.get("model", defaultModelDir);
    if (!cl.has("model") && !fs::exists(dir)) throw Error("no --model given and the bundled demo model (" + dir + ") is missing");
    DemoEvalOptions o;
    o.scenes = cl.getInt("n", 500);
    o.seed = cl.getU64("seed", 0);
    o.maxNewTokens = cl.getInt("max-new-tokens", o.maxNewTokens);
    if (o.scenes < 1) throw UsageError("option --n must be >= 1");
    if (o.seed >= (1ull << 30)) throw UsageError("option --seed must be < 2^30 (eval scene ids are 2^62 + seed*2^32 + i)");
    if (o.maxNewTokens < 1) throw UsageError("option --max-new-tokens must be >= 1");
    LoadOptions lo;
    lo.threads = cl.getInt("threads", 0);
    auto model = loadModel(dir, lo);
    const bool json = cl.has("json");
    int done = 0;
    const DemoEvalResult r = evaluateDemo(model, o, [&](const DemoEvalItem&) {
        if (!json && ++done % 100 == 0) std::fprintf(stderr, "  %d questions...\n", done);
    });
    if (json) {
        nlohmann::ordered_json out;
        out["model"] = model->config().name;
        out["scenes"] = o.scenes;
        out["seed"] = o.seed;
        out["questions"] = r.questions();
        nlohmann::ordered_json types;
        for (int t = 0; t < kNumQuestionTypes; ++t)
            types[questionTypeName(QuestionType(t))] = {{"correct", r.correct[t]}, {"total", r.total[t]}, {"accuracy", r.accuracy(QuestionType(t))}};
        out["types"] = types;
        out["overall"] = r.overall();
        out["seconds"] = r.seconds;
        std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
        return 0;
    }
    std::printf("eval-demo: %s, %d scenes (eval seed %llu), %d questions, %.0f s\n", model->config().name.c_str(), o.scenes,
                static_cast<unsigned long long>(o.seed), r.questions(), r.seconds);
    std::printf("  %-10s %8s %8s %9s\n", "type", "correct", "total", "accuracy");
    for (int t = 0; t < kNumQuestionTypes; ++t)
        std::printf("  %-10s %8d %8d %8.1f%%\n", questionTypeName(QuestionType(t)), r.correct[t], r.total[t],
                    100.0 * r.accuracy(QuestionType(t)));
    int correct = 0;
    for (int c : r.correct) correct += c;
    std::printf("  %-10s %8d %8d %8.1f%%\n", "overall", correct, r.questions(), 100.0 * r.overall());
    const int show = cl.getInt("show-failures", 10);
    for (int i = 0; i < show && i < static_cast<int>(r.failures.size()); ++i) {
        const DemoEvalItem& f = r.failures[static_cast<size_t>(i)];
        std::printf("  miss: scene %llu  \"%s\"  expected \"%s\"  got \"%s\"\n", static_cast<unsigned long long>(f.sceneId),
                    f.question.c_str(), f.expected.c_str(), f.answer.c_str());
    }
    return 0;
}

int commandDemoCorpus(int argc, char** argv) {
    CommandLine cl({"out", "scenes", "seed"}, {});
    cl.parse(argc, argv, 2);
    if (!cl.has("out")) throw UsageError("demo-corpus needs --out FILE");
    const auto lines = tokenizerCorpus(cl.getInt("scenes", 20000), cl.getU64("seed", 0));
    std::ofstream out(cl.get("out"), std::ios::binary | std::ios::trunc);
    if (!out) throw Error("demo-corpus: cannot write " + cl.get("out"));
    for (const std::string& l : lines) out << l << "\n";
    if (!out) throw Error("demo-corpus: write error on " + cl.get("out"));
    std::fprintf(stderr, "wrote %zu lines to %s\n", lines.size(), cl.get("out").c_str());
    return 0;
}

int commandDemoImages(int argc, char** argv) {
    CommandLine cl({"out", "pair-seed", "pair-index"}, {});
    cl.parse(argc, argv, 2);
    if (!cl.has("out")) throw UsageError("demo-images needs --out DIR");
    // Which steering scene becomes red_circle.png / blue_circle.png: steerSceneId(seed, index).
    const uint64_t pairSeed = cl.getU64("pair-seed", 0), pairIndex = cl.getU64("pair-index", 0);
    const fs::path dir(cl.get("out"));
    fs::create_directories(dir);
    nlohmann::ordered_json index = nlohmann::ordered_json::array();
    auto maskRows = [](const std::vector<float>& m) {
        std::vector<std::string> rows;
        for (int r = 0; r < kGridSize; ++r) {
            std::string row;
            for (int c = 0; c < kGridSize; ++c) row += m[size_t(r) * kGridSize + c] > 0 ? '#' : '.';
            rows.push_back(row);
        }
        return rows;
    };
    auto add = [&](const std::string& name, const Scene& scene, const ImageU8& image, const nlohmann::ordered_json& extra) {
        savePng((dir / name).string(), image);   // core's writer: atomic, one copy of stb
        nlohmann::ordered_json e = {{"file", name}, {"scene_id", scene.id}, {"description", describe(scene)}};
        for (const auto& [k, v] : extra.items()) e[k] = v;
        index.push_back(e);
    };
    // The steering pair: one scene, its circle red and blue; the circle's 24x24 grid mask.
    const ColorPair pair = makeColorPair(steerSceneId(pairSeed, pairIndex));
    const GridBox box = gridBox(pair.sceneFrom.shapes[size_t(pair.shapeIndex)]);
    const nlohmann::ordered_json circle = {{"circle_grid_box", {{"row0", box.row0}, {"row1", box.row1}, {"col0", box.col0}, {"col1", box.col1}}},
                                           {"circle_mask", maskRows(pair.mask)}};
    add("red_circle.png", pair.sceneFrom, pair.imageFrom, circle);
    add("blue_circle.png", pair.sceneTo, pair.imageTo, circle);
    // A few evaluation scenes (eval seed 0).
    for (int i = 0; i < 4; ++i) {
        const Scene s = generateScene(evalSceneId(0, static_cast<uint64_t>(i)));
        nlohmann::ordered_json qas = nlohmann::ordered_json::array();
        for (const QA& qa : evalQuestions(s)) qas.push_back({{"question", qa.question}, {"answer", qa.answer}});
        add("scene_" + std::to_string(i) + ".png", s, render(s), {{"questions", qas}});
    }
    std::ofstream(dir / "index.json") << index.dump(2) << "\n";
    std::fprintf(stderr, "wrote %zu images and index.json to %s\n", index.size(), dir.string().c_str());
    return 0;
}

} // namespace kvsteer
