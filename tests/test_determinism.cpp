// Determinism on CPU (docs/internals.md "Determinism"): the same bits whatever the batch, the
// thread count, the kernel or the resume point.
//   - kernels: the panel kernel (many rows) gives each row the skinny kernel's bits (one row), on
//     every ISA, every weight dtype, shapes with k-blocks and tails, at 1, 2, 3, 5, 8 and 16
//     threads (oversubscribed here); a dot product padded with zero products has the same bits;
//   - a prompt's prefill (tiny-llava, its CLIP tower included): K/V and the first logits
//     bit-identical at 1, 2, 3, 5, 8 and 16 threads;
//   - a question's suffix continued from a shared prefix: its K/V the same bits alone, batched
//     with questions of other lengths, and prefilled whole as steer does;
//   - a decode row: the same logits at every step alone or in a batch whose other rows are
//     steered or finish early;
//   - eval: batched --propagate answers each row's own question (the regression: every row
//     answered the batch's first), and every operator, with and without propagate, gives steer's
//     answers at every batch size, with and without prefix reuse; a run cut at any item and
//     resumed, and shards, give one run's answers.
#include "TestSupport.h"
#include "Runtime.h"
#include "cache/KVCache.h"
#include "eval/EvalDataset.h"
#include "eval/EvalReport.h"
#include "eval/EvalRun.h"
#include "generate/BatchDecode.h"
#include "io/Image.h"
#include "kernels/Kernels.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "nn/Linear.h"
#include "steer/Recipes.h"
#include "steer/Mask.h"
#include "steer/SteeredRun.h"
#include "steer/SteeringVectors.h"

#include <ATen/ops/equal.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/zeros.h>

#include <filesystem>
#include <fstream>

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

namespace {

const std::vector<int> kThreadCounts = {1, 2, 3, 5, 8, 16};

bool sameBits(const at::Tensor& a, const at::Tensor& b) {
    return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && at::equal(a, b);
}

// Every layer's K and V of the held tokens, bit for bit.
bool sameCache(const KVCache& a, const KVCache& b) {
    if (a.size() != b.size() || a.numLayers() != b.numLayers()) return false;
    for (int l = 0; l < a.numLayers(); ++l)
        if (!sameBits(a.keys(l).contiguous(), b.keys(l).contiguous()) || !sameBits(a.values(l).contiguous(), b.values(l).contiguous()))
            return false;
    return true;
}

std::vector<kernels::Isa> isasHere() {
    std::vector<kernels::Isa> out;
    for (kernels::Isa isa : {kernels::Isa::Avx512, kernels::Isa::Avx2, kernels::Isa::Portable})
        if (int(isa) >= int(kernels::bestIsa())) out.push_back(isa);
    return out;
}

// The first step's logits of the session's greedy answer.
at::Tensor firstLogits(const Session& s) {
    GenerationOptions g;
    g.maxNewTokens = 1;
    at::Tensor out;
    s.generate(g, [&](const TokenEvent& ev) { out = ev.logits->clone(); });
    return out;
}

void writeText(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

} // namespace

class TestDeterminism : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::shared_ptr<Model> demo_;
    SteeringVectors vectors_, preRope_;   // the shipped file's (post-RoPE keys); pre-RoPE ones for prerope
    SteeringFileInfo vectorsInfo_;

    const SteeringVectors& vectorsFor(const PlanOptions& plan) const { return plan.op == SteeringOperator::PreRope ? preRope_ : vectors_; }
    SteeringFileInfo infoFor(const PlanOptions& plan) const { return plan.op == SteeringOperator::PreRope ? SteeringFileInfo() : vectorsInfo_; }

    std::string path(const std::string& name) const { return tmp_.filePath(QString::fromStdString(name)).toStdString(); }

    // runEval's results for `items`, keyed by id: each item's two answers.
    std::map<std::string, std::pair<std::vector<int64_t>, std::vector<int64_t>>> evaluate(const std::vector<const EvalItem*>& items,
                                                                                          const PlanOptions& plan, int batchRows,
                                                                                          bool prefixReuse) {
        EvalSteering steering;
        steering.plan = plan;
        steering.vectors = &vectorsFor(plan);
        steering.vectorsInfo = infoFor(plan);
        EvalOptions o;
        o.metric = EvalMetric::Exact;
        o.generation.maxNewTokens = 6;
        o.batchRows = batchRows;
        o.prefixReuse = prefixReuse;
        std::map<std::string, std::pair<std::vector<int64_t>, std::vector<int64_t>>> out;
        EvalCallbacks cb;
        cb.onItem = [&](const EvalItemResult& r) { out[r.item->id] = {r.unsteered.ids, r.steered.ids}; };
        runEval(demo_, items, steering, o, cb);
        return out;
    }

