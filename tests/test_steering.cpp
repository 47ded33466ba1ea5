// The steering engine on the reference checkpoints of every family (LLaVA: causal prompt, 24x24
// grid after the text; PaliGemma: prefix-LM prompt, 16x16 grid first, positions from 1;
// Qwen2-VL: a non-square 10x18 grid, M-RoPE positions): zero
// plans are bit-identical, edits stay exactly where the plan says, every operator equals its
// formula computed here independently, spotlight acts as a logit bias, vector files round-trip
// and refuse other models and families, side-by-side batching equals separate runs, and the
// heatmaps keep the grid's orientation. The same test class runs once per family.
#include "TestSupport.h"
#include "Error.h"
#include "io/TextFile.h"
#include "models/ModelRegistry.h"
#include "analysis/Heatmaps.h"
#include "models/Prompt.h"
#include "generate/Session.h"
#include "steer/SideBySide.h"
#include "steer/Mask.h"
#include "steer/Recipes.h"
#include "steer/SteeringPlan.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

namespace {

// Random per-head directions for every layer, seeded.
SteeringVectors randomVectors(const Model& m, KeySpace space, uint64_t seed) {
    at::manual_seed(seed);
    SteeringVectors v;
    v.keySpace = space;
    for (int l = 0; l < m.config().text.numLayers; ++l) {
        v.keys.push_back(at::randn({m.config().text.numKvHeads, m.config().text.headDim}));
        v.values.push_back(at::randn({m.config().text.numKvHeads, m.config().text.headDim}));
    }
    return v;
}

// Independent RoPE: rotate-half by angle pos / theta^(2i/d), in double precision. `pos` holds one
// position per axis; under M-RoPE frequency i reads the axis its section gives (t, h, w): in runs
// (Qwen2-VL), or interleaved t, h, w, t, ... while each axis has frequencies left (Qwen3-VL).
at::Tensor ropeByHand(const at::Tensor& x, const std::vector<int64_t>& pos, const std::vector<int>& sections, bool interleaved,
                      double theta) {
    const int64_t d = x.size(-1), half = d / 2;
    std::vector<size_t> axisOf;
    for (size_t a = 0; a < sections.size() && !interleaved; ++a) axisOf.insert(axisOf.end(), size_t(sections[a]), a);
    for (int64_t i = 0; i < half && interleaved; ++i)
        axisOf.push_back(i % 3 != 0 && i / 3 < sections[size_t(i % 3)] ? size_t(i % 3) : 0);
    at::Tensor out = x.to(at::kDouble).clone();
    auto in = x.to(at::kDouble);
    for (int64_t i = 0; i < half; ++i) {
        const int64_t p = pos[axisOf.empty() ? 0 : axisOf[size_t(i)]];
        const double angle = double(p) / std::pow(theta, double(2 * i) / double(d));
        at::Tensor a = in.select(-1, i), b = in.select(-1, i + half);
        out.select(-1, i).copy_(a * std::cos(angle) - b * std::sin(angle));
        out.select(-1, i + half).copy_(b * std::cos(angle) + a * std::sin(angle));
    }
    return out.to(at::kFloat);
}

} // namespace

class TestSteering : public QObject {
    Q_OBJECT

public:
    TestSteering(std::string modelDir, std::string otherFamilyDir, std::string image)
        : modelDir_(std::move(modelDir)), otherFamilyDir_(std::move(otherFamilyDir)), image_(std::move(image)) {}

private:
    std::string modelDir_, otherFamilyDir_, image_;
    std::shared_ptr<Model> model_;
    std::unique_ptr<Session> session_;
    QTemporaryDir tmp_;
    int gridH_ = 0, gridW_ = 0;   // the prompt's grid (24x24 LLaVA, 16x16 PaliGemma, 10x18 Qwen2-VL here)
    int head_ = 0;                // the KV head the plans edit (the last one)

    at::Tensor rectStrength(int r0, int c0, int r1, int c1, float value = 1.0f) const { return rectOn(gridH_, gridW_, r0, c0, r1, c1, value); }
    static at::Tensor rectOn(int h, int w, int r0, int c0, int r1, int c1, float value = 1.0f) {
        at::Tensor s = at::zeros({h, w});
        s.narrow(0, r0, r1 - r0 + 1).narrow(1, c0, c1 - c0 + 1).fill_(value);
        return s;
    }

