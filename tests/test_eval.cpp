// kvsteer eval (core/eval): both dataset formats and their named errors; the metrics against values
// worked out by hand, McNemar's exact p and the paired bootstrap against known values; every
// item's two answers equal a steer run's (runSteered, what `kvsteer steer` calls) on tiny-llava,
// tiny-paligemma (no prefix to reuse), tiny-qwen2vl (the non-square gradient image, a box -> its
// cells) and tiny-qwen2 (the token strip), with and without prefix reuse; and through the CLI on
// the demo model: a run killed with SIGKILL and continued ends with one clean run's files, three
// shards merged give the unsharded summary, and a folder of another run is refused by name. A
// studio session's fields, read as a steering spec. One writer per folder, with real processes:
// a second eval into a folder being written is refused naming the first's pid, a stale lock file
// is taken over, and an id on two lines (or in two shards) is refused with the lines named.
#include "TestSupport.h"
#include "Error.h"
#include "eval/BoxCells.h"
#include "eval/EvalDataset.h"
#include "eval/EvalReport.h"
#include "eval/EvalRun.h"
#include "eval/PairedStatistics.h"
#include "eval/Scoring.h"
#include "eval/ShardMerge.h"
#include "io/Base64.h"
#include "io/FolderLock.h"
#include "io/Image.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "steer/Mask.h"
#include "steer/SteeredRun.h"
#include "steer/StudioSession.h"

#include <ATen/ops/ones.h>
#include <ATen/ops/sum.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;
using nlohmann::json;

