// The one decode loop (core/generate/BatchDecode): a row's answer does not depend on the batch it
// is decoded in. The same steered row decoded alone, as the pair's steered row, and as one row of
// a batch of eight (other plans, spotlight biases, shorter budgets, so rows leave the batch while
// it runs) gives the same ids and the same logits, bit for bit, at every step; a steered run's
// edit straight into its pair's batch equals the edit of a clone; an image's questions continued
// from its prefix as one padded batch get the caches they get alone (to float32 rounding). Also:
// per-row budgets and sampling, finished rows reported in order, and the cancel check. On the
// demo model (LLaVA layout) and tiny-qwen2vl (M-RoPE, a non-square grid).
#include "TestSupport.h"
#include "Error.h"
#include "generate/BatchDecode.h"
#include "generate/Session.h"
#include "io/Image.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "steer/Mask.h"
#include "steer/PlanOptions.h"
#include "steer/SideBySide.h"
#include "steer/SteeredRun.h"
#include "steer/SteeringPlan.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>


#include <QtTest>

using namespace kvsteer;

namespace {

// What one row gave: its ids and, per step, a copy of its logits.
struct RowTrace {
    std::vector<int64_t> ids;
    std::vector<at::Tensor> logits;
};

// Decodes `caches` as one batch (row i = caches[i] with rows[i]) and records every row's trace.
std::vector<RowTrace> traceBatch(const Session& session, const std::vector<const KVCache*>& caches, const std::vector<DecodeRow>& rows) {
    std::vector<RowTrace> traces(rows.size());
    BatchCallbacks callbacks;
    callbacks.onStep = [&](const BatchStep& step) {
        for (size_t r = 0; r < rows.size(); ++r)
            if (step.tokens[r].id >= 0) traces[r].logits.push_back(step.tokens[r].logits->clone());
    };
    const BatchResult result = decodeBatch(session, KVCache::stackRows(caches), rows, callbacks);
    for (size_t r = 0; r < rows.size(); ++r) traces[r].ids = result.rows[r].ids;
    return traces;
}

// The demo scene's prompt, prefilled.
void prefillDemoScene(Session& session) {
    const ImageU8 image = loadImage(KVSTEER_DEMO_IMAGE);
    session.prefill(buildPrompt(session.model(), "What color is the circle?", false, &image), 16);
}

void compareTraces(const RowTrace& a, const RowTrace& b, const char* where) {
    QVERIFY2(a.ids == b.ids, where);
    QCOMPARE(a.logits.size(), b.logits.size());
    for (size_t i = 0; i < a.logits.size(); ++i) QVERIFY2(at::equal(a.logits[i], b.logits[i]), (std::string(where) + ", step " + std::to_string(i)).c_str());
}

} // namespace

class TestBatchDecode : public QObject {
    Q_OBJECT