    SteeringPlan basePlan(SteeringOperator op, KeySpace space = KeySpace::PostRope) {
        SteeringPlan p;
        p.op = op;
        p.strength = rectStrength(2, 3, 5, 9, 0.75f);
        p.layers = {1};
        p.headMask[1] = {head_};
        p.ck = {1.5};
        p.cv = {2.0};
        p.vectors = randomVectors(*model_, space, 11);
        return p;
    }

    // Checks that only layer 1, KV head head_, the plan's positions changed; returns the expected/actual
    // pairs for the edited block: [n, D] each for keys and values.
    void checkLocality(const KVCache& before, const KVCache& after, const SteeringPlan& plan, bool keysChange, bool valuesChange) {
        const VisualSpan& span = before.visualSpan;
        const at::Tensor touched = (plan.strength.reshape({-1}) != 0);
        for (int l = 0; l < before.numLayers(); ++l)
            for (bool keys : {true, false}) {
                at::Tensor a = keys ? before.keys(l) : before.values(l), b = keys ? after.keys(l) : after.values(l);
                QCOMPARE(a.sizes(), b.sizes());
                at::Tensor same = (a == b);
                if (l == 1 && (keys ? keysChange : valuesChange)) {
                    // Inside the edited block something changed; outside it everything is bitwise equal.
                    at::Tensor block = same.select(0, 0).select(0, head_).narrow(0, span.start, span.length);   // [N, D]
                    QVERIFY(!block.index_select(0, at::nonzero(touched).reshape({-1})).all().item<bool>());
                    at::Tensor mask = at::ones_like(same);
                    mask.select(0, 0).select(0, head_).narrow(0, span.start, span.length).index_fill_(0, at::nonzero(touched).reshape({-1}), 0);
                    QVERIFY((same | (mask == 0)).all().item<bool>());
                } else {
                    QVERIFY2(same.all().item<bool>(), ("layer " + std::to_string(l) + (keys ? " keys" : " values") + " changed").c_str());
                }
            }
    }

    // The edited rows of layer 1, head head_ (positions with nonzero strength), as [n, D].
    at::Tensor editedRows(const KVCache& c, bool keys, const SteeringPlan& plan) {
        const VisualSpan& span = c.visualSpan;
        at::Tensor idx = at::nonzero(plan.strength.reshape({-1})).reshape({-1});
        return (keys ? c.keys(1) : c.values(1)).select(0, 0).select(0, head_).narrow(0, span.start, span.length).index_select(0, idx);
    }
    at::Tensor factors(const SteeringPlan& plan, double c) {
        at::Tensor s = plan.strength.reshape({-1});
        return (s.index_select(0, at::nonzero(s).reshape({-1})) * c).unsqueeze(1);
    }

private slots:
    void initTestCase() {
        model_ = loadModel(modelDir_);
        qInfo("family: %s (%s)", model_->familyName().c_str(), modelDir_.c_str());
        session_ = std::make_unique<Session>(model_);
        const ImageU8 image = loadImage(referenceDir() + "/images/" + image_);
        session_->prefill(buildPrompt(*model_, "What is shown in this image?", false, &image), 16);
        gridH_ = session_->snapshot().visualSpan.gridHeight;
        gridW_ = session_->snapshot().visualSpan.gridWidth;
        QVERIFY(gridH_ >= 8 && gridW_ >= 10);   // room for the plans' rectangles
        head_ = model_->config().text.numKvHeads - 1;
        QVERIFY(tmp_.isValid());
    }

    // warmUpEdits (run after every load, for the GPU's sake) edits scratch tensors with every
    // operator: it must run for each family (GQA, M-RoPE positions) and leave the snapshot alone.
    void warmUpEditsTouchesNothing() {
        const at::Tensor keys = session_->snapshot().keys(1).clone(), values = session_->snapshot().values(1).clone();
        warmUpEdits(*model_);
        QVERIFY(at::equal(session_->snapshot().keys(1), keys));
        QVERIFY(at::equal(session_->snapshot().values(1), values));
    }