namespace {

void writeText(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

std::string imagesDir() { return referenceDir() + "/images"; }


ScoredAnswer scored(bool correct, bool saidYes, bool labelYes) { return {correct, saidYes, labelYes}; }

// Items lines without their timings (the only part two runs of the same items may differ in),
// keyed by id.
std::map<std::string, json> itemsById(const std::string& dir) {
    std::map<std::string, json> out;
    std::ifstream in(dir + "/items.jsonl");
    for (std::string line; std::getline(in, line);) {
        json j = json::parse(line);
        j.erase("timings");
        out[j.at("id").get<std::string>()] = j;
    }
    return out;
}

std::vector<std::string> fileLines(const std::string& file) {
    std::vector<std::string> lines;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// The id of every line of items.jsonl, in file order.
std::vector<std::string> lineIds(const std::string& dir) {
    std::vector<std::string> ids;
    for (const std::string& line : fileLines(dir + "/items.jsonl")) ids.push_back(json::parse(line).at("id").get<std::string>());
    return ids;
}

// The pid the folder's lock file names, or -1 (no file yet, or not yet written whole).
long long lockHolderPid(const std::string& dir) {
    std::ifstream in(dir + "/" + FolderLock::fileName());
    try {
        return json::parse(in).at("pid").get<long long>();
    } catch (const json::exception&) {
        return -1;
    }
}

json summaryWithoutTimings(const std::string& dir) {
    std::ifstream in(dir + "/summary.json");
    json j = json::parse(in);
    j.erase("timings");
    return j;
}

} // namespace

class TestEval : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    std::string path(const std::string& name) const { return tmp_.filePath(QString::fromStdString(name)).toStdString(); }

    // A small demo-pope set (8 scenes, about 45 questions), made once, and an eval of it into `out`.
    std::vector<std::string> smallEval(const std::string& out) {
        const std::string data = path("small-dp");
        if (!std::filesystem::exists(data + "/pope.jsonl")) runCli({"demo-pope", "--out", data, "--images", "8"});
        return {"eval", "--data", data + "/pope.jsonl", "--vectors", KVSTEER_DEMO_VECTORS, "--max-new-tokens", "4", "--out", out};
    }

    static QStringList qargs(const std::vector<std::string>& args) {
        QStringList list;
        for (const std::string& a : args) list << QString::fromStdString(a);
        return list;
    }

    // Every item of `data` evaluated by runEval equals runSteered on the same plan (steer's path).
    void itemsEqualSteer(const std::string& modelDir, const std::string& data, const PlanOptions& plan, bool prefixReuse, int batchRows) {
        auto model = loadModel(modelDir);
        const EvalDataset ds = loadEvalDataset(data, imagesDir(), false);
        EvalSteering steering;
        steering.plan = plan;
        EvalOptions o;
        o.metric = EvalMetric::Contains;
        o.generation.maxNewTokens = 6;
        o.generation.stopAtEos = false;
        o.prefixReuse = prefixReuse;
        o.batchRows = batchRows;
        std::vector<const EvalItem*> items;
        for (const EvalItem& i : ds.items) items.push_back(&i);
        std::vector<EvalItemResult> results;
        EvalCallbacks cb;
        // Items arrive as their batch ends (progress moves batch by batch): between two looks at
        // stopRequested, which comes before every batch, at most one batch's items, batchRows / 2
        // questions. Before, a chunk's items (up to 8 batches') came together at its end.
        int arrivedSinceLook = 0, mostBetweenLooks = 0;
        cb.stopRequested = [&] {
            arrivedSinceLook = 0;
            return false;
        };
        cb.onItem = [&](const EvalItemResult& r) {
            results.push_back(r);
            mostBetweenLooks = std::max(mostBetweenLooks, ++arrivedSinceLook);
        };
        const EvalTotals totals = runEval(model, items, steering, o, cb);
        QCOMPARE(results.size(), ds.items.size());
        QVERIFY2(mostBetweenLooks <= batchRows / 2, qPrintable(QString("%1 items arrived after one batch of %2 rows").arg(mostBetweenLooks).arg(batchRows)));
        for (const EvalItemResult& r : results) {
            const EvalItem& item = *r.item;
            std::optional<ImageU8> image;
            if (!item.image.empty()) image = loadImage(item.image);
            const Prompt prompt = buildPrompt(*model, item.question, false, image ? &*image : nullptr);
            const at::Tensor strength = item.box ? boxStrength(*item.box, *image, prompt)
                                        : !item.mask.empty() ? loadMask(item.mask, prompt.span.gridHeight, prompt.span.gridWidth)
                                                             : at::Tensor();
            const SteeringPlan p = makePlan(plan, nullptr, SteeringFileInfo(), strength, prompt.span, model->config().text.numLayers);
            Session session(model);
            const SteeredRunResult steer = runSteered(session, prompt, p, o.generation);
            QVERIFY2(r.unsteered.ids == steer.pair.unsteered.ids, item.id.c_str());
            QVERIFY2(r.steered.ids == steer.pair.steered.ids, item.id.c_str());
            QVERIFY(r.outcome == classifyCell(steer.pair.steered, steer.pair.unsteered));
        }
        if (prefixReuse && model->promptAttention() == PromptAttention::Causal && ds.items.front().image.size())
            QVERIFY(totals.prefixes < int(ds.items.size()));   // questions shared their image's prefix
        QVERIFY(std::any_of(results.begin(), results.end(), [](const EvalItemResult& r) { return r.steered.ids != r.unsteered.ids; }));
    }

private slots:
    void initTestCase() { QVERIFY(tmp_.isValid()); }

    void bothFormatsAndNamedErrors() {
        const std::string pope = path("pope.jsonl");
        writeText(pope, "{\"question_id\": 1, \"image\": \"red_square_336x336.png\", \"text\": \"Is there a square?\", \"label\": \"yes\"}\n"
                        "\n"
                        "{\"question_id\": 2, \"image\": \"red_square_336x336.png\", \"text\": \"Is there a cat?\", \"label\": \"No\"}\n");
        const EvalDataset p = loadEvalDataset(pope, imagesDir(), false);
        QCOMPARE(p.items.size(), size_t(2));
        QCOMPARE(p.items[1].id, std::string("2"));
        QCOMPARE(p.items[1].answers, std::vector<std::string>({"no"}));
        QCOMPARE(p.items[1].line, 3);
        QCOMPARE(p.items[0].image, imagesDir() + "/red_square_336x336.png");
        QCOMPARE(p.hash.size(), size_t(16));

        const std::string general = path("general.jsonl");
        writeText(general, "{\"id\": \"a\", \"image\": \"gradient_500x300.png\", \"question\": \"What is it?\", \"answer\": [\"a gradient\", \"colours\"], "
                           "\"box\": [0, 0, 250, 150]}\n"
                           "{\"id\": \"b\", \"question\": \"What is the capital of France?\", \"answer\": \"Paris\", \"mask\": \"tokens:last\"}\n");
        const EvalDataset g = loadEvalDataset(general, imagesDir(), false);
        QCOMPARE(g.items[0].answers.size(), size_t(2));
        QVERIFY(g.items[0].box.has_value());
        QVERIFY(g.items[1].image.empty());
        QCOMPARE(g.items[1].mask, std::string("tokens:last"));

        const std::string bad = path("bad.jsonl");
        writeText(bad, "{\"id\": \"a\", \"question\": \"q\", \"answer\": \"x\"}\n"
                       "{not json\n"
                       "{\"id\": \"c\", \"question\": \"q\"}\n"
                       "{\"id\": \"d\", \"image\": \"missing.png\", \"question\": \"q\", \"answer\": \"x\"}\n"
                       "{\"id\": \"e\", \"image\": \"red_square_336x336.png\", \"question\": \"q\", \"answer\": \"x\", \"box\": [5, 5, 1, 9]}\n"
                       "{\"id\": \"a\", \"question\": \"q\", \"answer\": \"x\"}\n");
        const std::string first = errorOf([&] { loadEvalDataset(bad, imagesDir(), false); });
        QVERIFY2(first.find(bad + " line 2: not valid JSON") != std::string::npos, first.c_str());
        const EvalDataset skipped = loadEvalDataset(bad, imagesDir(), true);
        QCOMPARE(skipped.items.size(), size_t(1));
        QCOMPARE(skipped.bad.size(), size_t(5));
        QVERIFY(skipped.bad[1].error.find("line 3: missing field \"answer\"") != std::string::npos);
        QVERIFY(skipped.bad[2].error.find("missing.png does not exist") != std::string::npos);
        QVERIFY(skipped.bad[3].error.find("x0 < x1") != std::string::npos);
        QVERIFY(skipped.bad[4].error.find("id \"a\" appears twice") != std::string::npos);
    }

    void metricsByHand() {
        QVERIFY(!popeSaysYes("No, there is not."));
        QVERIFY(!popeSaysYes("There is not a cat"));
        QVERIFY(popeSaysYes("Yes, there is a dog. No cat."));   // only the first sentence counts
        QVERIFY(popeSaysYes("yes"));
        QVERIFY(!popeSaysYes("no"));
        QCOMPARE(normalizeAnswer("The  Red, circle!"), std::string("red circle"));
        QVERIFY(answerCorrect(EvalMetric::Exact, "A red circle.", {"blue", "red circle"}));
        QVERIFY(!answerCorrect(EvalMetric::Exact, "red circles", {"red circle"}));
        QVERIFY(answerCorrect(EvalMetric::Contains, "it is red, I think", {"red"}));
        QVERIFY(!answerCorrect(EvalMetric::Contains, "reddish", {"red"}));   // whole words
        QVERIFY(answerCorrect(EvalMetric::Pope, "No.", {"no"}));
        // 6 answers: TP 2, FP 1, TN 2, FN 1.
        const std::vector<ScoredAnswer> a = {scored(true, true, true),   scored(true, true, true),  scored(false, true, false),
                                             scored(true, false, false), scored(true, false, false), scored(false, false, true)};
        const auto m = metricValues(EvalMetric::Pope, a);
        QCOMPARE(m.at("accuracy"), 4.0 / 6);
        QCOMPARE(m.at("precision"), 2.0 / 3);
        QCOMPARE(m.at("recall"), 2.0 / 3);
        QCOMPARE(m.at("f1"), 2.0 / 3);
        QCOMPARE(m.at("yes_ratio"), 3.0 / 6);
        QCOMPARE(metricValues(EvalMetric::Exact, a).size(), size_t(1));
        QCOMPARE(metricValues(EvalMetric::Pope, {scored(false, false, true)}).at("precision"), 0.0);   // 0/0 is 0
    }

    void mcnemarAndBootstrapKnownValues() {
        QCOMPARE(mcnemarExactP(0, 0), 1.0);
        QVERIFY(std::abs(mcnemarExactP(0, 5) - 0.0625) < 1e-12);            // 2 * (1/2)^5
        QVERIFY(std::abs(mcnemarExactP(9, 1) - 22.0 / 1024) < 1e-12);       // 2 * (1 + 10) / 2^10
        QVERIFY(std::abs(mcnemarExactP(3, 3) - 1.0) < 1e-12);
        QVERIFY(std::abs(mcnemarExactP(2, 8) - 2 * 56.0 / 1024) < 1e-12);   // 2 * (1 + 10 + 45) / 2^10
        // Every item goes wrong -> right: every resample's difference is +1.
        std::vector<ScoredAnswer> u(40, scored(false, false, true)), s(40, scored(true, true, true));
        auto ci = pairedBootstrap(EvalMetric::Pope, u, s);
        QCOMPARE(ci.at("accuracy").lo, 1.0);
        QCOMPARE(ci.at("accuracy").hi, 1.0);
        // The same answers in both: the interval is [0, 0].
        ci = pairedBootstrap(EvalMetric::Exact, u, u);
        QCOMPARE(ci.at("accuracy").lo, 0.0);
        QCOMPARE(ci.at("accuracy").hi, 0.0);
        // Half the items improve: the interval holds the observed +0.5, inside (0, 1), and it is
        // the same on every call (fixed seed).
        for (size_t i = 0; i < 20; ++i) s[i] = u[i];
        const auto a = pairedBootstrap(EvalMetric::Exact, u, s), b = pairedBootstrap(EvalMetric::Exact, u, s);
        QVERIFY(a.at("accuracy").lo > 0.2 && a.at("accuracy").lo < 0.5 && a.at("accuracy").hi > 0.5 && a.at("accuracy").hi < 0.8);
        QCOMPARE(a.at("accuracy").lo, b.at("accuracy").lo);
        QCOMPARE(a.at("accuracy").hi, b.at("accuracy").hi);
    }

    // A box on the 500x300 gradient, through Qwen2-VL's resize (no crop) onto its 10x18 grid:
    // the top-left 250x150 is exactly the top-left 5x9 cells.
    void boxCoversItsCellsOnANonSquareGrid() {
        auto model = loadModel(referenceQwen2VlDir());
        const ImageU8 image = loadImage(imagesDir() + "/gradient_500x300.png");
        const Prompt prompt = buildPrompt(*model, "What is it?", false, &image);
        QCOMPARE(prompt.span.gridHeight, 10);
        QCOMPARE(prompt.span.gridWidth, 18);
        const at::Tensor s = boxStrength({0, 0, 250, 150}, image, prompt);
        QVERIFY(std::abs(s.sum().item<double>() - 45.0) < 1e-4);
        QCOMPARE(s[0][0].item<float>(), 1.0f);
        QCOMPARE(s[4][8].item<float>(), 1.0f);
        QCOMPARE(s[5][9].item<float>(), 0.0f);
        const std::string outside = errorOf([&] { boxStrength({0, 0, 501, 10}, image, prompt); });
        QVERIFY2(outside.find("outside the 500x300 image") != std::string::npos, outside.c_str());
    }

    void itemsEqualSteerOnEveryFamily() {
        const std::string images = path("images.jsonl");
        writeText(images, "{\"id\": \"r1\", \"image\": \"red_square_336x336.png\", \"question\": \"What color is the square?\", \"answer\": \"red\"}\n"
                          "{\"id\": \"g1\", \"image\": \"gradient_500x300.png\", \"question\": \"What is shown?\", \"answer\": \"a gradient\", "
                          "\"box\": [0, 0, 250, 150]}\n"
                          "{\"id\": \"r2\", \"image\": \"red_square_336x336.png\", \"question\": \"Describe the image.\", \"answer\": \"red\", "
                          "\"box\": [100, 100, 236, 236]}\n"
                          "{\"id\": \"r3\", \"image\": \"red_square_336x336.png\", \"question\": \"Is it red?\", \"answer\": \"yes\"}\n"
                          "{\"id\": \"g2\", \"image\": \"gradient_500x300.png\", \"question\": \"What colors?\", \"answer\": \"blue\"}\n"
                          // As long as r3: the two continue from the image's prefix as one batch.
                          "{\"id\": \"r4\", \"image\": \"red_square_336x336.png\", \"question\": \"Is it blue?\", \"answer\": \"no\", "
                          "\"box\": [0, 0, 168, 336]}\n");
        PlanOptions scale;
        scale.op = SteeringOperator::Scale;
        scale.ck = {1.5};
        scale.cv = {3.0};
        for (bool reuse : {true, false}) {
            itemsEqualSteer(referenceModelDir(), images, scale, reuse, 8);
            itemsEqualSteer(referenceQwen2VlDir(), images, scale, reuse, 4);
            itemsEqualSteer(referenceQwen25VlDir(), images, scale, reuse, 4);   // window attention in the tower
            itemsEqualSteer(referenceQwen3VlDir(), images, scale, reuse, 4);    // DeepStack rows in the image's prefix
        }
        itemsEqualSteer(referencePaliGemmaDir(), images, scale, true, 6);   // prefix-LM: prefilled whole
        const std::string text = path("text.jsonl");
        writeText(text, "{\"id\": \"t1\", \"question\": \"What is the capital of France?\", \"answer\": \"Paris\"}\n"
                        "{\"id\": \"t2\", \"question\": \"Name a colour.\", \"answer\": \"red\", \"mask\": \"tokens:2-4,last\"}\n");
        itemsEqualSteer(referenceDir() + "/tiny-qwen2", text, scale, true, 8);
    }

    // A studio session as the steering spec: base64 as the studio writes it, and each malformed
    // part named. (test_studio_eval evaluates a session the studio saved.)
    void studioSessionFields() {
        QCOMPARE(*decodeBase64("TWFu"), std::string("Man"));
        QCOMPARE(*decodeBase64("TWE="), std::string("Ma"));
        QCOMPARE(*decodeBase64("TQ==\n"), std::string("M"));
        QCOMPARE(*decodeBase64(""), std::string());
        for (const char* bad : {"TQ=a", "T@==", "TWF", "TQ==TWFu"}) QVERIFY2(!decodeBase64(bad), bad);

        const std::string file = path("s.kvsession");
        json session = {{"format", "kvsteer-session"},
                        {"version", 1},
                        {"plan", {{"operator", "scale"}, {"mode", "propagate"}, {"ck", 0.5}, {"cv", 4.0}, {"layer_from", 1}, {"layer_to", -1}}},
                        {"strength", {{"rows", 2}, {"cols", 3}, {"values", {0, 1, 0, 0, 0.5, 0}}}}};
        writeText(file, session.dump());
        const StudioSession s = readStudioSession(file, 4);
        QVERIFY(s.plan.op == SteeringOperator::Scale);
        QVERIFY(s.plan.propagate);
        QCOMPARE(s.plan.cv, std::vector<double>{4.0});
        QCOMPARE(*s.plan.layers, (std::vector<int>{1, 2, 3}));
        QCOMPARE(s.strength.size(0), 2);
        QCOMPARE(s.strength[1][1].item<float>(), 0.5f);
        QVERIFY(s.vectorsBytes.empty());

        for (const auto& [field, value] : {std::pair<std::string, std::string>{"operator", "push"}, {"ablate_to", "half"}}) {
            json bad = session;
            bad["plan"][field] = value;
            writeText(file, bad.dump());
            const std::string error = errorOf([&] { readStudioSession(file, 4); });
            QVERIFY2(error.find("plan." + field + ": ") != std::string::npos && error.find("'" + value + "' is not known") != std::string::npos,
                     error.c_str());
        }
        session["strength"]["values"] = {0, 1};
        writeText(file, session.dump());
        QVERIFY(errorOf([&] { readStudioSession(file, 4); }).find("field strength is malformed (2x3 with 2 values)") != std::string::npos);
        session["strength"]["values"] = {0, 1, 0, 0, 0.5, 0};
        session["vectors"] = {{"safetensors", "not base64!"}};
        writeText(file, session.dump());
        QVERIFY(errorOf([&] { readStudioSession(file, 4); }).find("vectors.safetensors is not base64") != std::string::npos);
        session["version"] = 9;
        writeText(file, session.dump());
        QVERIFY(errorOf([&] { readStudioSession(file, 4); }).find("session version 9") != std::string::npos);
        writeText(file, "{\"id\": 1}");
        QVERIFY(errorOf([&] { readStudioSession(file, 4); }).find("not a kvsteer session") != std::string::npos);
    }

    // Through the CLI on the demo model: a POPE-style set, killed and continued, sharded and merged.
    void killedRunContinuesAndShardsMerge() {
        const std::string data = path("dp");
        QCOMPARE(runCli({"demo-pope", "--out", data, "--images", "24"}).exitCode, 0);
        const std::vector<std::string> common = {"eval", "--data", data + "/pope.jsonl", "--vectors", KVSTEER_DEMO_VECTORS, "--max-new-tokens", "6",
                                                 "--no-prefix-reuse"};
        auto with = [&](std::vector<std::string> extra) {
            std::vector<std::string> args = common;
            args.insert(args.end(), extra.begin(), extra.end());
            return args;
        };
        const std::string clean = path("clean");
        const ProcessResult one = runCli(with({"--out", clean, "--json"}));
        QVERIFY2(one.exitCode == 0, one.err.c_str());
        const json summary = json::parse(one.out);
        QVERIFY(summary.at("items").get<int>() > 100);
        QVERIFY(summary.at("difference").contains("f1"));
        for (const char* f : {"/summary.csv", "/metrics.svg", "/run.json"}) QVERIFY(std::filesystem::exists(clean + f));

        // SIGKILL once some items are written, then the same command again.
        const std::string killed = path("killed");
        QProcess p;
        QStringList args;
        for (const std::string& a : with({"--out", killed})) args << QString::fromStdString(a);
        p.start(QString::fromStdString(cliPath()), args);
        QVERIFY(p.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(itemsById(killed).size() >= 12, 60000);
        p.kill();
        p.waitForFinished();
        const size_t before = itemsById(killed).size();
        QVERIFY2(before < size_t(summary.at("items").get<int>()), "the run ended before it could be killed");
        const ProcessResult resumed = runCli(with({"--out", killed}));
        QVERIFY2(resumed.exitCode == 0, resumed.err.c_str());
        QVERIFY2(resumed.err.find("done before: continuing") != std::string::npos, resumed.err.c_str());
        QVERIFY(itemsById(killed) == itemsById(clean));
        QVERIFY(summaryWithoutTimings(killed) == summaryWithoutTimings(clean));

        // Three shards, merged: the unsharded summary.
        std::vector<std::string> shards;
        for (int k = 0; k < 3; ++k) {
            shards.push_back(path("shard" + std::to_string(k)));
            const ProcessResult r = runCli(with({"--out", shards.back(), "--shard", std::to_string(k) + "/3"}));
            QVERIFY2(r.exitCode == 0, r.err.c_str());
        }
        const std::string merged = path("merged");
        const ProcessResult m = runCli({"eval-merge", "--out", merged, shards[0], shards[1], shards[2]});
        QVERIFY2(m.exitCode == 0, m.err.c_str());
        QVERIFY(summaryWithoutTimings(merged) == summaryWithoutTimings(clean));
        QVERIFY(itemsById(merged) == itemsById(clean));
        const ProcessResult missing = runCli({"eval-merge", "--out", path("merged2"), shards[0], shards[2]});
        QCOMPARE(missing.exitCode, 1);
        QVERIFY2(missing.err.find("shard 1/3 is missing") != std::string::npos, missing.err.c_str());

        // The same folder with another steering spec is another run: refused, by name.
        const ProcessResult other = runCli(with({"--out", clean, "--cv", "8"}));
        QCOMPARE(other.exitCode, 1);
        QVERIFY2(other.err.find("plan cv ([16.0] there, [8.0] here)") != std::string::npos, other.err.c_str());

        // What eval's files record: the resolved plan, each item's image, cells and category, and
        // intervals that resample images; a finished run run again keeps its timings; merged
        // shards add theirs.
        const json run = json::parse(std::ifstream(clean + "/run.json"));
        QCOMPARE(run.at("plan").at("operator").get<std::string>(), std::string("add"));
        QCOMPARE(run.at("plan").at("cv"), json::parse("[16.0]"));
        QCOMPARE(summary.at("plan"), run.at("plan"));
        std::stringstream svg;
        svg << std::ifstream(clean + "/metrics.svg").rdbuf();
        QVERIFY2(svg.str().find("add, c_k [0.0], c_v [16.0], layers all, edit-only, red-to-blue.safetensors") != std::string::npos,
                 svg.str().substr(0, 600).c_str());
        QCOMPARE(summary.at("bootstrap").at("clustered_by").get<std::string>(), std::string("image"));
        QCOMPARE(summary.at("bootstrap").at("clusters").get<int>(), 24);
        const json firstItem = itemsById(clean).begin()->second;
        QVERIFY(firstItem.at("image").get<std::string>().find("scene_") != std::string::npos);
        QCOMPARE(firstItem.at("cells").at("source").get<std::string>(), std::string("box"));
        QVERIFY(firstItem.at("cells").at("count").get<int>() > 0);
        QVERIFY(!firstItem.at("category").get<std::string>().empty());
        const json timingsBefore = json::parse(std::ifstream(clean + "/summary.json")).at("timings");
        const ProcessResult again = runCli(with({"--out", clean}));
        QVERIFY2(again.exitCode == 0, again.err.c_str());
        QCOMPARE(json::parse(std::ifstream(clean + "/summary.json")).at("timings"), timingsBefore);
        QVERIFY(timingsBefore.at("items_per_s").get<double>() > 0);
        const json mergedTimings = json::parse(std::ifstream(merged + "/summary.json")).at("timings");
        double shardSeconds = 0;
        for (const std::string& s : shards) shardSeconds += json::parse(std::ifstream(s + "/summary.json")).at("timings").at("seconds").get<double>();
        QCOMPARE(mergedTimings.at("seconds").get<double>(), shardSeconds);
        QCOMPARE(mergedTimings.at("per_shard").size(), size_t(3));
        QVERIFY(mergedTimings.at("prefill_ms").get<double>() <= 1000 * shardSeconds);
    }

    // Two real processes on one folder: the first is paused (SIGSTOP) as soon as its lock file
    // names it, so the second meets a held lock however fast the machine is; then it finishes.
    void secondWriterIsRefusedByName() {
        const std::string out = path("locked");
        QProcess first;
        first.start(QString::fromStdString(cliPath()), qargs(smallEval(out)));
        QVERIFY(first.waitForStarted());
        const long long pid = first.processId();
        for (int waited = 0; lockHolderPid(out) != pid && waited < 60000 && first.state() == QProcess::Running; waited += 2) ::usleep(2000);
        QVERIFY2(lockHolderPid(out) == pid, "the first run never held the folder's lock");
        QCOMPARE(::kill(pid_t(pid), SIGSTOP), 0);
        const ProcessResult second = runCli(smallEval(out));
        QCOMPARE(::kill(pid_t(pid), SIGCONT), 0);
        QVERIFY2(second.exitCode == 1, ("the second run was not refused (did the first end before it was paused?): " + second.err).c_str());
        const std::string named = out + " is being written by pid " + std::to_string(pid) + " on host ";
        QVERIFY2(second.err.find(named) != std::string::npos, second.err.c_str());
        QVERIFY2(second.err.find("wait for it or stop it") != std::string::npos, second.err.c_str());

        QVERIFY(first.waitForFinished(300000));
        QVERIFY2(first.exitStatus() == QProcess::NormalExit && first.exitCode() == 0, first.readAllStandardError().constData());
        const std::vector<std::string> ids = lineIds(out);
        QCOMPARE(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size());   // one line per id
        const std::string clean = path("unlocked");
        const ProcessResult reference = runCli(smallEval(clean));
        QVERIFY2(reference.exitCode == 0, reference.err.c_str());
        QCOMPARE(ids.size(), lineIds(clean).size());
        QVERIFY(itemsById(out) == itemsById(clean));
        QVERIFY(summaryWithoutTimings(out) == summaryWithoutTimings(clean));
    }

    // A lock file a killed run left (another pid, no flock held) is taken over: the run succeeds
    // and the file then names it alone. In one process, a second lock of a held folder is refused.
    void staleLockIsTakenOver() {
        const std::string out = path("stale");
        std::filesystem::create_directories(out);
        const std::string lockFile = out + "/" + FolderLock::fileName();
        writeText(lockFile, json{{"pid", 999999}, {"host", "gone"}, {"since", "2026-01-01T00:00:00Z"},
                                 {"command", "kvsteer eval " + std::string(300, 'x')}}.dump() + "\n");   // longer than the new line
        QProcess run;
        run.start(QString::fromStdString(cliPath()), qargs(smallEval(out)));
        QVERIFY(run.waitForStarted());
        const long long pid = run.processId();
        QVERIFY(run.waitForFinished(300000));
        QVERIFY2(run.exitStatus() == QProcess::NormalExit && run.exitCode() == 0, run.readAllStandardError().constData());
        QCOMPARE(lockHolderPid(out), pid);   // the whole file is its line: nothing of the stale one is left
        QVERIFY(std::filesystem::exists(out + "/summary.json"));

        {
            const FolderLock mine(out, "test_eval");
            const std::string refused = errorOf([&] { FolderLock again(out); });
            QVERIFY2(refused.find("is being written by pid " + std::to_string(::getpid())) != std::string::npos, refused.c_str());
            QVERIFY2(refused.find("(test_eval); wait for it or stop it") != std::string::npos, refused.c_str());
        }
        QVERIFY(std::filesystem::exists(lockFile));   // kept after release
        const FolderLock again(out);                  // and free again
    }

    // What eval-merge and study-merge share, on shard folders written by hand: a shard is complete
    // with its skipped items counted (not the dataset's bad lines, which no shard was given), each
    // line stands for 1/linesPerItem of an item, the bad lines every shard recorded are kept once,
    // and the shards' times add up.
    void shardLinesCountSkippedItemsNotBadLines() {
        const std::string a = path("gather/a"), b = path("gather/b");
        for (const std::string& d : {a, b}) std::filesystem::create_directories(d);
        auto line = [](const std::string& id, int plan) { return "{\"id\": \"" + id + "\", \"plan\": " + std::to_string(plan) + "}\n"; };
        writeText(a + "/items.jsonl", line("x", 0) + line("x", 1) + line("y", 0) + line("y", 1));
        writeText(a + "/skipped.jsonl", "{\"id\": \"\", \"line\": 7, \"error\": \"bad line\"}\n");
        writeText(a + "/runs.jsonl", "{\"seconds\": 2.0, \"items\": 2}\n");
        writeText(b + "/items.jsonl", line("z", 0) + line("z", 1));
        writeText(b + "/skipped.jsonl", "{\"id\": \"\", \"line\": 7, \"error\": \"bad line\"}\n{\"id\": \"w\", \"line\": 3, \"error\": \"image unreadable\"}\n");
        writeText(b + "/runs.jsonl", "{\"seconds\": 1.0, \"items\": 1}\n");
        ShardLineRules rules;
        rules.linesPerItem = 2;
        rules.key = [](const json& l) { return l.at("id").get<std::string>() + "#" + std::to_string(l.at("plan").get<int>()); };
        rules.shardOf = [](const json& l) { return l.at("id") == "z" ? 1 : 0; };
        const ShardLines all = gatherShardLines("merge", {{a, 0, 2}, {b, 1, 2}}, 2, rules);   // b: z done, w skipped
        QCOMPARE(all.lines.size(), size_t(6));
        QCOMPARE(all.skipped.size(), size_t(2));   // the bad line both shards recorded, once; w
        QCOMPARE(all.timings.seconds, 3.0);
        QCOMPARE(all.timings.itemsTimed, int64_t(3));
        QCOMPARE(all.timings.perShard[1].at("items").get<int64_t>(), int64_t(1));
        // a's bad line is not an item it was given: with three items it is one short.
        const std::string short1 = errorOf([&] { gatherShardLines("merge", {{a, 0, 3}, {b, 1, 2}}, 2, rules); });
        QVERIFY2(short1.find("merge: " + a + " is not complete (4 item lines and 0 skipped items, of 3 items x 2 = 6 item lines)") != std::string::npos,
                 short1.c_str());
        const std::string twice = errorOf([&] { gatherShardLines("merge", {{a, 0, 2}, {b, 0, 2}}, 2, rules); });
        QVERIFY2(twice.find("merge: shard 0 is given twice (" + a + " and " + b + ")") != std::string::npos, twice.c_str());
        writeText(b + "/items.jsonl", line("z", 0) + line("z", 1) + line("x", 1));
        const std::string both = errorOf([&] { gatherShardLines("merge", {{a, 0, 2}, {b, 1, 2}}, 3, rules); });
        QVERIFY2(both.find("shard 2/3 is missing") != std::string::npos, both.c_str());
        QVERIFY2(both.find("item \"x#1\" is in " + a + "/items.jsonl line 2 and in " + b + "/items.jsonl line 3; an item belongs to one shard only (this one to shard 0/3)") !=
                     std::string::npos,
                 both.c_str());
    }

    // An id on two lines of items.jsonl (two runs at once) is refused, naming the file, the id and
    // both lines; the same id in two shard folders is refused by eval-merge the same way.
    void duplicateIdsAreRefused() {
        const std::string out = path("dup");
        const ProcessResult run = runCli(smallEval(out));
        QVERIFY2(run.exitCode == 0, run.err.c_str());
        const std::string items = out + "/items.jsonl";
        const std::vector<std::string> lines = fileLines(items);
        std::ofstream(items, std::ios::app) << lines[1] << "\n";
        const std::string id = json::parse(lines[1]).at("id").get<std::string>();
        const ProcessResult again = runCli(smallEval(out));
        QCOMPARE(again.exitCode, 1);
        const std::string named = items + ": id \"" + id + "\" is on line 2 and on line " + std::to_string(lines.size() + 1) + "; keep one line per id";
        QVERIFY2(again.err.find(named) != std::string::npos, again.err.c_str());
        QVERIFY2(again.err.find("delete the folder and rerun, or remove the later duplicate lines") != std::string::npos, again.err.c_str());
        QCOMPARE(lineIds(out).size(), lines.size() + 1);   // refused without touching the file

        std::vector<std::string> shards;
        for (int k = 0; k < 2; ++k) {
            shards.push_back(path("dup-shard" + std::to_string(k)));
            std::vector<std::string> args = smallEval(shards.back());
            args.insert(args.end(), {"--shard", std::to_string(k) + "/2"});
            const ProcessResult r = runCli(args);
            QVERIFY2(r.exitCode == 0, r.err.c_str());
        }
        const std::string first = fileLines(shards[0] + "/items.jsonl").at(0);
        const size_t shard1Lines = lineIds(shards[1]).size();
        std::ofstream(shards[1] + "/items.jsonl", std::ios::app) << first << "\n";
        const std::string merged = path("dup-merged");
        const ProcessResult m = runCli({"eval-merge", "--out", merged, shards[0], shards[1]});
        QCOMPARE(m.exitCode, 1);
        const std::string firstId = json::parse(first).at("id").get<std::string>();
        const std::string both = "item \"" + firstId + "\" is in " + shards[0] + "/items.jsonl line 1 and in " + shards[1] + "/items.jsonl line " +
                                 std::to_string(shard1Lines + 1) + "; an item belongs to one shard only (this one to shard 0/2)";
        QVERIFY2(m.err.find(both) != std::string::npos, m.err.c_str());
        QVERIFY(!std::filesystem::exists(merged));   // refused before anything is written

        // summarize itself never counts an id twice.
        const json item = {{"id", "a"}, {"index", 0}};
        const std::string twice = errorOf([&] { summarize(RunIdentity(), std::vector<json>{item, item}, RunTimings()); });
        QVERIFY2(twice.find("item \"a\" is there twice") != std::string::npos, twice.c_str());
    }
};

QTEST_GUILESS_MAIN(TestEval)
#include "test_eval.moc"