    // What `kvsteer steer` answers for the item (runSteered on its own prompt and mask).
    std::pair<std::vector<int64_t>, std::string> steerAnswer(const EvalItem& item, const PlanOptions& plan) {
        const ImageU8 image = loadImage(item.image);
        const Prompt prompt = buildPrompt(*demo_, item.question, false, &image);
        const at::Tensor strength = loadMask(item.mask, prompt.span.gridHeight, prompt.span.gridWidth);
        const SteeringPlan p = makePlan(plan, &vectorsFor(plan), infoFor(plan), strength, prompt.span, demo_->config().text.numLayers);
        Session session(demo_);
        GenerationOptions g;
        g.maxNewTokens = 6;
        const SteeredRunResult r = runSteered(session, prompt, p, g);
        return {r.pair.steered.ids, r.pair.steered.text};
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        demo_ = loadModel(KVSTEER_DEMO_MODEL_DIR);
        vectors_ = loadSteeringFile(KVSTEER_DEMO_VECTORS, *demo_, &vectorsInfo_);
        ExtractOptions preRope;
        preRope.keySpace = KeySpace::PreRope;
        const std::string images = KVSTEER_DEMO_IMAGES;
        preRope_ = extractImagePair(demo_, "What color is the circle?", loadImage(images + "/blue_circle.png"),
                                    loadImage(images + "/red_circle.png"), preRope);
    }
    void cleanup() {
        setThreads(2);
        kernels::forceIsa(kernels::bestIsa());
    }

    void panelRowsHaveTheSkinnyKernelsBits() {
        for (kernels::Isa isa : isasHere()) {
            kernels::forceIsa(isa);
            for (at::ScalarType type : {at::kFloat, at::kHalf, at::kBFloat16})
                for (int64_t cols : {5, 16, 23, 512, 1100, 2100}) {   // tails, one k-block, several (1024 AVX2, 2048 AVX-512) with a tail
                    const at::Tensor w = at::randn({70, cols}).to(type);   // more rows than a panel block
                    const at::Tensor x = at::randn({37, cols});
                    // Each row alone (m = 1, the skinny kernel), single-threaded: the reference.
                    setThreads(1);
                    at::Tensor alone = at::zeros({37, 70});
                    for (int64_t r = 0; r < 37; ++r)
                        kernels::matmul(x[r].data_ptr<float>(), 1, cols, weightViewOf(w), alone[r].data_ptr<float>(), 70);
                    for (int threads : kThreadCounts) {
                        setThreads(threads);
                        for (int64_t m : {2, 8, 9, 31, 33, 37}) {   // skinny, skinny 16-bit, panel
                            at::Tensor y = at::zeros({m, 70});
                            kernels::matmul(x.data_ptr<float>(), m, cols, weightViewOf(w), y.data_ptr<float>(), 70);
                            QVERIFY2(sameBits(y, alone.narrow(0, 0, m)),
                                     qPrintable(QString("%1 %2 cols %3 m %4 threads %5").arg(kernels::isaName(isa)).arg(int(type)).arg(cols).arg(m).arg(threads)));
                        }
                    }
                }
        }
    }

    void zeroPaddedProductsChangeNoBit() {
        // Attention over a batch's padded keys: the row's dot products gain zero terms.
        for (kernels::Isa isa : isasHere()) {
            kernels::forceIsa(isa);
            for (int64_t length : {3, 9, 17, 40, 513}) {
                const at::Tensor x = at::randn({3, length});
                const at::Tensor w = at::randn({5, length});
                at::Tensor y = at::zeros({3, 5});
                kernels::matmul(x.data_ptr<float>(), 3, length, weightViewOf(w), y.data_ptr<float>(), 5);
                for (int64_t padded : {length + 1, length + 8, length + 31, 2 * length + 600}) {
                    at::Tensor xp = at::zeros({3, padded}), wp = at::randn({5, padded});
                    xp.narrow(1, 0, length).copy_(x);
                    wp.narrow(1, 0, length).copy_(w);
                    at::Tensor yp = at::zeros({3, 5});
                    kernels::matmul(xp.data_ptr<float>(), 3, padded, weightViewOf(wp), yp.data_ptr<float>(), 5);
                    QVERIFY2(sameBits(y, yp), qPrintable(QString("%1 length %2 padded %3").arg(kernels::isaName(isa)).arg(length).arg(padded)));
                }
            }
        }
    }

