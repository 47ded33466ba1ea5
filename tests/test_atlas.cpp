// The steering atlas (core/steer/Atlas): batched cells equal separate applyPlan + decode runs bit
// for bit (add, spotlight with per-row bias, propagate, any batch size), the outcome classes on the
// bundled demo model (red circle, shipped red->blue vectors: c_v 16 on all layers is a different
// answer, "blue"; c_v >= 32 degenerate), the classification rules one by one, layer thirds, log
// spacing, and a cancel between cells.
#include "TestSupport.h"
#include "io/Image.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "Error.h"
#include "steer/Atlas.h"
#include "steer/Mask.h"
#include "steer/PlanOptions.h"
#include "steer/SteeringVectors.h"

#include <QtTest>

using namespace kvsteer;

namespace {

Generation gen(std::vector<int64_t> ids, std::string text, bool eos) {
    Generation g;
    g.ids = std::move(ids);
    g.text = std::move(text);
    g.stoppedAtEos = eos;
    return g;
}

} // namespace

class TestAtlas : public QObject {
    Q_OBJECT
    std::shared_ptr<Model> model_;
    std::unique_ptr<Session> session_;
    SteeringPlan base_;

    const AtlasCell* find(const AtlasResult& r, const std::string& layers, double cv) {
        for (const AtlasCell& c : r.cells)
            if (c.setting.layers.label == layers && c.setting.cv == cv) return &c;
        return nullptr;
    }

private slots:
    void initTestCase() {
        model_ = loadModel(KVSTEER_DEMO_MODEL_DIR);
        const ImageU8 image = loadImage(KVSTEER_DEMO_IMAGE);
        session_ = std::make_unique<Session>(model_);
        session_->prefill(buildPrompt(*model_, "What color is the circle?", false, &image), 64);
        SteeringFileInfo info;
        const SteeringVectors vectors = loadSteeringFile(KVSTEER_DEMO_VECTORS, *model_, &info);
        const VisualSpan& span = session_->snapshot().visualSpan;
        base_ = makePlan(PlanOptions(), &vectors, info, loadMask("rect:6,9,15,18", span.gridHeight, span.gridWidth), span,
                         model_->config().text.numLayers);
        QCOMPARE(base_.ck.front(), 0.0);   // the file's suggestion: values only
        QCOMPARE(base_.cv.front(), 16.0);
    }

    void layerThirdsAndLogSpacing() {
        QCOMPARE(parseLayerRange("early", 4).layers, std::vector<int>({0}));
        QCOMPARE(parseLayerRange("middle", 4).layers, std::vector<int>({1, 2}));
        QCOMPARE(parseLayerRange("late", 4).layers, std::vector<int>({3}));
        QCOMPARE(parseLayerRange("late", 32).layers.front(), 21);
        QCOMPARE(parseLayerRange("2-3", 4).layers, std::vector<int>({2, 3}));
        QVERIFY(parseLayerRange("all", 4).layers.empty());
        QVERIFY_THROWS_EXCEPTION(kvsteer::Error, parseLayerRange("4", 4));
        QVERIFY_THROWS_EXCEPTION(kvsteer::Error, parseLayerRange("3-1", 4));
        QVERIFY_THROWS_EXCEPTION(kvsteer::Error, parseLayerRange("first", 4));
        QCOMPARE(defaultLayerRanges(4).size(), size_t(4));
        QCOMPARE(logSpaced(4, 64, 5), std::vector<double>({4, 8, 16, 32, 64}));
        QCOMPARE(logSpaced(1, 100, 3), std::vector<double>({1, 10, 100}));
        QCOMPARE(logSpaced(1, 2, 3)[1], 1.41);
        // c_k 0 in the base plan: a strength is c_v only; spotlight sweeps c_k.
        const auto grid = atlasGrid(base_, {parseLayerRange("all", 4)}, {8, 16});
        QCOMPARE(grid.size(), size_t(2));
        QCOMPARE(grid[1].cv, 16.0);
        QCOMPARE(grid[1].ck, 0.0);
        SteeringPlan spot = base_;
        spot.op = SteeringOperator::Spotlight;
        QCOMPARE(atlasGrid(spot, {parseLayerRange("all", 4)}, {8})[0].ck, 8.0);
    }

