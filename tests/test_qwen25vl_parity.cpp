// Parity with Hugging Face transformers' own Qwen2.5-VL on tiny-qwen25vl (transformers 5's nested
// config): ids, pixel values, M-RoPE positions and rope deltas, the window-attention tower's
// image features, the prefill's hidden states, K/V and logits, cache reuse and 20 greedy ids on
// every case — also from a copy in the hub's flat config dialect, sharded; a bfloat16 copy equals
// its float32 twin (the reference weights are not bfloat16 numbers, so it cannot equal the
// reference itself). And the window regrouping on its own, against tables made by hand.
#include "TestSupport.h"
#include "cache/KVCache.h"
#include "generate/Session.h"
#include "io/SafeTensors.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "models/qwen2vl/Qwen2VlModel.h"
#include "models/qwen2vl/VisionWindows.h"
#include "steer/Recipes.h"
#include "steer/SideBySide.h"
#include "steer/SteeringPlan.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/ones.h>
#include <nlohmann/json.hpp>

#include <map>
#include <numeric>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

class TestQwen25VlParity : public QObject {
    Q_OBJECT

    ReferenceCases ref_{"expected-qwen25vl"};
    std::map<std::string, std::shared_ptr<Model>> models_;
    QTemporaryDir tmp_;

    static void addRows() { addCaseRows({"red_square", "gradient", "text_only"}, {"nested", "flat-sharded"}); }

private slots:
    void initTestCase() {
        QVERIFY2(ref_.load(), "reference summary.json not found: is ../shared beside the checkout?");
        QVERIFY(tmp_.isValid());
        const std::string flat = tmp_.filePath("flat").toStdString(), bf16 = tmp_.filePath("bf16").toStdString(),
                          twin = tmp_.filePath("twin").toStdString();
        writeConvertedQwen25Vl(flat, at::kFloat, 256 * 1024);
        writeConvertedQwen25Vl(bf16, at::kBFloat16, 256 * 1024);
        writeConvertedQwen25Vl(twin, at::kFloat, 256 * 1024, at::kBFloat16);
        models_["nested"] = loadModel(referenceQwen25VlDir());
        models_["flat-sharded"] = loadModel(flat);
        models_["bf16"] = loadModel(bf16);
        models_["twin"] = loadModel(twin);
    }

    void bothDialectsReadTheSameConfig() {
        const Model& nested = *models_["nested"];
        QCOMPARE(nested.familyName(), std::string("Qwen2.5-VL"));
        QCOMPARE(nested.config().modelType, std::string("qwen2_5_vl"));
        for (const char* v : {"flat-sharded", "bf16"}) QCOMPARE(models_[v]->config().configHash, nested.config().configHash);
        QCOMPARE(models_["bf16"]->weightsDtype(), std::string("bfloat16"));
        const TextConfig& t = models_["flat-sharded"]->config().text;
        QCOMPARE(t.ropeTheta, 1e6);
        QCOMPARE(t.rmsNormEps, 1e-6);
        QCOMPARE(t.mropeSection, (std::vector<int>{2, 3, 3}));
        QVERIFY(t.qkvBiasOnly && t.tieWordEmbeddings);
        const Qwen2VisionConfig& v = dynamic_cast<const Qwen2VlModel&>(*models_["flat-sharded"]).visionTower().config();
        QVERIFY(v.rmsNormSwiGlu);
        QCOMPARE(v.embedDim, 32);
        QCOMPARE(v.mlpHidden(), 64);
        QCOMPARE(v.hiddenSize, 64);
        QCOMPARE(v.windowSide(), 4);
        QCOMPARE(v.fullAttentionBlocks, (std::vector<int>{1, 3}));
        QVERIFY(v.windowed(0) && !v.windowed(1) && v.windowed(2) && !v.windowed(3));
        // A Qwen2-VL model is another model: its vector files do not fit this one.
        QVERIFY(loadModel(referenceQwen2VlDir())->config().configHash != nested.config().configHash);
    }

