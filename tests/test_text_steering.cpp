// Cache steering of a text-only prompt, on tiny-qwen2 (model_type qwen2) and tiny-llama3 (Llama-3:
// its 128k tokenizer and chat template), the whole test once per model: without an image the
// span is the prompt's token strip, 1 x N over the N tokens the snapshot holds. A zero plan is
// bit-identical; an edit touches exactly the painted tokens; add equals its formula; propagate
// recomputes the tokens after the last edited one (checked against a recompute by hand);
// `tokens:` masks parse and refuse what they cannot mean; the text-pair recipe's vectors at the
// last token change the greedy answer; vector files name the model's family, round-trip and are
// refused on another family; heatmaps are drawn over the tokens; the cache-reuse complaint holds
// (prefill L-1 + the last token = the whole prompt). Qwen only: a Qwen2.5-style chat template
// keeps its own default system message.
#include "TestSupport.h"
#include "Error.h"
#include "analysis/Heatmaps.h"
#include "generate/Session.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "steer/Mask.h"
#include "steer/PlanOptions.h"
#include "steer/Recipes.h"
#include "steer/SteeringPlan.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/zeros.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

namespace {

const char* kQuestion = "Tell me about the weather today";

std::vector<TextPair> samplePairs() {
    return {{"I love this, it is wonderful", "I hate this, it is terrible"},
            {"What a great day", "What an awful day"},
            {"The answer is yes", "The answer is no"}};
}

GenerationOptions greedy(int tokens) {
    GenerationOptions g;
    g.maxNewTokens = tokens;
    g.stopAtEos = false;
    return g;
}

bool sameTensor(const at::Tensor& a, const at::Tensor& b) { return at::equal(a, b); }

} // namespace

class TestTextSteering : public QObject {
    Q_OBJECT

    std::string modelName_;   // a directory of ../shared/reference
    std::shared_ptr<Model> model_;
    std::unique_ptr<Session> session_;
    SteeringVectors vectors_;   // the text-pair recipe's, post-RoPE
    int64_t n_ = 0;             // tokens the snapshot holds

    SteeringPlan planOver(const std::string& mask, double c) const {
        PlanOptions o;
        o.ck = {c};
        o.cv = {c};
        const VisualSpan& span = session_->snapshot().visualSpan;
        const at::Tensor strength = mask.empty() ? at::Tensor() : loadMask(mask, span.gridHeight, span.gridWidth);
        return makePlan(o, &vectors_, SteeringFileInfo(), strength, span, model_->config().text.numLayers);
    }

public:
    explicit TestTextSteering(std::string modelName) : modelName_(std::move(modelName)) {}

private slots:
    void initTestCase() {
        model_ = loadModel(referenceDir() + "/" + modelName_);
        QVERIFY(!model_->hasVision());
        session_ = std::make_unique<Session>(model_);
        session_->prefill(buildPrompt(*model_, kQuestion, false, nullptr), 32);
        n_ = session_->snapshot().size();
        vectors_ = extractTextPairs(model_, samplePairs(), ExtractOptions());
    }

    void spanIsTheTokenStrip() {
        const VisualSpan& span = session_->snapshot().visualSpan;
        QVERIFY(span.isTokenStrip());
        QCOMPARE(span.start, int64_t(0));
        QCOMPARE(span.length, n_);
        QCOMPARE(span.gridHeight, 1);
        QCOMPARE(int64_t(span.gridWidth), n_);
        QCOMPARE(n_, int64_t(session_->prompt().ids.size()) - 1);   // all but the last, which decoding feeds
    }