    // The steered row alone, in the pair, and at position 5 of a batch of 8: same ids and logits.
    void rowIsTheSameInAnyBatch(std::shared_ptr<Model> model, const ImageU8& image, const std::string& question) {
        Session session(model);
        const Prompt prompt = buildPrompt(*model, question, false, &image);
        session.prefill(prompt, 16);
        const VisualSpan span = session.snapshot().visualSpan;
        const int layers = model->config().text.numLayers;
        PlanOptions o;
        o.op = SteeringOperator::Scale;   // needs no vectors: every family can run it
        o.ck = {0.0};
        o.cv = {3.0};
        const SteeringPlan plan = makePlan(o, nullptr, SteeringFileInfo(), at::ones({span.gridHeight, span.gridWidth}), span, layers);
        const SteeredCache steered = applyPlan(session, plan);

        DecodeRow row;
        row.seedToken = session.lastPromptToken();
        row.maxNewTokens = 10;
        row.stopAtEos = false;   // every step is compared
        const RowTrace alone = traceBatch(session, {&steered.cache}, {row})[0];
        QCOMPARE(int(alone.ids.size()), row.maxNewTokens);
        const RowTrace inPair = traceBatch(session, {&session.snapshot(), &steered.cache}, {row, row})[1];
        compareTraces(alone, inPair, "alone vs the pair's steered row");

        // A steered run edits row 1 of its pair's batch in place: the K/V applyPlan's clone holds,
        // row 0 still the snapshot, and the same steered answer.
        GenerationOptions gen;
        gen.maxNewTokens = row.maxNewTokens;
        gen.stopAtEos = false;
        bool cancelled = false;
        SteeredRunStart start = prepareSteeredRun(session, prompt, plan, gen, {}, &cancelled);
        QVERIFY(!cancelled && !start.prefilled);   // the session already held the prompt
        const KVCache unsteeredRow = start.pair.rowView(0);
        for (int l = 0; l < layers; ++l) {
            QVERIFY(at::equal(start.steered.cache.keys(l), steered.cache.keys(l)));
            QVERIFY(at::equal(start.steered.cache.values(l), steered.cache.values(l)));
            QVERIFY(at::equal(unsteeredRow.keys(l), session.snapshot().keys(l)));
        }
        QCOMPARE(runSteered(session, prompt, plan, gen).pair.steered.ids, alone.ids);

        // Eight rows: others with other edits, spotlight biases and shorter budgets, so the batch
        // drops rows while the compared one (row 5) still runs.
        std::vector<SteeredCache> others;
        std::vector<const KVCache*> caches;
        std::vector<DecodeRow> rows;
        for (int r = 0; r < 8; ++r) {
            DecodeRow other = row;
            if (r == 5) {
                caches.push_back(&steered.cache);
                rows.push_back(row);
                continue;
            }
            PlanOptions po = o;
            po.op = r % 2 ? SteeringOperator::Spotlight : SteeringOperator::Scale;
            po.ck = {r % 2 ? 2.0 * r : 0.0};
            po.cv = {0.5 * r - 1};
            others.push_back(applyPlan(session, makePlan(po, nullptr, SteeringFileInfo(), at::ones({span.gridHeight, span.gridWidth}), span, layers)));
            other.attentionBias = others.back().attentionBias;
            other.maxNewTokens = 1 + r;   // rows end at steps 1, 2, ... while row 5 runs to 10
            other.stopAtEos = r % 3 == 0;
            rows.push_back(other);
        }
        for (int r = 0, k = 0; r < 8; ++r)
            if (r != 5) caches.insert(caches.begin() + r, &others[size_t(k++)].cache);
        const std::vector<RowTrace> eight = traceBatch(session, caches, rows);
        compareTraces(alone, eight[5], "alone vs row 5 of 8");
        for (int r = 0; r < 8; ++r) QVERIFY(int(eight[size_t(r)].ids.size()) <= rows[size_t(r)].maxNewTokens);
        // A spotlight row of the eight equals that row alone too (its bias travels with it).
        const RowTrace spotlightAlone = traceBatch(session, {caches[3]}, {rows[3]})[0];
        compareTraces(spotlightAlone, eight[3], "spotlight row alone vs row 3 of 8");
    }

    // An image's questions of different lengths continued from its prefix as one padded batch
    // (Session::prefillFromShared, what eval does) give each question the snapshot prefillFrom
    // gives it alone: the same ids and positions, and K/V equal up to float32 summation order
    // (the batch's rows go through one larger matmul; the padding itself is never seen).
    void questionsContinueAsOneBatch(std::shared_ptr<Model> model, const ImageU8& image) {
        const PromptImage prepared = prepareImage(*model, image);
        std::vector<Prompt> prompts;
        for (const char* q : {"Is there a red circle?", "Describe the image.", "What is the colour of the largest shape in it?", "Hi"})
            prompts.push_back(buildImagePrompt(*model, q, false, prepared));
        QVERIFY(prompts[0].ids.size() != prompts[2].ids.size());
        Session maker(model);
        const KVCache prefix = maker.prefillPrefix(prompts[0], prompts[0].span.end());
        std::vector<std::unique_ptr<Session>> batched;
        std::vector<Session*> sessions;
        std::vector<const Prompt*> ptrs;
        for (const Prompt& p : prompts) {
            batched.push_back(std::make_unique<Session>(model));
            sessions.push_back(batched.back().get());
            ptrs.push_back(&p);
        }
        Session::prefillFromShared(prefix, sessions, ptrs, 8);
        for (size_t i = 0; i < prompts.size(); ++i) {
            Session alone(model);
            alone.prefillFrom(prefix, prompts[i], 8);
            const KVCache& a = alone.snapshot();
            const KVCache& b = batched[i]->snapshot();
            QCOMPARE(b.size(), a.size());
            QCOMPARE(b.tokens(), a.tokens());
            QCOMPARE(b.positionOffset, a.positionOffset);
            QVERIFY(b.promptPositions.defined() == a.promptPositions.defined());
            if (a.promptPositions.defined()) QVERIFY(at::equal(b.promptPositions, a.promptPositions));
            for (int l = 0; l < a.numLayers(); ++l) {
                const double dk = test::relativeDiff(b.keys(l), a.keys(l)), dv = test::relativeDiff(b.values(l), a.values(l));
                QVERIFY2(dk <= 1e-5 && dv <= 1e-5, ("question " + std::to_string(i) + ": " + std::to_string(dk) + ", " + std::to_string(dv)).c_str());
            }
            QVERIFY(batched[i]->holds(prompts[i]));
        }
    }