    void windowRegrouping() {
        // 12 x 12 cells in 4-cell windows: 3 x 3 whole windows; the first lists rows 0-3 of
        // columns 0-3, the second columns 4-7 of the same rows.
        const VisionWindows square = visionWindows(1, 12, 12, 4);
        QCOMPARE(square.cellsPerWindow, std::vector<int64_t>(9, 16));
        QCOMPARE(std::vector<int64_t>(square.cellOrder.begin(), square.cellOrder.begin() + 20),
                 (std::vector<int64_t>{0, 1, 2, 3, 12, 13, 14, 15, 24, 25, 26, 27, 36, 37, 38, 39, 4, 5, 6, 7}));
        QCOMPARE(square.cellOrder.back(), int64_t(143));
        // 10 x 18: 3 x 5 windows; the last column 2 cells wide, the last row 2 cells deep.
        const VisionWindows gradient = visionWindows(1, 10, 18, 4);
        QCOMPARE(gradient.cellsPerWindow, (std::vector<int64_t>{16, 16, 16, 16, 8, 16, 16, 16, 16, 8, 8, 8, 8, 8, 4}));
        const int64_t beforeFifth = 4 * 16;   // the top-right window: columns 16-17 of rows 0-3
        QCOMPARE(std::vector<int64_t>(gradient.cellOrder.begin() + beforeFifth, gradient.cellOrder.begin() + beforeFifth + 8),
                 (std::vector<int64_t>{16, 17, 34, 35, 52, 53, 70, 71}));
        const int64_t beforeLast = 180 - 4;   // the bottom-right window: rows 8-9, columns 16-17
        QCOMPARE(std::vector<int64_t>(gradient.cellOrder.begin() + beforeLast, gradient.cellOrder.end()),
                 (std::vector<int64_t>{160, 161, 178, 179}));
        // Every cell exactly once; frames follow each other.
        std::vector<int64_t> sorted = gradient.cellOrder;
        std::sort(sorted.begin(), sorted.end());
        std::vector<int64_t> all(180);
        std::iota(all.begin(), all.end(), 0);
        QCOMPARE(sorted, all);
        const VisionWindows twoFrames = visionWindows(2, 10, 18, 4);
        QCOMPARE(twoFrames.cellsPerWindow.size(), size_t(30));
        QCOMPARE(twoFrames.cellOrder[180], int64_t(180));
        // One window as large as the grid is no regrouping at all.
        const VisionWindows whole = visionWindows(1, 10, 18, 18);
        QCOMPARE(whole.cellsPerWindow, (std::vector<int64_t>{180}));
        QCOMPARE(whole.cellOrder, all);
    }