    void prefillHasTheSameBitsAtEveryThreadCount() {
        auto model = loadModel(referenceModelDir());
        const ImageU8 image = loadImage(referenceDir() + "/images/red_square_336x336.png");
        const Prompt prompt = buildPrompt(*model, "What color is the square?", false, &image);
        std::optional<KVCache> firstCache;
        at::Tensor firstStep;
        for (int threads : kThreadCounts) {
            setThreads(threads);
            for (int repeat = 0; repeat < 2; ++repeat) {   // and run after run
                Session s(model);
                QVERIFY(s.prefill(prompt, 4));
                const at::Tensor logits = firstLogits(s);
                if (!firstCache) {
                    firstCache = s.snapshot().clone();
                    firstStep = logits;
                    continue;
                }
                QVERIFY2(sameCache(s.snapshot(), *firstCache), qPrintable(QString("threads %1").arg(threads)));
                QVERIFY2(sameBits(logits, firstStep), qPrintable(QString("threads %1").arg(threads)));
            }
        }
    }

    void suffixPrefillIsBatchInvariant() {
        const ImageU8 image = loadImage(std::string(KVSTEER_DEMO_IMAGES) + "/red_circle.png");
        const PromptImage prepared = prepareImage(*demo_, image);
        const std::vector<std::string> questions = {"What color is the circle?", "Is there a blue circle in the image?",
                                                    "How many shapes are there?", "Is there a green square?"};
        std::vector<Prompt> prompts;
        for (const std::string& q : questions) prompts.push_back(buildImagePrompt(*demo_, q, false, prepared));
        const KVCache prefix = Session(demo_).prefillPrefix(prompts[0], prompts[0].span.end());
        // All four as one batch (shorter rests padded to the longest).
        std::vector<std::unique_ptr<Session>> batched;
        std::vector<Session*> sessions;
        std::vector<const Prompt*> ps;
        for (const Prompt& p : prompts) {
            batched.push_back(std::make_unique<Session>(demo_));
            sessions.push_back(batched.back().get());
            ps.push_back(&p);
        }
        Session::prefillFromShared(prefix, sessions, ps, 4);
        for (size_t i = 0; i < prompts.size(); ++i) {
            Session alone(demo_);
            Session::prefillFromShared(prefix, {&alone}, {&prompts[i]}, 4);
            Session whole(demo_);   // steer's path: the prompt prefilled whole
            QVERIFY(whole.prefill(prompts[i], 4));
            QVERIFY2(sameCache(batched[i]->snapshot(), alone.snapshot()), questions[i].c_str());
            QVERIFY2(sameCache(whole.snapshot(), alone.snapshot()), questions[i].c_str());
            QVERIFY2(sameBits(firstLogits(*batched[i]), firstLogits(whole)), questions[i].c_str());
        }
    }

    void decodeRowIsBatchInvariant() {
        const ImageU8 image = loadImage(std::string(KVSTEER_DEMO_IMAGES) + "/red_circle.png");
        const Prompt prompt = buildPrompt(*demo_, "What color is the circle?", false, &image);
        Session session(demo_);
        QVERIFY(session.prefill(prompt, 16));
        PlanOptions add;
        const SteeringPlan plan = makePlan(add, &vectors_, vectorsInfo_, loadMask("rect:6,9,15,18", 24, 24), prompt.span,
                                           demo_->config().text.numLayers);
        // Logits of each row at each step: rows 0 (pristine) and 1 (steered) alone, then among others.
        auto decode = [&](const std::vector<int>& budgets, const std::vector<bool>& steered) {
            std::vector<const KVCache*> snaps(budgets.size(), &session.snapshot());
            KVCache batch = KVCache::stackRows(snaps, session.snapshot().size() + 17);
            std::vector<DecodeRow> rows;
            for (size_t r = 0; r < budgets.size(); ++r) {
                DecodeRow row;
                row.seedToken = session.lastPromptToken();
                row.maxNewTokens = budgets[r];
                row.stopAtEos = false;
                if (steered[r]) {
                    KVCache view = batch.rowView(int64_t(r), session.snapshot());
                    row.attentionBias = applyPlanTo(session, plan, view);
                }
                rows.push_back(row);
            }
            std::vector<std::vector<at::Tensor>> logits(budgets.size());
            BatchCallbacks cb;
            cb.onStep = [&](const BatchStep& s) {
                for (size_t i = 0; i < s.tokens.size(); ++i)
                    if (s.tokens[i].logits) logits[i].push_back(s.tokens[i].logits->clone());
            };
            decodeBatch(session, std::move(batch), rows, cb);
            return logits;
        };
        const auto pristine = decode({8}, {false});
        const auto steered = decode({8}, {true});
        const auto mixed = decode({2, 8, 5, 8, 1}, {false, true, true, false, false});   // rows leave at 1, 2 and 5
        QCOMPARE(int(mixed[3].size()), 8);
        for (size_t step = 0; step < 8; ++step) {
            QVERIFY2(sameBits(mixed[3][step], pristine[0][step]), qPrintable(QString("pristine step %1").arg(step)));
            QVERIFY2(sameBits(mixed[1][step], steered[0][step]), qPrintable(QString("steered step %1").arg(step)));
        }
    }