    // The decode step a CUDA graph captures (TransformerDecoder's GraphStep: K/V written at an
    // index held in a tensor, attention over the whole capacity with a mask) run here on CPU
    // against the ordinary step, over ten greedy steps of a pair with one spotlight row: the same
    // ids, the logits and the written K/V equal to float32 rounding, the count advanced by one.
    void graphStepEqualsTheOrdinaryStep(std::shared_ptr<Model> model, const ImageU8& image) {
        Session session(model);
        session.prefill(buildPrompt(*model, "Describe the image.", false, &image), 16);
        const TextConfig& t = model->config().text;
        const VisualSpan span = session.snapshot().visualSpan;
        at::Tensor bias = at::zeros({1, t.numHeads, span.end()});
        bias.narrow(2, span.start, span.length).fill_(2.0);
        ForwardPass pass;
        pass.attentionBias.assign(size_t(t.numLayers), at::cat({at::zeros_like(bias), bias}));
        KVCache ordinary = KVCache::stackRows({&session.snapshot(), &session.snapshot()}, session.snapshot().size() + 12);
        KVCache graph = KVCache::stackRows({&session.snapshot(), &session.snapshot()}, session.snapshot().size() + 12);
        const at::Tensor keyIndex = at::arange(graph.capacity(), at::kLong);
        std::vector<int64_t> next = {session.lastPromptToken(), session.lastPromptToken()};
        for (int step = 0; step < 10; ++step) {
            const at::Tensor ids = at::tensor(next, at::kLong).view({2, 1});
            const at::Tensor a = session.forwardIds(ordinary, ids, &pass);
            const int64_t index = graph.size();
            const auto [cos, sin] = model->decoder().ropeTables(graph.positions(index, 1));
            GraphStep g{at::full({1}, index, at::kLong), cos, sin, {}};
            g.mask = graphStepMask(keyIndex, g.cacheIndex, at::kFloat);
            ForwardPass gp;
            gp.attentionBias = pass.attentionBias;
            gp.graphStep = &g;
            const at::Tensor b = session.forwardIds(graph, ids, &gp);
            QCOMPARE(graph.size(), index);   // the caller advances it
            graph.advance(1);
            QCOMPARE(graph.size(), ordinary.size());
            QVERIFY2(test::maxAbsDiff(a, b) <= 1e-4, ("step " + std::to_string(step) + ": logits differ by " + std::to_string(test::maxAbsDiff(a, b))).c_str());
            for (int l = 0; l < t.numLayers; ++l) {
                QVERIFY(test::maxAbsDiff(graph.keys(l), ordinary.keys(l)) <= 1e-5);
                QVERIFY(test::maxAbsDiff(graph.values(l), ordinary.values(l)) <= 1e-5);
            }
            next = {a[0].argmax().item<int64_t>(), a[1].argmax().item<int64_t>()};
            QCOMPARE(b[0].argmax().item<int64_t>(), next[0]);
            QCOMPARE(b[1].argmax().item<int64_t>(), next[1]);
        }
    }

private slots:
    void graphStepOnTheDemoModel() { graphStepEqualsTheOrdinaryStep(loadModel(KVSTEER_DEMO_MODEL_DIR), loadImage(KVSTEER_DEMO_IMAGE)); }

