#pragma once
// Evaluation of a model on ShapeWorld through the real inference path: Model + buildPrompt
// (the standard LLaVA-1.5 template) + Session greedy decoding, stopping at EOS.
#include "demo/ShapeWorld.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kvsteer {
class Model;
}

namespace kvsteer::demo {

struct DemoEvalOptions {
    int scenes = 500;
    uint64_t seed = 0;            // scenes evalSceneId(seed, 0 .. scenes-1): never used in training
    // The longest answer, "a red circle, a yellow circle and a green triangle", is 11 tokens + EOS
    // with the demo tokenizer; a cut-off answer counts as wrong, so leave room.
    int maxNewTokens = 16;
};

struct DemoEvalItem {
    uint64_t sceneId = 0;
    QuestionType type = QuestionType::Color;
    std::string question, expected, answer;
    bool correct = false;
};

struct DemoEvalResult {
    int correct[kNumQuestionTypes] = {};
    int total[kNumQuestionTypes] = {};
    double seconds = 0;
    std::vector<DemoEvalItem> failures;

    double accuracy(QuestionType t) const;   // 0..1 (0 when no question of the type was asked)
    double overall() const;
    int questions() const;
};

// Lower case, surrounding whitespace removed: the form answers are compared in.
std::string normalizeAnswer(const std::string& text);

// For every scene, one question of each applicable type (targets drawn from the scene id), each
// answered by greedy decoding; exact match of the normalised answer. `onItem` sees every answer.
DemoEvalResult evaluateDemo(const std::shared_ptr<const Model>& model, const DemoEvalOptions& options,
                            const std::function<void(const DemoEvalItem&)>& onItem = {});

// The questions eval-demo asks about a scene (one per applicable type).
std::vector<QA> evalQuestions(const Scene& scene);

} // namespace kvsteer::demo