    // The case: three questions about one picture, the circle painted, --propagate. Every
    // steered row answered the batch's first question at --batch 8 (blue, blue, blue).
    void batchedPropagateAnswersEachRowsOwnQuestion() {
        const std::string data = path("img2.jsonl");
        writeText(data, "{\"id\": \"c2\", \"image\": \"red_circle.png\", \"question\": \"What color is the circle?\", \"answer\": \"blue\", \"mask\": \"rect:6,9,15,18\"}\n"
                        "{\"id\": \"n2\", \"image\": \"red_circle.png\", \"question\": \"How many shapes are there?\", \"answer\": \"two\", \"mask\": \"rect:6,9,15,18\"}\n"
                        "{\"id\": \"k2\", \"image\": \"red_circle.png\", \"question\": \"What color is the square?\", \"answer\": \"green\", \"mask\": \"rect:6,9,15,18\"}\n");
        const EvalDataset ds = loadEvalDataset(data, KVSTEER_DEMO_IMAGES, false);
        std::vector<const EvalItem*> items, reversed;
        for (const EvalItem& i : ds.items) items.push_back(&i);
        reversed.assign(items.rbegin(), items.rend());
        PlanOptions plan;
        plan.cv = {16};
        plan.propagate = true;
        const std::map<std::string, std::string> expected = {{"c2", "blue"}, {"n2", "two"}, {"k2", "green"}};
        for (const EvalItem* item : items) QCOMPARE(steerAnswer(*item, plan).second, expected.at(item->id));
        const auto reference = evaluate(items, plan, 2, true);
        for (int batch : {2, 4, 6, 8})
            for (bool reuse : {true, false}) {
                QVERIFY2(evaluate(items, plan, batch, reuse) == reference, qPrintable(QString("batch %1 reuse %2").arg(batch).arg(reuse)));
                QVERIFY2(evaluate(reversed, plan, batch, reuse) == reference, qPrintable(QString("reversed, batch %1").arg(batch)));
            }
        for (const EvalItem* item : items) QVERIFY(reference.at(item->id).second == steerAnswer(*item, plan).first);
    }

    void everyOperatorEqualsSteerAtEveryBatch() {
        const std::string data = path("ops.jsonl");
        std::string lines;
        const std::vector<std::pair<std::string, std::string>> qs = {
            {"red_circle.png", "What color is the circle?"}, {"red_circle.png", "Is there a red circle?"},
            {"red_circle.png", "How many shapes are there?"}, {"red_circle.png", "What color is the square?"},
            {"scene_1.png", "What color is the circle?"}, {"scene_1.png", "Is there a yellow circle?"}};
        for (size_t i = 0; i < qs.size(); ++i)
            lines += "{\"id\": \"q" + std::to_string(i) + "\", \"image\": \"" + qs[i].first + "\", \"question\": \"" + qs[i].second +
                     "\", \"answer\": \"x\", \"mask\": \"rect:6,9,15,18\"}\n";
        writeText(data, lines);
        const EvalDataset ds = loadEvalDataset(data, KVSTEER_DEMO_IMAGES, false);
        std::vector<const EvalItem*> items;
        for (const EvalItem& i : ds.items) items.push_back(&i);
        for (const auto& [op, name] : kSteeringOperators)
            for (bool propagate : {false, true}) {
                PlanOptions plan;
                plan.op = op;
                plan.ck = {op == SteeringOperator::Spotlight ? 2.0 : 1.0};
                plan.cv = {op == SteeringOperator::Scale ? 3.0 : 8.0};
                plan.propagate = propagate;
                const QString what = QString("%1 propagate %2").arg(name).arg(propagate);
                const auto reference = evaluate(items, plan, 2, false);
                for (const EvalItem* item : items)
                    QVERIFY2(reference.at(item->id).second == steerAnswer(*item, plan).first, qPrintable(what + " " + item->id.c_str()));
                for (int batch : {4, 6, 8})
                    for (bool reuse : {true, false})
                        QVERIFY2(evaluate(items, plan, batch, reuse) == reference, qPrintable(what + QString(" batch %1").arg(batch)));
            }
    }

