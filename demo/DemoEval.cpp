#include "demo/DemoEval.h"

#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "generate/Session.h"

#include <algorithm>
#include <cctype>
#include <chrono>

namespace kvsteer::demo {

double DemoEvalResult::accuracy(QuestionType t) const {
    const int i = static_cast<int>(t);
    return total[i] ? double(correct[i]) / total[i] : 0.0;
}

int DemoEvalResult::questions() const {
    int n = 0;
    for (int t : total) n += t;
    return n;
}

double DemoEvalResult::overall() const {
    int c = 0;
    for (int v : correct) c += v;
    const int n = questions();
    return n ? double(c) / n : 0.0;
}

std::string normalizeAnswer(const std::string& text) {
    size_t b = 0, e = text.size();
    while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
    std::string out = text.substr(b, e - b);
    for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out;
}

std::vector<QA> evalQuestions(const Scene& scene) {
    Rng rng(mixSeed(scene.id, 17));
    return sampleQuestions(scene, rng);
}

DemoEvalResult evaluateDemo(const std::shared_ptr<const Model>& model, const DemoEvalOptions& options,
                            const std::function<void(const DemoEvalItem&)>& onItem) {
    const auto t0 = std::chrono::steady_clock::now();
    DemoEvalResult r;
    GenerationOptions gen;
    gen.maxNewTokens = options.maxNewTokens;
    gen.stopAtEos = true;   // greedy: sampling defaults to temperature 0
    for (int i = 0; i < options.scenes; ++i) {
        const Scene scene = generateScene(evalSceneId(options.seed, static_cast<uint64_t>(i)));
        const ImageU8 image = render(scene);
        for (const QA& qa : evalQuestions(scene)) {
            const Prompt prompt = buildPrompt(*model, qa.question, false, &image);
            Session session(model);
            session.prefill(prompt, gen.maxNewTokens);
            const Generation g = session.generate(gen);
            DemoEvalItem item;
            item.sceneId = scene.id;
            item.type = qa.type;
            item.question = qa.question;
            item.expected = qa.answer;
            item.answer = normalizeAnswer(g.text);
            item.correct = item.answer == normalizeAnswer(qa.answer);
            r.total[static_cast<int>(qa.type)] += 1;
            r.correct[static_cast<int>(qa.type)] += item.correct ? 1 : 0;
            if (!item.correct) r.failures.push_back(item);
            if (onItem) onItem(item);
        }
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

} // namespace kvsteer::demo