    void outcomeRules() {
        const Generation red = gen({10, 2}, "red", true);
        QCOMPARE(classifyCell(red, red), AtlasOutcome::Same);
        QCOMPARE(classifyCell(gen({11, 2}, "blue", true), red), AtlasOutcome::Different);
        QCOMPARE(classifyCell(gen({11, 11, 12, 2}, "blue blue no", true), red), AtlasOutcome::Degenerate);   // stutter
        QCOMPARE(classifyCell(gen({11, 12, 13, 14}, "blue is a", false), red), AtlasOutcome::Degenerate);    // no EOS in budget
        QCOMPARE(classifyCell(gen({2}, "", true), red), AtlasOutcome::Degenerate);                           // empty
        QCOMPARE(classifyCell(gen({11, 12, 11, 12, 11, 12, 2}, "blue, square. blue, square. blue, square", true), red), AtlasOutcome::Degenerate);   // repetition 0.57
        // A signal the unsteered answer shows itself does not count against the cell.
        const Generation longer = gen({20, 21, 22, 23}, "a red circle on", false);
        QCOMPARE(classifyCell(gen({20, 21, 24, 23}, "a blue circle on", false), longer), AtlasOutcome::Different);
        const DegenerationSignals s = degenerationSignals(gen({11, 11, 11, 12, 2}, "Blue blue, blue no", true));
        QVERIFY(s.stutter);
        QVERIFY(!s.noEos);
        QCOMPARE(s.distinct, size_t(3));
        QCOMPARE(s.repetition, 0.4);
    }

    void batchedCellsEqualSeparateRuns_data() {
        QTest::addColumn<int>("op");
        QTest::addColumn<bool>("propagate");
        QTest::addColumn<int>("batch");
        QTest::newRow("add, batch 8") << int(SteeringOperator::Add) << false << 8;
        QTest::newRow("add, batch 5") << int(SteeringOperator::Add) << false << 5;
        QTest::newRow("add propagate, batch 3") << int(SteeringOperator::Add) << true << 3;
        QTest::newRow("spotlight, batch 8") << int(SteeringOperator::Spotlight) << false << 8;
    }
    void batchedCellsEqualSeparateRuns() {
        QFETCH(int, op);
        QFETCH(bool, propagate);
        QFETCH(int, batch);
        SteeringPlan base = base_;
        base.op = SteeringOperator(op);
        base.mode = propagate ? PlanMode::Propagate : PlanMode::EditOnly;
        // Layer ranges of different sizes in one batch: spotlight rows then carry different biases.
        const auto settings = atlasGrid(base, {parseLayerRange("all", 4), parseLayerRange("early", 4), parseLayerRange("2-3", 4)},
                                        base.op == SteeringOperator::Spotlight ? std::vector<double>{2, 8, 32} : std::vector<double>{8, 16, 32, 64});
        AtlasOptions o;
        o.maxNewTokens = 8;
        o.batchRows = batch;
        int reported = 0;
        const AtlasResult r = runAtlas(*session_, base, settings, o, [&](const AtlasCell&) { ++reported; });
        QCOMPARE(r.cells.size(), settings.size());
        QCOMPARE(reported, int(settings.size()));
        QVERIFY(!r.cancelled);
        GenerationOptions g;
        g.maxNewTokens = o.maxNewTokens;
        QCOMPARE(r.unsteered.ids, session_->generate(g).ids);
        int changed = 0;
        for (size_t i = 0; i < settings.size(); ++i) {
            const AtlasCell& cell = r.cells[i];
            QCOMPARE(cell.index, int(i));
            const SteeredCache alone = applyPlan(*session_, planForSetting(base, settings[i]));
            GenerationOptions gi = g;
            gi.attentionBias = alone.attentionBias;
            const Generation separate = session_->decode(alone.cache, session_->lastPromptToken(), gi);
            QCOMPARE(cell.generation.ids, separate.ids);   // bit-equal greedy ids
            QCOMPARE(cell.generation.text, separate.text);
            QCOMPARE(cell.generation.stoppedAtEos, separate.stoppedAtEos);
            changed += cell.outcome != AtlasOutcome::Same;
        }
        QVERIFY(changed > 0);   // the grid reaches settings that matter
    }