    void graphStepUnderMRope() {
        graphStepEqualsTheOrdinaryStep(loadModel(test::referenceQwen2VlDir()), loadImage(test::referenceDir() + "/images/gradient_500x300.png"));
    }

    void questionsContinueAsOneBatchOnTheDemoModel() {
        questionsContinueAsOneBatch(loadModel(KVSTEER_DEMO_MODEL_DIR), loadImage(KVSTEER_DEMO_IMAGE));
    }

    void questionsContinueAsOneBatchUnderMRope() {
        questionsContinueAsOneBatch(loadModel(test::referenceQwen2VlDir()), loadImage(test::referenceDir() + "/images/gradient_500x300.png"));
    }

    void demoModel() {
        rowIsTheSameInAnyBatch(loadModel(KVSTEER_DEMO_MODEL_DIR), loadImage(KVSTEER_DEMO_IMAGE), "What color is the circle?");
    }

    void qwen2VlNonSquareGrid() {
        rowIsTheSameInAnyBatch(loadModel(test::referenceQwen2VlDir()), loadImage(test::referenceDir() + "/images/gradient_500x300.png"),
                               "Describe the image.");
    }

    // Rows are reported as they end, in row order within a step; a sampled row keeps its own
    // random stream (the same seed alone or batched gives the same ids).
    void rowsEndOnTheirOwnBudgetsAndSamplers() {
        Session session(loadModel(KVSTEER_DEMO_MODEL_DIR));
        prefillDemoScene(session);
        DecodeRow greedy;
        greedy.seedToken = session.lastPromptToken();
        greedy.maxNewTokens = 6;
        greedy.stopAtEos = false;
        DecodeRow sampled = greedy;
        sampled.sampling.temperature = 1.5;
        sampled.sampling.seed = 7;
        DecodeRow shortRow = greedy;
        shortRow.maxNewTokens = 2;
        std::vector<int64_t> order;
        BatchCallbacks callbacks;
        callbacks.onRowDone = [&](int64_t r, const Generation&) { order.push_back(r); };
        const BatchResult r =
            decodeBatch(session, KVCache::stackRows({&session.snapshot(), &session.snapshot(), &session.snapshot()}), {greedy, sampled, shortRow}, callbacks);
        QCOMPARE(order, std::vector<int64_t>({2, 0, 1}));
        QCOMPARE(r.rows[2].ids.size(), size_t(2));
        QCOMPARE(r.rows[0].ids.size(), size_t(6));
        GenerationOptions g;
        g.maxNewTokens = 6;
        g.stopAtEos = false;
        g.sampling = sampled.sampling;
        QCOMPARE(r.rows[1].ids, session.generate(g).ids);
        QCOMPARE(std::vector<int64_t>(r.rows[0].ids.begin(), r.rows[0].ids.begin() + 2), r.rows[2].ids);
    }

    void cancelStopsBetweenSteps() {
        Session session(loadModel(KVSTEER_DEMO_MODEL_DIR));
        prefillDemoScene(session);
        DecodeRow row;
        row.seedToken = session.lastPromptToken();
        row.maxNewTokens = 8;
        row.stopAtEos = false;
        std::atomic<bool> cancel{false};
        int reported = 0;
        BatchCallbacks callbacks;
        callbacks.onStep = [&](const BatchStep& s) {
            if (s.step == 2) cancel = true;
        };
        callbacks.onRowDone = [&](int64_t, const Generation&) { ++reported; };
        const BatchResult r = decodeBatch(session, KVCache::stackRows({&session.snapshot(), &session.snapshot()}), {row, row}, callbacks, &cancel);
        QVERIFY(r.cancelled);
        QCOMPARE(reported, 0);   // no row ended: none is reported
        for (const Generation& g : r.rows) {
            QVERIFY(g.cancelled);
            QCOMPARE(g.ids.size(), size_t(3));
        }
        QVERIFY_THROWS_EXCEPTION(kvsteer::Error, decodeBatch(session, session.snapshot().clone(), {row, row}));   // 1 row, 2 described
    }
};

QTEST_GUILESS_MAIN(TestBatchDecode)
#include "test_batch_decode.moc"