    void parityDigestIsTheSameAcrossProcesses() {
        // parity-check's bits in two processes at other thread counts (each also checks its own
        // runs against each other and the reference).
        const QString exe = QFileInfo(QString::fromStdString(cliPath())).dir().filePath("parity-check");
        auto digestOf = [&](const QString& threads, const QString& blasCore = QString()) {
            QProcess p;
            if (!blasCore.isEmpty()) {   // OpenBLAS reads it when it is loaded: the process's start
                QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
                env.insert("OPENBLAS_CORETYPE", blasCore);
                p.setProcessEnvironment(env);
            }
            p.start(exe, {"--device", "cpu", "--threads", threads});
            if (!p.waitForFinished(900000)) return QString("timed out");
            const QString out = QString::fromUtf8(p.readAllStandardOutput());
            if (p.exitCode() != 0) return "exit " + QString::number(p.exitCode()) + ": " + out + p.readAllStandardError();
            const qsizetype at = out.lastIndexOf("digest ");
            return at < 0 ? QString("no digest in: ") + out : out.mid(at).trimmed();
        };
        const QString one = digestOf("1");
        QVERIFY2(one.startsWith("digest "), qPrintable(one));
        QCOMPARE(digestOf("5"), one);
        // The model's numbers do not depend on the BLAS's core either: none of its math calls it.
        // Prescott is what Debian's OpenBLAS falls back to on a CPU it does not know.
        QCOMPARE(digestOf("2", "Prescott"), one);
    }

    void resumedAndShardedRunsGiveOneRunsAnswers() {
        // A run cut after any item and continued with the rest (the rows that shared a batch now
        // share it with others), and three shards, answer as one run does.
        const std::string data = path("pope.jsonl");
        std::string lines;
        const char* images[] = {"red_circle.png", "scene_1.png", "scene_0.png"};
        const char* questions[] = {"What color is the circle?", "Is there a blue circle?", "How many shapes are there?"};
        int id = 0;
        for (const char* image : images)
            for (const char* q : questions)
                lines += "{\"id\": \"i" + std::to_string(id++) + "\", \"image\": \"" + image + "\", \"question\": \"" + q +
                         "\", \"answer\": \"x\", \"mask\": \"rect:6,9,15,18\"}\n";
        writeText(data, lines);
        const EvalDataset ds = loadEvalDataset(data, KVSTEER_DEMO_IMAGES, false);
        std::vector<const EvalItem*> items;
        for (const EvalItem& i : ds.items) items.push_back(&i);
        PlanOptions plan;
        plan.cv = {8};
        plan.propagate = true;
        const auto whole = evaluate(items, plan, 8, true);
        QCOMPARE(whole.size(), items.size());
        for (size_t cut = 1; cut < items.size(); ++cut) {
            auto resumed = evaluate({items.begin(), items.begin() + int64_t(cut)}, plan, 8, true);
            for (const auto& [k, v] : evaluate({items.begin() + int64_t(cut), items.end()}, plan, 8, true)) resumed[k] = v;
            QVERIFY2(resumed == whole, qPrintable(QString("cut after %1").arg(cut)));
        }
        std::map<std::string, std::pair<std::vector<int64_t>, std::vector<int64_t>>> sharded;
        for (int k = 0; k < 3; ++k) {
            std::vector<const EvalItem*> shard;
            for (const EvalItem* i : items)
                if (inShard(*i, k, 3)) shard.push_back(i);
            for (const auto& [key, v] : evaluate(shard, plan, 4, true)) sharded[key] = v;
        }
        QVERIFY(sharded == whole);
    }
};

QTEST_GUILESS_MAIN(TestDeterminism)
#include "test_determinism.moc"