    void zeroPlanIsBitIdentical() {
        GenerationOptions gen;
        gen.maxNewTokens = 10;
        gen.stopAtEos = false;
        const Generation plain = session_->generate(gen);
        for (auto op : {SteeringOperator::Add, SteeringOperator::NormPreserving, SteeringOperator::Scale, SteeringOperator::Spotlight,
                        SteeringOperator::Ablate})
            for (auto mode : {PlanMode::EditOnly, PlanMode::Propagate}) {
                SteeringPlan zeroStrength = basePlan(op);
                zeroStrength.mode = mode;
                zeroStrength.strength = at::zeros({gridH_, gridW_});
                SteeringPlan zeroCoefficient = basePlan(op);
                zeroCoefficient.mode = mode;
                zeroCoefficient.ck = {0.0};
                zeroCoefficient.cv = {0.0};
                for (const SteeringPlan* p : {&zeroStrength, &zeroCoefficient}) {
                    const SteeredCache s = applyPlan(*session_, *p);
                    for (int l = 0; l < s.cache.numLayers(); ++l) {
                        QVERIFY(at::equal(s.cache.keys(l), session_->snapshot().keys(l)));
                        QVERIFY(at::equal(s.cache.values(l), session_->snapshot().values(l)));
                    }
                    GenerationOptions g = gen;
                    g.attentionBias = s.attentionBias;
                    QCOMPARE(session_->decode(s.cache, session_->lastPromptToken(), g).ids, plain.ids);
                }
            }
    }

    void addEqualsFormulaAndStaysLocal() {
        const SteeringPlan p = basePlan(SteeringOperator::Add);
        const SteeredCache s = applyPlan(*session_, p);
        checkLocality(session_->snapshot(), s.cache, p, true, true);
        at::Tensor k0 = editedRows(session_->snapshot(), true, p), v0 = editedRows(session_->snapshot(), false, p);
        QVERIFY(maxAbsDiff(editedRows(s.cache, true, p), k0 + factors(p, 1.5) * p.vectors.keys[1][head_]) <= 1e-6);
        QVERIFY(maxAbsDiff(editedRows(s.cache, false, p), v0 + factors(p, 2.0) * p.vectors.values[1][head_]) <= 1e-6);
    }

    void normPreservingKeepsNorms() {
        const SteeringPlan p = basePlan(SteeringOperator::NormPreserving);
        const SteeredCache s = applyPlan(*session_, p);
        checkLocality(session_->snapshot(), s.cache, p, true, true);
        at::Tensor v0 = editedRows(session_->snapshot(), false, p), v1 = editedRows(s.cache, false, p);
        at::Tensor y = v0 + factors(p, 2.0) * p.vectors.values[1][head_];
        QVERIFY(maxAbsDiff(v1, y / y.norm(2, {1}, true) * v0.norm(2, {1}, true)) <= 1e-5);
        QVERIFY(maxAbsDiff(v1.norm(2, {1}), v0.norm(2, {1})) <= 1e-4);
    }

    void preRopeRotatesTheDeltaByThePositionsAngle() {
        const SteeringPlan p = basePlan(SteeringOperator::PreRope, KeySpace::PreRope);
        const SteeredCache s = applyPlan(*session_, p);
        checkLocality(session_->snapshot(), s.cache, p, true, true);
        const VisualSpan& span = session_->snapshot().visualSpan;
        at::Tensor idx = at::nonzero(p.strength.reshape({-1})).reshape({-1});
        at::Tensor k0 = editedRows(session_->snapshot(), true, p), k1 = editedRows(s.cache, true, p);
        at::Tensor f = factors(p, 1.5);
        for (int64_t i = 0; i < idx.numel(); ++i) {
            const std::vector<int64_t> pos = toIds(session_->snapshot().positions(span.start + idx[i].item<int64_t>(), 1));
            const TextConfig& t = model_->config().text;
            at::Tensor expected = k0[i] + f[i] * ropeByHand(p.vectors.keys[1][head_], pos, t.mropeSection, t.mropeInterleaved, t.ropeTheta);
            QVERIFY(maxAbsDiff(k1[i], expected) <= 1e-5);
        }
        // Values have no RoPE: a plain add.
        QVERIFY(maxAbsDiff(editedRows(s.cache, false, p), editedRows(session_->snapshot(), false, p) + factors(p, 2.0) * p.vectors.values[1][head_]) <= 1e-6);
        // The operator refuses vectors in the other key space.
        SteeringPlan wrong = basePlan(SteeringOperator::PreRope, KeySpace::PostRope);
        QVERIFY_THROWS_EXCEPTION(Error, applyPlan(*session_, wrong));
    }