    void masksOverTokens() {
        const int w = int(n_);
        at::Tensor m = loadMask("tokens:2-4,7,last", 1, w);
        QCOMPARE(m.sizes().vec(), (std::vector<int64_t>{1, n_}));
        QCOMPARE(m.sum().item<double>(), 5.0);
        for (int i : {2, 3, 4, 7, w - 1}) QCOMPARE(m[0][i].item<float>(), 1.0f);
        QCOMPARE(m[0][5].item<float>(), 0.0f);
        QCOMPARE(loadMask("rect:0,1,0,1", 1, w)[0][1].item<float>(), 1.0f);   // rect: works on the strip
        for (const std::string& bad : std::vector<std::string>{"tokens:", "tokens:a", "tokens:5-2", "tokens:" + std::to_string(w), "tokens:1,,2"}) {
            try {
                loadMask(bad, 1, w);
                QFAIL(("accepted " + bad).c_str());
            } catch (const Error& e) {
                QVERIFY2(std::string(e.what()).find(bad) != std::string::npos, e.what());   // names the mask
            }
        }
        try {   // tokens: on an image's grid
            loadMask("tokens:1", 16, 16);
            QFAIL("tokens: accepted on an image grid");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("rect:") != std::string::npos, e.what());
        }
    }

    void defaultPlanIsTheLastToken() {
        const SteeringPlan p = planOver("", 1.0);
        QCOMPARE(p.strength.sum().item<double>(), 1.0);
        QCOMPARE(p.strength[0][n_ - 1].item<float>(), 1.0f);
    }

    void zeroPlanIsBitIdentical() {
        const SteeredCache zero = applyPlan(*session_, planOver("tokens:0-" + std::to_string(n_ - 1), 0.0));
        for (int l = 0; l < model_->config().text.numLayers; ++l) {
            QVERIFY(sameTensor(zero.cache.keys(l), session_->snapshot().keys(l)));
            QVERIFY(sameTensor(zero.cache.values(l), session_->snapshot().values(l)));
        }
        const Generation plain = session_->generate(greedy(16));
        const Generation steered = session_->decode(zero.cache, session_->lastPromptToken(), greedy(16));
        QCOMPARE(steered.ids, plain.ids);
    }

    void editTouchesOnlyPaintedTokensAndEqualsTheFormula() {
        const double c = 3.0;
        const SteeredCache s = applyPlan(*session_, planOver("tokens:2-3,last", c));
        const std::vector<int64_t> painted{2, 3, n_ - 1};
        for (int l = 0; l < model_->config().text.numLayers; ++l)
            for (bool keys : {true, false}) {
                const at::Tensor base = (keys ? session_->snapshot().keys(l) : session_->snapshot().values(l)).select(0, 0);   // [H, S, D]
                const at::Tensor out = (keys ? s.cache.keys(l) : s.cache.values(l)).select(0, 0);
                const at::Tensor dir = keys ? vectors_.keys[l] : vectors_.values[l];   // [H, D]
                for (int64_t p = 0; p < n_; ++p) {
                    const bool isPainted = std::find(painted.begin(), painted.end(), p) != painted.end();
                    const at::Tensor before = base.select(1, p), after = out.select(1, p);
                    if (!isPainted) {
                        QVERIFY2(sameTensor(before, after), ("untouched token " + std::to_string(p) + " changed").c_str());
                        continue;
                    }
                    QVERIFY(relativeDiff(after, before + c * dir) < 1e-6);
                }
            }
    }

    void propagateRecomputesTheTokensAfterTheEdit() {
        SteeringPlan plan = planOver("tokens:3", 4.0);
        const SteeredCache editOnly = applyPlan(*session_, plan);
        plan.mode = PlanMode::Propagate;
        const SteeredCache propagated = applyPlan(*session_, plan);
        // By hand: the edit-only cache cut after token 3, the rest of the prompt fed against it.
        KVCache byHand = editOnly.cache.clone();
        const std::vector<int64_t> ids = session_->snapshot().tokens();
        byHand.truncate(4);
        session_->feed(byHand, std::vector<int64_t>(ids.begin(), ids.end()));
        for (int l = 0; l < model_->config().text.numLayers; ++l) {
            const at::Tensor p = propagated.cache.values(l), e = editOnly.cache.values(l);
            QVERIFY(sameTensor(p.narrow(2, 0, 4), e.narrow(2, 0, 4)));                           // up to the edit: as edited
            QVERIFY(relativeDiff(p, byHand.values(l)) < 1e-6);                                    // after it: recomputed
            QVERIFY(relativeDiff(propagated.cache.keys(l), byHand.keys(l)) < 1e-6);
        }
        QVERIFY(!sameTensor(propagated.cache.values(1).narrow(2, 4, n_ - 4), editOnly.cache.values(1).narrow(2, 4, n_ - 4)));
        QCOMPARE(propagated.cache.size(), n_);
    }

    void textPairRecipeChangesTheAnswer() {
        const Generation plain = session_->generate(greedy(12));
        const SteeredCache s = applyPlan(*session_, planOver("tokens:last", 8.0));
        const Generation steered = session_->decode(s.cache, session_->lastPromptToken(), greedy(12));
        QVERIFY2(steered.ids != plain.ids, "the text-pair vectors at the last token left the answer unchanged");
        QCOMPARE(steered.ids.size(), plain.ids.size());
    }

    void vectorFilesRoundTripAndRefuseAnotherFamily() {
        QTemporaryDir tmp;
        const std::string path = tmp.filePath("pairs.safetensors").toStdString();
        saveSteeringFile(path, vectors_, newVectorsFileInfo(*model_, "text-pairs", "{}", KeySpace::PostRope));
        SteeringFileInfo info;
        const SteeringVectors back = loadSteeringFile(path, *model_, &info);
        QCOMPARE(info.modelType, model_->config().modelType);
        QCOMPARE(info.family, model_->familyName());
        QCOMPARE(info.grid.cells(), int64_t(0));
        for (int l = 0; l < model_->config().text.numLayers; ++l) QVERIFY(sameTensor(back.values[l], vectors_.values[l]));
        const auto llava = loadModel(referenceModelDir());
        try {
            loadSteeringFile(path, *llava);
            QFAIL("a text model's vector file loaded on a llava model");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find(model_->familyName()) != std::string::npos, e.what());   // names the file's family
        }
    }

    void heatmapsAreOverTokens() {
        const SteeredCache s = applyPlan(*session_, planOver("tokens:5", 2.0));
        const at::Tensor norms = normHeatmaps(session_->snapshot(), false, -1);
        QCOMPARE(norms.sizes().vec(), (std::vector<int64_t>{model_->config().text.numLayers, 1, n_}));
        const at::Tensor delta = deltaHeatmaps(session_->snapshot(), s.cache, false, -1);
        const at::Tensor changed = (delta > 0).to(at::kLong).sum(0).reshape({-1});   // layers that moved, per token
        for (int64_t p = 0; p < n_; ++p) QCOMPARE(changed[p].item<int64_t>() > 0, p == 5);
    }

    void qwen25TemplatesKeepTheirSystemMessage() {
        if (modelName_ != "tiny-qwen2") QSKIP("Qwen's chat template only");
        // A Qwen2.5-style template (a tools branch whose system turn is built from code, then the
        // literal default) gives its own message; a broken template file is named.
        QTemporaryDir tmp;
        const std::filesystem::path dir = tmp.path().toStdString();
        for (const auto& f : std::filesystem::directory_iterator(referenceDir() + "/tiny-qwen2"))
            std::filesystem::copy_file(f.path(), dir / f.path().filename());
        nlohmann::json cfg = nlohmann::json::parse(std::ifstream(dir / "tokenizer_config.json"));
        cfg["chat_template"] =
            "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}"
            "{%- else %}{{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}{%- endif %}"
            "{%- else %}{%- if messages[0]['role'] != 'system' %}"
            "{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
            "{%- endif %}{%- endif %}";
        std::ofstream(dir / "tokenizer_config.json") << cfg.dump();
        const auto model = loadModel(dir.string());
        QCOMPARE(model->applyTemplate("Hi", false),
                 std::string("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
                             "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"));
        QVERIFY(model_->applyTemplate("Hi", false).rfind("<|im_start|>system\nYou are a helpful assistant.<|im_end|>", 0) == 0);
        std::ofstream(dir / "chat_template.json") << "{\"chat_template\": ";
        try {
            loadModel(dir.string());
            QFAIL("a broken chat_template.json loaded");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("chat_template.json") != std::string::npos, e.what());
        }
    }

    void theSeedComplaint() {
        // Prefill L-1 then feed the last token = the full prompt in one pass; greedy with the
        // cache = greedy recomputing the whole sequence every step.
        const std::vector<int64_t> ids = session_->prompt().ids;
        KVCache full(model_->config().text.numLayers, 1, model_->config().text.numKvHeads, model_->config().text.headDim, 64,
                     at::TensorOptions().dtype(at::kFloat));
        const at::Tensor fullLogits = session_->feed(full, ids);
        KVCache resumed = session_->snapshot().clone();
        const at::Tensor resumedLogits = session_->feed(resumed, {session_->lastPromptToken()});
        QVERIFY(relativeDiff(resumedLogits, fullLogits) < 1e-5);
        const Generation cached = session_->generate(greedy(10));
        std::vector<int64_t> seq = ids;
        for (int step = 0; step < 10; ++step) {
            KVCache fresh(model_->config().text.numLayers, 1, model_->config().text.numKvHeads, model_->config().text.headDim, 64,
                          at::TensorOptions().dtype(at::kFloat));
            seq.push_back(session_->feed(fresh, seq).argmax().item<int64_t>());
        }
        QCOMPARE(cached.ids, std::vector<int64_t>(seq.begin() + int64_t(ids.size()), seq.end()));
    }
};

// The whole test on each text family in turn.
int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    int failed = 0;
    for (const char* model : {"tiny-qwen2", "tiny-llama3"}) {
        TestTextSteering test(model);
        failed += QTest::qExec(&test, argc, argv);
    }
    return failed;
}
#include "test_text_steering.moc"