    void idsPixelsAndPositions_data() { addRows(); }
    void idsPixelsAndPositions() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = ref_.caseInfo(caseName.toStdString());
        const auto& model = dynamic_cast<const Qwen2VlModel&>(*models_[variant.toStdString()]);
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        const Prompt p = casePrompt(model, c);
        QCOMPARE(p.text, c["prompt"].get<std::string>());
        QCOMPARE(p.ids, toIds(expected.tensor("input_ids")));
        QCOMPARE(p.positionOffset, toIds(expected.tensor("rope_deltas"))[0]);
        if (!p.hasImage) return;
        QCOMPARE(toIds(p.positionIds), toIds(expected.tensor("position_ids")));
        const std::vector<int64_t> merged = c["merged_grid_hw"].get<std::vector<int64_t>>();
        QCOMPARE(int64_t(p.span.gridHeight), merged[0]);
        QCOMPARE(int64_t(p.span.gridWidth), merged[1]);
        const at::Tensor chw = p.pixels.select(0, 0).contiguous();
        const std::vector<float> values(chw.data_ptr<float>(), chw.data_ptr<float>() + chw.numel());
        const at::Tensor patches = flattenPatches(values, int(chw.size(1)), int(chw.size(2)), model.imageConfig());
        QVERIFY2(maxAbsDiff(patches, expected.tensor("pixel_values")) <= 1e-5, "pixel_values");
    }

    void prefillAndCache_data() { addRows(); }
    void prefillAndCache() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = ref_.caseInfo(caseName.toStdString());
        const auto& model = *models_[variant.toStdString()];
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        const std::string failure = prefillAgainstReference(model, casePrompt(model, c), expected).failure();
        QVERIFY2(failure.empty(), failure.c_str());
    }

    void cacheReuseAndGreedy_data() { addRows(); }
    void cacheReuseAndGreedy() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = ref_.caseInfo(caseName.toStdString());
        auto model = models_[variant.toStdString()];
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        Session session(model);
        session.prefill(casePrompt(*model, c), 20);
        KVCache cache = session.snapshot().clone();
        const at::Tensor reuse = session.feed(cache, {session.lastPromptToken()});
        QVERIFY2(maxAbsDiff(reuse, expected.tensor("cache_reuse.last_logits").squeeze(0)) <= 1e-3, "cache_reuse.last_logits");
        QVERIFY2(maxAbsDiff(reuse, expected.tensor("prefill_last_logits").squeeze(0)) <= 1e-3, "= full prefill");
        GenerationOptions gen;
        gen.maxNewTokens = 20;
        gen.stopAtEos = false;   // generate() in the reference ran its 20 tokens
        const std::vector<int64_t> ids = session.generate(gen).ids;
        QCOMPARE(ids, toIds(expected.tensor("greedy_ids")));
        QCOMPARE(ids, c["greedy_ids"].get<std::vector<int64_t>>());
    }

    // LoadOptions::maxPixels (--max-pixels) lowers the processor's budget: a larger image is
    // scaled down to fit, and the memory check assumes the smaller budget.
    void maxPixelsCapsTheImage() {
        LoadOptions o;
        o.maxPixels = 60000;
        const auto model = loadModel(referenceQwen25VlDir(), o);
        QVERIFY(model->config().imageSeqLength() < models_["nested"]->config().imageSeqLength());
        const ImageU8 image = loadImage(referenceDir() + "/images/gradient_500x300.png");   // 150,000 px
        const Prompt p = buildPrompt(*model, "What is it?", false, &image);
        QVERIFY(int64_t(p.span.gridHeight) * 28 * p.span.gridWidth * 28 <= 60000);
        QVERIFY(p.span.length < 180);
        o.maxPixels = 1000;
        const std::string below = errorOf([&] { loadModel(referenceQwen25VlDir(), o); });
        QVERIFY2(below.find("below the processor's min_pixels 3136") != std::string::npos, below.c_str());
    }

    // Steering on the gradient's 10x18 grid: a vector from two 500x300 images (the gradient and its
    // colours inverted), painted over the whole grid, changes the answer; strength 0 changes nothing.
    void imagePairVectorSteersTheGradient() {
        auto model = models_["nested"];
        const ImageU8 a = loadImage(referenceDir() + "/images/gradient_500x300.png");
        ImageU8 b = a;
        for (uint8_t& v : b.rgb) v = uint8_t(255 - v);
        const SteeringVectors v = extractImagePair(model, "What colors do you see?", b, a, ExtractOptions{});
        Session session(model);
        session.prefill(buildPrompt(*model, "What colors do you see?", false, &a), 16);
        const VisualSpan& span = session.snapshot().visualSpan;
        QCOMPARE(span.gridHeight, 10);
        QCOMPARE(span.gridWidth, 18);
        SteeringPlan plan;
        plan.vectors = v;
        plan.strength = at::ones({10, 18});
        plan.ck = {0.0};
        GenerationOptions gen;
        gen.maxNewTokens = 12;
        gen.stopAtEos = false;
        plan.cv = {0.0};
        const GenerationPair zero = decodeSideBySide(session, applyPlan(session, plan), gen);
        QCOMPARE(zero.steered.ids, zero.unsteered.ids);
        plan.cv = {8.0};
        const GenerationPair steered = decodeSideBySide(session, applyPlan(session, plan), gen);
        QVERIFY(steered.steered.ids != steered.unsteered.ids);
    }

    void bfloat16CopyEqualsItsFloat32Twin() {
        // The same weights stored as bfloat16 and as float32: kvsteer widens bfloat16 exactly, so
        // the two compute the same numbers up to summation order.
        const auto c = ref_.caseInfo("gradient");
        Session bf16(models_["bf16"]), twin(models_["twin"]);
        bf16.prefill(casePrompt(*models_["bf16"], c), 20);
        twin.prefill(casePrompt(*models_["twin"], c), 20);
        QVERIFY(relativeDiff(bf16.imageFeatures(), twin.imageFeatures()) <= 1e-5);
        for (int l = 0; l < 3; ++l) {
            QVERIFY(relativeDiff(bf16.snapshot().keys(l), twin.snapshot().keys(l)) <= 1e-5);
            QVERIFY(relativeDiff(bf16.snapshot().values(l), twin.snapshot().values(l)) <= 1e-5);
        }
        GenerationOptions gen;
        gen.maxNewTokens = 20;
        gen.stopAtEos = false;
        QCOMPARE(bf16.generate(gen).ids, twin.generate(gen).ids);
    }
};

QTEST_GUILESS_MAIN(TestQwen25VlParity)
#include "test_qwen25vl_parity.moc"