    void scaleAndAblate() {
        SteeringPlan p = basePlan(SteeringOperator::Scale);
        SteeredCache s = applyPlan(*session_, p);
        checkLocality(session_->snapshot(), s.cache, p, true, true);
        QVERIFY(maxAbsDiff(editedRows(s.cache, false, p), editedRows(session_->snapshot(), false, p) * (1 + factors(p, 2.0))) <= 1e-6);

        for (auto target : {AblateTarget::Mean, AblateTarget::Zero}) {
            p = basePlan(SteeringOperator::Ablate);
            p.ablateTarget = target;
            p.strength = rectStrength(2, 3, 5, 9, 1.0f);
            p.ck = {1.0};
            p.cv = {1.0};
            s = applyPlan(*session_, p);
            checkLocality(session_->snapshot(), s.cache, p, true, true);
            const VisualSpan& span = session_->snapshot().visualSpan;
            at::Tensor all = session_->snapshot().values(1).select(0, 0).select(0, head_).narrow(0, span.start, span.length);
            at::Tensor expected = target == AblateTarget::Mean ? all.mean(0).expand_as(editedRows(s.cache, false, p)) : at::zeros_like(editedRows(s.cache, false, p));
            QVERIFY(maxAbsDiff(editedRows(s.cache, false, p), expected) <= 1e-5);
        }
    }

    void spotlightActsAsALogitBias() {
        SteeringPlan p = basePlan(SteeringOperator::Spotlight);
        p.headMask.clear();   // all heads
        p.ck = {3.0};
        const SteeredCache s = applyPlan(*session_, p);
        for (int l = 0; l < s.cache.numLayers(); ++l) QVERIFY(at::equal(s.cache.values(l), session_->snapshot().values(l)));
        GenerationOptions gen;
        gen.maxNewTokens = 1;
        gen.captureAttention = true;
        std::vector<at::Tensor> plain, biased;
        session_->generate(gen, [&](const TokenEvent& ev) { plain = *ev.attention; });
        gen.attentionBias = s.attentionBias;
        session_->decode(s.cache, session_->lastPromptToken(), gen, [&](const TokenEvent& ev) { biased = *ev.attention; });
        // Layer 0 is untouched; layer 1 sees the same queries and keys, so p' = p e^b / sum(p e^b).
        QVERIFY(at::equal(plain[0], biased[0]));
        const VisualSpan& span = session_->snapshot().visualSpan;
        at::Tensor b = at::zeros({plain[1].size(-1)});
        b.narrow(0, span.start, span.length).copy_(p.strength.reshape({-1}) * 3.0);
        at::Tensor w = plain[1] * at::exp(b);
        QVERIFY(maxAbsDiff(biased[1], w / w.sum(-1, true)) <= 1e-6);
        // More attention on the lit patch, on average over heads.
        at::Tensor lit = at::nonzero(p.strength.reshape({-1}) > 0).reshape({-1}) + span.start;
        QVERIFY(biased[1].index_select(2, lit).sum().item<double>() > plain[1].index_select(2, lit).sum().item<double>());
    }