    void demoOutcomes() {
        const auto settings = atlasGrid(base_, {parseLayerRange("all", 4), parseLayerRange("middle", 4), parseLayerRange("2-3", 4)},
                                        {8, 16, 32, 64});
        AtlasOptions o;
        o.maxNewTokens = 8;
        const AtlasResult r = runAtlas(*session_, base_, settings, o);
        QCOMPARE(r.unsteered.text, std::string("red"));
        QCOMPARE(r.cells.size(), size_t(12));
        const AtlasCell* flip = find(r, "all", 16);
        QVERIFY(flip);
        QCOMPARE(flip->generation.text, std::string("blue"));
        QCOMPARE(flip->outcome, AtlasOutcome::Different);
        QCOMPARE(find(r, "all", 8)->outcome, AtlasOutcome::Same);   // this image needs more than 8
        for (const AtlasCell& c : r.cells) {
            if (c.setting.cv >= 32) QVERIFY2(c.outcome == AtlasOutcome::Degenerate, (c.setting.layers.label + ": " + c.generation.text).c_str());
            if (c.setting.cv == 16) QCOMPARE(c.generation.text, std::string("blue"));
        }
        QCOMPARE(find(r, "all", 32)->generation.text, std::string("blue blue blue no"));
        QVERIFY(find(r, "all", 32)->degeneration.stutter);
    }

    // A text-only prompt (tiny-qwen2): the atlas sweeps the token strip the same way, batched =
    // separate, with scale (no vectors needed) on a few tokens and the last one.
    void textOnlyStripBatchedEqualsSeparate() {
        auto model = loadModel(test::referenceDir() + "/tiny-qwen2");
        QVERIFY(!model->hasVision());
        Session session(model);
        session.prefill(buildPrompt(*model, "What is the capital of France?", false, nullptr), 32);
        const VisualSpan& span = session.snapshot().visualSpan;
        QVERIFY(span.isTokenStrip());
        PlanOptions o;
        o.op = SteeringOperator::Scale;
        o.ck = {0.0};
        const int layers = model->config().text.numLayers;
        const SteeringPlan base =
            makePlan(o, nullptr, SteeringFileInfo(), loadMask("tokens:2-4,last", span.gridHeight, span.gridWidth), span, layers);
        const auto settings = atlasGrid(base, defaultLayerRanges(layers), {-0.9, 0.5, 4, 16});
        AtlasOptions ao;
        ao.maxNewTokens = 6;
        ao.batchRows = 5;
        const AtlasResult r = runAtlas(session, base, settings, ao);
        QCOMPARE(r.cells.size(), settings.size());
        GenerationOptions g;
        g.maxNewTokens = ao.maxNewTokens;
        QCOMPARE(r.unsteered.ids, session.generate(g).ids);
        int changed = 0;
        for (size_t i = 0; i < settings.size(); ++i) {
            const SteeredCache alone = applyPlan(session, planForSetting(base, settings[i]));
            QCOMPARE(r.cells[i].generation.ids, session.decode(alone.cache, session.lastPromptToken(), g).ids);
            changed += r.cells[i].outcome != AtlasOutcome::Same;
        }
        QVERIFY(changed > 0);
    }

    void cancelStopsBetweenCells() {
        const auto settings = atlasGrid(base_, {parseLayerRange("all", 4), parseLayerRange("middle", 4)}, {8, 16, 32, 64});
        AtlasOptions o;
        o.batchRows = 2;
        std::atomic<bool> cancel{false};
        int seen = 0;
        const AtlasResult r = runAtlas(*session_, base_, settings, o, [&](const AtlasCell&) {
            if (++seen == 1) cancel = true;   // the first batch's one cell (beside the unsteered row)
        }, &cancel);
        QVERIFY(r.cancelled);
        QCOMPARE(int(r.cells.size()), 1);   // no later batch started
        QCOMPARE(seen, 1);
    }
};

QTEST_GUILESS_MAIN(TestAtlas)
#include "test_atlas.moc"