    void propagateRecomputesOnlyTheTextSuffix() {
        SteeringPlan p = basePlan(SteeringOperator::Add);
        p.layers = {0};
        p.headMask.clear();
        p.mode = PlanMode::Propagate;
        const SteeredCache s = applyPlan(*session_, p);
        const VisualSpan& span = session_->snapshot().visualSpan;
        const int64_t n = session_->snapshot().size();
        QCOMPARE(s.cache.size(), n);
        for (int l = 0; l < s.cache.numLayers(); ++l) {
            // Before the image: untouched. The text after it: recomputed. Its layer-0 K/V come from
            // the token embeddings alone; from layer 1 on they have attended to the edited layer 0.
            QVERIFY(at::equal(s.cache.keys(l).narrow(2, 0, span.start), session_->snapshot().keys(l).narrow(2, 0, span.start)));
            const double suffixChange = maxAbsDiff(s.cache.values(l).narrow(2, span.end(), n - span.end()),
                                                   session_->snapshot().values(l).narrow(2, span.end(), n - span.end()));
            QVERIFY2(l == 0 ? suffixChange <= 1e-4 : suffixChange > 1e-3, std::to_string(suffixChange).c_str());
        }
        // Layers above the edit keep their visual K/V: only the suffix is recomputed.
        QVERIFY(at::equal(s.cache.values(2).narrow(2, span.start, span.length), session_->snapshot().values(2).narrow(2, span.start, span.length)));
        // Recomputing with the unedited cache reproduces the snapshot's suffix (same ids, same
        // positions, the family's prompt attention).
        KVCache again = session_->snapshot().clone();
        session_->recomputePrompt(again, span.end());
        QCOMPARE(again.size(), n);
        for (int l = 0; l < again.numLayers(); ++l) QVERIFY(maxAbsDiff(again.values(l), session_->snapshot().values(l)) <= 1e-4);
    }

    // applyPlanTo on one row of a batch (how the atlas edits its cells) leaves in that row exactly
    // what applyPlan gives, propagate included, and the other rows pristine.
    void applyPlanToABatchRowEqualsApplyPlan() {
        SteeringPlan p = basePlan(SteeringOperator::Add);
        p.mode = PlanMode::Propagate;
        const SteeredCache alone = applyPlan(*session_, p);
        const KVCache& snapshot = session_->snapshot();
        KVCache batch = KVCache::stackRows({&snapshot, &snapshot, &snapshot});
        batch.reserve(batch.size() + 2);   // room for a prefix-LM recompute's extra token
        KVCache row = batch.rowView(1);
        applyPlanTo(*session_, p, row);
        QCOMPARE(batch.size(), snapshot.size());
        for (int l = 0; l < batch.numLayers(); ++l)
            for (int64_t r = 0; r < 3; ++r) {
                const KVCache& expected = r == 1 ? alone.cache : snapshot;
                QVERIFY(at::equal(batch.keys(l).narrow(0, r, 1), expected.keys(l)));
                QVERIFY(at::equal(batch.values(l).narrow(0, r, 1), expected.values(l)));
            }
    }

    // Heads named in any order are the same edit (each head gets its own direction).
    void headOrderDoesNotMatter() {
        SteeringPlan inOrder = basePlan(SteeringOperator::Add), reversed = inOrder;
        const int h = model_->config().text.numKvHeads;
        inOrder.headMask[1].clear();
        reversed.headMask[1].clear();
        for (int i = 0; i < h; ++i) {
            inOrder.headMask[1].push_back(i);
            reversed.headMask[1].push_back(h - 1 - i);
        }
        const SteeredCache a = applyPlan(*session_, inOrder), b = applyPlan(*session_, reversed);
        QVERIFY(!at::equal(a.cache.values(1), session_->snapshot().values(1)));
        for (int l = 0; l < a.cache.numLayers(); ++l) {
            QVERIFY(at::equal(a.cache.keys(l), b.cache.keys(l)));
            QVERIFY(at::equal(a.cache.values(l), b.cache.values(l)));
        }
    }

    void propagateUnderPrefixLmIsBidirectional() {
        // PaliGemma's prompt attends to itself both ways: propagate recomputes every text position
        // against the edited image together with the last prompt token, so even the first text
        // token (<bos>) sees the ones after it. Done by hand here: edit-only, then the text and
        // the last token bidirectionally through the edited cache, the last dropped again.
        if (model_->promptAttention() != PromptAttention::Bidirectional) QSKIP("causal prompt: covered above");
        SteeringPlan p = basePlan(SteeringOperator::Add);
        p.layers = {0};
        p.headMask.clear();
        p.mode = PlanMode::Propagate;
        const SteeredCache propagated = applyPlan(*session_, p);
        p.mode = PlanMode::EditOnly;
        KVCache byHand = applyPlan(*session_, p).cache;
        const VisualSpan span = byHand.visualSpan;
        const int64_t n = byHand.size();
        std::vector<int64_t> text(byHand.tokens().begin() + span.end(), byHand.tokens().end());
        text.push_back(session_->lastPromptToken());
        byHand.truncate(span.end());
        ForwardPass both;
        both.bidirectional = true;
        session_->feed(byHand, text, &both);
        byHand.truncate(n);
        KVCache causal = applyPlan(*session_, p).cache;
        causal.truncate(span.end());
        session_->feed(causal, std::vector<int64_t>(text.begin(), text.end() - 1));
        for (int l = 0; l < byHand.numLayers(); ++l) QVERIFY(maxAbsDiff(propagated.cache.keys(l), byHand.keys(l)) <= 1e-5);
        const double causalGap = maxAbsDiff(propagated.cache.keys(1).narrow(2, span.end(), 1), causal.keys(1).narrow(2, span.end(), 1));
        QVERIFY2(causalGap > 1e-3, std::to_string(causalGap).c_str());
    }

    void sideBySideEqualsSeparateRuns() {
        for (auto op : {SteeringOperator::Add, SteeringOperator::Spotlight}) {
            SteeringPlan p = basePlan(op);
            p.layers = {};
            p.headMask.clear();
            p.cv = {4.0};
            p.ck = {4.0};
            p.strength = rectStrength(0, 0, gridH_ - 1, gridW_ - 1);
            const SteeredCache s = applyPlan(*session_, p);
            GenerationOptions gen;
            gen.maxNewTokens = 12;
            gen.stopAtEos = false;
            const GenerationPair pair = decodeSideBySide(*session_, s, gen);
            GenerationOptions g = gen;
            g.attentionBias = s.attentionBias;
            const Generation alone = session_->decode(s.cache, session_->lastPromptToken(), g);
            QCOMPARE(pair.unsteered.ids, session_->generate(gen).ids);
            QCOMPARE(pair.steered.ids, alone.ids);
            QCOMPARE(pair.steered.text, alone.text);
            QVERIFY(pair.steered.ids != pair.unsteered.ids);   // the edit matters on this model
        }
    }

    void vectorFilesRoundTripAndRefuseOtherModels() {
        const ImageU8 a = loadImage(referenceDir() + "/images/" + image_);
        ImageU8 b = a;   // the same size (one grid for per-position vectors), colours inverted
        for (uint8_t& v : b.rgb) v = uint8_t(255 - v);
        const std::string path = tmp_.filePath("v.safetensors").toStdString();
        for (bool perPosition : {false, true}) {
            ExtractOptions o;
            o.perPosition = perPosition;
            o.keySpace = perPosition ? KeySpace::PreRope : KeySpace::PostRope;
            const SteeringVectors v = extractImagePair(model_, "What is shown?", a, b, o);
            SteeringFileInfo info;
            info.modelName = model_->config().name;
            info.configHash = model_->config().configHash;
            info.op = SteeringOperator::Add;
            info.ck = {0.5};
            info.cv = {1, 2, 3};
            info.layers = {0, 2};
            info.headMask = {{0}, {}, {1}};
            info.recipe = "image-pair";
            info.recipeInputsJson = R"({"prompt":"What is shown?"})";
            info.promptTemplate = "USER: <image>\n{question} ASSISTANT:";
            saveSteeringFile(path, v, info);
            SteeringFileInfo back;
            const SteeringVectors w = loadSteeringFile(path, *model_, &back);
            QVERIFY(w.keySpace == v.keySpace);
            QCOMPARE(w.perPosition(), perPosition);
            for (int l = 0; l < v.numLayers(); ++l) {
                QVERIFY(at::equal(w.keys[l], v.keys[l]));
                QVERIFY(at::equal(w.values[l], v.values[l]));
            }
            QCOMPARE(back.cv, info.cv);
            QCOMPARE(back.layers, info.layers);
            QCOMPARE(back.headMask, info.headMask);
            QCOMPARE(back.recipe, info.recipe);
            QVERIFY(back.op == info.op);
        }
        {   // An operator this version does not know is refused as the file is read, naming the field.
            std::string bytes = readTextFile(path);
            const std::string add = R"(\"operator\":\"add\")";
            const size_t at = bytes.find(add);
            QVERIFY(at != std::string::npos);
            bytes.replace(at, add.size(), R"(\"operator\":\"pux\")");   // the same length: the header's size holds
            const std::string unknown = tmp_.filePath("unknown-operator.safetensors").toStdString();
            writeTextAtomically(unknown, bytes);
            try {
                loadSteeringFile(unknown, *model_);
                QFAIL("a vector file naming an unknown operator was accepted");
            } catch (const Error& e) {
                const std::string what = e.what();
                QVERIFY2(what.find(unknown) != std::string::npos && what.find("'operator'") != std::string::npos &&
                             what.find("'pux' is not known") != std::string::npos,
                         e.what());
            }
        }
        // The same model under another directory layout (16-bit shards, trimmed config) is accepted...
        const std::string same = tmp_.filePath("same").toStdString();
        if (model_->config().modelType == "paligemma") writeConvertedPaliGemma(same, at::kBFloat16, 256 * 1024);
        else if (model_->config().modelType == "qwen2_vl") writeConvertedQwen2Vl(same, at::kBFloat16, 256 * 1024);
        else if (model_->config().modelType == "qwen2_5_vl") writeConvertedQwen25Vl(same, at::kBFloat16, 256 * 1024);
        else if (model_->config().modelType == "qwen3_vl") writeConvertedQwen3Vl(same, at::kBFloat16, 256 * 1024);
        else writeConvertedReferenceModel(same, at::kHalf, 3 * 1024 * 1024);
        loadSteeringFile(path, *loadModel(same));
        // ...a model of another family is refused, naming both...
        try {
            loadSteeringFile(path, *loadModel(otherFamilyDir_));
            QFAIL("a vector file for another family was accepted");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find(model_->config().name) != std::string::npos, e.what());
        }
        // ...and so is one of the same family whose config differs.
        const std::string other = tmp_.filePath("other").toStdString();
        copyModelMetadata(other, modelDir_);
        std::filesystem::copy_file(modelDir_ + "/model.safetensors", other + "/model.safetensors");
        nlohmann::json config = nlohmann::json::parse(std::ifstream(other + "/config.json"));
        nlohmann::json& text = config.contains("text_config") ? config["text_config"] : config;   // Qwen2-VL: top level
        const double eps = text.value("rms_norm_eps", 1e-6);   // Gemma's default when absent
        text["rms_norm_eps"] = eps == 1e-5 ? 1e-6 : 1e-5;
        std::ofstream(other + "/config.json", std::ios::trunc) << config.dump(2);
        try {
            loadSteeringFile(path, *loadModel(other));
            QFAIL("a vector file for another model was accepted");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("made for") != std::string::npos, e.what());
        }
    }

    void pcaAlignsWithTheMean() {
        const ImageU8 a = loadImage(referenceDir() + "/images/" + image_);
        ImageU8 b = a;
        for (uint8_t& v : b.rgb) v = uint8_t(255 - v);
        ExtractOptions mean, pca;
        pca.pca = true;
        const SteeringVectors m = extractImagePair(model_, "What is shown?", a, b, mean);
        const SteeringVectors p = extractImagePair(model_, "What is shown?", a, b, pca);
        for (int l = 0; l < m.numLayers(); ++l) QVERIFY(((m.values[l] * p.values[l]).sum(1) > 0).all().item<bool>());
    }

    void masksFromEveryForm() {
        QVERIFY(at::equal(loadMask("rect:2,3,5,9", gridH_, gridW_), rectStrength(2, 3, 5, 9)));
        QVERIFY_THROWS_EXCEPTION(Error, loadMask("rect:5,3,2,9", gridH_, gridW_));
        QVERIFY_THROWS_EXCEPTION(Error, loadMask("rect:0,0," + std::to_string(gridH_) + ",3", gridH_, gridW_));
        const std::string png = tmp_.filePath("m.png").toStdString();
        saveMaskPng(png, rectStrength(2, 3, 5, 9));
        QVERIFY(at::equal(loadMask(png, gridH_, gridW_), rectStrength(2, 3, 5, 9)));
        const std::string npy = tmp_.filePath("m.npy").toStdString();
        {
            std::ofstream out(npy, std::ios::binary);
            std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(gridH_) + ", " + std::to_string(gridW_) + "), }";
            while ((10 + header.size() + 1) % 64) header += ' ';
            header += '\n';
            out << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff) << char(header.size() >> 8) << header;
            at::Tensor m = rectStrength(1, 1, 2, 2, 0.5f);
            out.write(reinterpret_cast<const char*>(m.data_ptr<float>()), gridH_ * gridW_ * 4);
        }
        QVERIFY(at::equal(loadMask(npy, gridH_, gridW_), rectStrength(1, 1, 2, 2, 0.5f)));
    }

    void brightPatchLightsUpExactlyItsCells() {
        // A black image the processor keeps as it is (no resize, no crop), one cell = `cell` px,
        // with a white block over grid rows 3..6, columns 9..13: not symmetric, so a transposed or
        // mirrored grid would show. Qwen2-VL's is 8x16 cells of 28 px (not square).
        const bool dynamic = model_->patchGrid().cells() == 0;
        const int cell = model_->config().vision.patchSize;   // a visual token's cell (Qwen: 28 or 32 px)
        const int rows = dynamic ? 8 : model_->config().vision.gridSize(), cols = dynamic ? 16 : rows;
        ImageU8 img(cols * cell, rows * cell);
        for (int y = 3 * cell; y < 7 * cell; ++y)
            for (int x = 9 * cell; x < 14 * cell; ++x)
                for (int c = 0; c < 3; ++c) img.at(y, x, c) = 255;
        const std::string png = tmp_.filePath("bright.png").toStdString();
        savePng(png, img);
        Session s(model_);
        s.prefill(buildPrompt(*model_, "What is shown?", false, &img), 4);
        SteeringPlan p = basePlan(SteeringOperator::Add);
        p.layers = {};
        p.headMask.clear();
        p.strength = loadMask(png, rows, cols);   // the image itself is the painted mask
        const SteeredCache steered = applyPlan(s, p);
        const at::Tensor heat = deltaHeatmaps(s.snapshot(), steered.cache, false, -1);
        const std::vector<int64_t> maps{3, rows, cols};
        QCOMPARE(heat.sizes().vec(), maps);
        for (int l = 0; l < 3; ++l)
            QVERIFY(at::equal(heat[l] > 0, rectOn(rows, cols, 3, 9, 6, 13) > 0));
        // The other maps have the grid shape too, and attention sums to at most 1 over the image.
        QCOMPARE(normHeatmaps(s.snapshot(), true, 0).sizes().vec(), maps);
        QCOMPARE(cosineHeatmaps(steered.cache, p.vectors, false, -1).sizes().vec(), maps);
        GenerationOptions gen;
        gen.maxNewTokens = 1;
        gen.captureAttention = true;
        at::Tensor att;
        s.generate(gen, [&](const TokenEvent& ev) { att = attentionHeatmaps(*ev.attention, s.snapshot().visualSpan, model_->config().text.numKvHeads, -1); });
        QVERIFY(att.sum({1, 2}).le(1.0 + 1e-5).all().item<bool>());
        QVERIFY(att.min().item<float>() >= 0);
    }
};

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    TestSteering llava(referenceModelDir(), referencePaliGemmaDir(), "red_square_336x336.png");
    TestSteering paligemma(referencePaliGemmaDir(), referenceModelDir(), "red_square_336x336.png");
    // Qwen2-VL and Qwen2.5-VL (10x18 grids) refuse each other's vector files.
    TestSteering qwen2vl(referenceQwen2VlDir(), referenceQwen25VlDir(), "gradient_500x300.png");
    TestSteering qwen25vl(referenceQwen25VlDir(), referenceQwen2VlDir(), "gradient_500x300.png");
    // Qwen3-VL (8x14, DeepStack in the K/V of layers 1 and 2) refuses Qwen2.5-VL's and is refused by it.
    TestSteering qwen3vl(referenceQwen3VlDir(), referenceQwen25VlDir(), "gradient_500x300.png");
    int failed = 0;
    for (TestSteering* t : {&llava, &paligemma, &qwen2vl, &qwen25vl, &qwen3vl}) failed += QTest::qExec(t, argc, argv);
    return failed;
}
#include "test_steering.moc"
