// kvsteer study (core/study): a study's plan answers every item exactly as `eval` of that plan
// alone, bit for bit, on tiny-llava and tiny-qwen2vl (more plans than a batch holds, prefix reuse
// across datasets); the frontier on a hand table; the image-clustered bootstrap against hand values
// on a set where clustering widens the interval; a bad suite refused with every problem named;
// a grid that cannot apply refused before any item; and through the CLI on the demo model: a
// study killed with SIGKILL and continued ends with one clean run's files, and two shards by image,
// merged, give the same.
#include "TestSupport.h"
#include "Error.h"
#include "eval/EvalRun.h"
#include "eval/PairedStatistics.h"
#include "models/ModelRegistry.h"
#include "study/Frontier.h"
#include "study/StudyJob.h"
#include "study/StudyPlan.h"
#include "study/StudySuite.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

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

std::vector<json> fileLines(const std::string& file) {
    std::vector<json> lines;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
    return lines;
}

// items.jsonl without timings, keyed by dataset, id and plan.
std::map<std::string, json> studyLines(const std::string& dir) {
    std::map<std::string, json> out;
    for (json l : fileLines(dir + "/items.jsonl")) {
        l.erase("timings");
        out[l.at("dataset").get<std::string>() + "/" + l.at("id").get<std::string>() + "#" + std::to_string(l.at("plan").get<int>())] = l;
    }
    return out;
}

json summaryWithoutTimings(const std::string& dir) {
    std::ifstream in(dir + "/summary.json");
    json j = json::parse(in);
    j.erase("timings");
    return j;
}

} // namespace

class TestStudy : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    std::string path(const std::string& name) const { return tmp_.filePath(QString::fromStdString(name)).toStdString(); }

    // A two-set suite on the reference images: a target set and a preserve set sharing images.
    std::string referenceSuite() {
        const std::string dir = path("ref-suite");
        std::filesystem::create_directories(dir);
        const std::string images = referenceDir() + "/images/";
        writeText(dir + "/target.jsonl",
                  "{\"id\": \"t1\", \"image\": \"" + images + "red_square_336x336.png\", \"question\": \"What color is the square?\", "
                  "\"answer\": \"red\", \"target\": \"blue\", \"category\": \"colour\"}\n"
                  "{\"id\": \"t2\", \"image\": \"" + images + "gradient_500x300.png\", \"question\": \"What is shown?\", \"answer\": \"a gradient\", "
                  "\"target\": \"stripes\", \"box\": [0, 0, 250, 150], \"category\": \"scene\"}\n");
        writeText(dir + "/keep.jsonl",
                  "{\"id\": \"k1\", \"image\": \"" + images + "red_square_336x336.png\", \"question\": \"Is it red?\", \"answer\": \"yes\", "
                  "\"category\": \"colour\"}\n"
                  "{\"id\": \"k2\", \"image\": \"" + images + "gradient_500x300.png\", \"question\": \"What colors?\", \"answer\": \"blue\", "
                  "\"box\": [100, 50, 400, 250]}\n"
                  // As long as k1: the two continue from the image's prefix as one batch.
                  "{\"id\": \"k3\", \"image\": \"" + images + "red_square_336x336.png\", \"question\": \"Is it blue?\", \"answer\": \"no\"}\n");
        writeText(dir + "/suite.json", R"({"name": "ref", "datasets": [
            {"name": "target", "data": "target.jsonl", "role": "target", "metric": "contains"},
            {"name": "keep", "data": "keep.jsonl", "role": "preserve", "metric": "pope", "mask": "rect:0,0,1,1"}]})");
        return dir + "/suite.json";
    }

    // Every plan of a 2 x 2 x 2 grid (9 rows an item: more than a batch) in a study equals eval
    // of that plan alone, item by item.
    void studyPlanEqualsEval(const std::string& modelDir) {
        auto model = loadModel(modelDir);
        const StudySuite suite = loadStudySuite(referenceSuite(), "", false, KVSTEER_CHAIR_DIR);
        PlanGrid grid;
        grid.operators = {SteeringOperator::Scale, SteeringOperator::Ablate};
        grid.layers = {"all", "0"};
        grid.ck = {1.5};
        grid.cv = {0.25, 3.0};
        StudyJob job;
        job.outDir = path("study-" + std::filesystem::path(modelDir).filename().string());
        job.suite = &suite;
        job.plans = expandPlans({grid}, *model);
        QCOMPARE(job.plans.size(), size_t(8));
        EvalOptions o;
        o.generation.maxNewTokens = 6;
        o.generation.stopAtEos = false;
        const StudyJobResult result = runStudyJob(model, job, o, {});
        QVERIFY(!result.stopped);
        QVERIFY(result.totals.prefixes < 5);   // one prefix per image, shared by both sets' questions
        const std::map<std::string, json> lines = studyLines(job.outDir);
        QCOMPARE(lines.size(), size_t(5 * 8));
        std::vector<const EvalItem*> items;
        std::map<const EvalItem*, std::string> setOf;
        for (const StudyDataset& d : suite.datasets)
            for (const EvalItem& item : d.data.items) {
                items.push_back(&item);
                setOf[&item] = d.name;
            }
        int changed = 0;
        for (const StudyPlan& plan : job.plans) {
            EvalSteering steering;
            steering.plan = plan.options;
            EvalCallbacks cb;
            int seen = 0;
            cb.onItem = [&](const EvalItemResult& r) {
                const json& l = lines.at(setOf.at(r.item) + "/" + r.item->id + "#" + std::to_string(plan.index));
                QCOMPARE(l.at("unsteered").at("ids").get<std::vector<int64_t>>(), r.unsteered.ids);
                QCOMPARE(l.at("steered").at("ids").get<std::vector<int64_t>>(), r.steered.ids);
                changed += r.steered.ids != r.unsteered.ids;
                ++seen;
            };
            runEval(model, items, steering, o, cb);
            QCOMPARE(seen, 5);
        }
        QVERIFY(changed > 0);   // the plans steer: equality is not two unsteered runs
        const json summary = result.summary;
        QCOMPARE(summary.at("results").size(), size_t(8));
        QVERIFY(summary.at("results")[0].at("datasets")[0].contains("success"));
        QVERIFY(summary.at("results")[0].at("datasets")[1].contains("preservation"));
        for (const char* f : {"/plans.jsonl", "/summary.csv", "/frontier.json", "/frontier.svg", "/grid.svg", "/study.json"})
            QVERIFY2(std::filesystem::exists(job.outDir + f), f);
    }

private slots:
    void initTestCase() { QVERIFY(tmp_.isValid()); }

    void studyPlanEqualsEvalOnTinyLlava() { studyPlanEqualsEval(referenceModelDir()); }
    void studyPlanEqualsEvalOnTinyQwen2Vl() { studyPlanEqualsEval(referenceQwen2VlDir()); }

    // Points and the frontier worked out by hand: (target success, preservation).
    void frontierOnAHandTable() {
        //   0 (0.2, 0.9)  on: nothing has more preservation
        //   1 (0.5, 0.9)  on: beats 0 (same preservation, more success)
        //   2 (0.5, 0.7)  off: 1 beats it
        //   3 (0.8, 0.6)  on
        //   4 (0.8, 0.6)  on: equal to 3, neither beats the other
        //   5 (0.9, 0.1)  on: the most success
        //   6 (0.4, 0.5)  off: 1 and 3 beat it
        //   7 (NaN, 1.0)  left out: no target set
        const std::vector<FrontierPoint> points = {{0.2, 0.9}, {0.5, 0.9}, {0.5, 0.7}, {0.8, 0.6}, {0.8, 0.6}, {0.9, 0.1}, {0.4, 0.5}, {std::nan(""), 1.0}};
        QCOMPARE(paretoFrontier(points), (std::vector<int>{1, 3, 4, 5}));
        // Without 1, neither of 0 and 2 beats the other: both on, by rising success.
        QCOMPARE(paretoFrontier({{0.2, 0.9}, {0.5, 0.7}}), (std::vector<int>{0, 1}));
        QCOMPARE(paretoFrontier({}), std::vector<int>());
    }

    // 4 images of 5 questions each; steering flips every answer about images 0 and 1 (wrong ->
    // right) and none about 2 and 3. The difference in accuracy is 10/20 = 0.5 either way.
    //   clustered: a resample draws 4 images; the difference is (flipping images drawn) / 4, with
    //     k ~ Binom(4, 1/2): P(k = 0) = P(k = 4) = 1/16 > 2.5 %, so the interval is exactly [0, 1].
    //   by item: 20 draws, k ~ Binom(20, 1/2) flips: P(k <= 5) = 2.1 %, P(k <= 6) = 5.8 %, so the
    //     2.5th percentile is 0.25-0.30 and the 97.5th 0.70-0.75: half as wide.
    void clusteredBootstrapByHand() {
        std::vector<ScoredAnswer> u, s;
        std::vector<std::string> images;
        for (int image = 0; image < 4; ++image)
            for (int q = 0; q < 5; ++q) {
                u.push_back({false, false, false});
                s.push_back({image < 2, false, false});
                images.push_back("scene_" + std::to_string(image) + ".png");
            }
        int clusters = 0;
        const std::vector<int> byImage = clusterIndices(images, &clusters);
        QCOMPARE(clusters, 4);
        QCOMPARE(byImage[7], 1);
        const Interval clustered = pairedBootstrap(EvalMetric::Exact, u, s, byImage).at("accuracy");
        QCOMPARE(clustered.lo, 0.0);
        QCOMPARE(clustered.hi, 1.0);
        const Interval items = pairedBootstrap(EvalMetric::Exact, u, s).at("accuracy");
        QVERIFY2(items.lo >= 0.25 && items.lo <= 0.30, std::to_string(items.lo).c_str());
        QVERIFY2(items.hi >= 0.70 && items.hi <= 0.75, std::to_string(items.hi).c_str());
        QVERIFY(clustered.hi - clustered.lo > 1.8 * (items.hi - items.lo));
    }

    // Every problem of a bad suite in one message, each with its place.
    void badSuiteIsRefusedLineByLine() {
        const std::string dir = path("bad-suite");
        std::filesystem::create_directories(dir);
        const std::string image = referenceDir() + "/images/red_square_336x336.png";
        writeText(dir + "/t.jsonl", "{\"id\": \"a\", \"image\": \"" + image + "\", \"question\": \"Q?\", \"answer\": \"x\", \"target\": \"y\"}\n"
                                    "{\"id\": \"b\", \"image\": \"" + image + "\", \"question\": \"Q?\", \"answer\": \"x\"}\n");
        writeText(dir + "/c.jsonl", "{\"id\": \"a\", \"image\": \"" + image + "\", \"question\": \"Describe.\", \"answer\": \"x\"}\n"
                                    "{\"id\": \"b\", \"image\": \"" + image + "\", \"question\": \"Describe.\", \"answer\": \"x\", \"objects\": [\"unicorn\"]}\n");
        writeText(dir + "/suite.json", R"({"datasets": [
            {"name": "t", "data": "t.jsonl", "role": "target", "metric": "contains"},
            {"name": "r", "data": "t.jsonl", "role": "keep", "metric": "contains"},
            {"name": "m", "data": "t.jsonl", "role": "preserve", "metric": "bleu"},
            {"name": "f", "data": "missing.jsonl", "role": "preserve", "metric": "exact"},
            {"name": "c", "data": "c.jsonl", "role": "preserve", "metric": "chair", "synonyms": "shapes"},
            {"name": "t", "data": "t.jsonl", "role": "preserve", "metric": "exact", "colour": "red"}]})");
        const std::string e = errorOf([&] { loadStudySuite(dir + "/suite.json", "", false, KVSTEER_CHAIR_DIR); });
        for (const std::string& expected :
             {std::string("t.jsonl line 2: an item of a target set needs \"target\""), std::string("datasets[1].role: expected \"target\" or \"preserve\", got \"keep\""),
              std::string("datasets[2].metric: expected pope, exact, contains or chair, got \"bleu\""), std::string("datasets[3].data: dataset"),
              std::string("missing.jsonl"), std::string("c.jsonl line 1: an item of a chair set needs \"objects\""), std::string("c.jsonl line 2:"),
              std::string("unicorn"), std::string("datasets[5].name: \"t\" is used twice"), std::string("datasets[5].colour: unknown field")})
            QVERIFY2(e.find(expected) != std::string::npos, (expected + "\n in: " + e).c_str());
        QVERIFY2(e.find("has 8 problems") != std::string::npos, e.c_str());
        QVERIFY(errorOf([&] { loadStudySuite(path("nope.json"), "", false, KVSTEER_CHAIR_DIR); }).find("nope.json") != std::string::npos);
    }

    // A grid (or an eval plan) that cannot apply to the model is a usage error before any item.
    void planThatCannotApplyIsAUsageError() {
        const std::string data = path("demo-small");
        QCOMPARE(runCli({"demo-study", "--out", data, "--images", "2", "--pairs", "0"}).exitCode, 0);
        const ProcessResult layers =
            runCli({"study", "--suite", data + "/suite.json", "--out", path("bad-layers"), "--vectors", KVSTEER_DEMO_VECTORS, "--layers", "all,7"});
        QCOMPARE(layers.exitCode, 2);
        QVERIFY2(layers.err.find("plan 1: layers '7': expected all, early, middle, late, A or A-B within 0-3") != std::string::npos, layers.err.c_str());
        QVERIFY(!std::filesystem::exists(path("bad-layers") + "/items.jsonl"));
        const ProcessResult cv = runCli({"eval", "--data", data + "/colour.jsonl", "--metric", "contains", "--out", path("bad-cv"), "--vectors",
                                         KVSTEER_DEMO_VECTORS, "--cv", "16,16"});
        QCOMPARE(cv.exitCode, 2);
        QVERIFY2(cv.err.find("c_v has 2 values, but the model has 4 layers") != std::string::npos, cv.err.c_str());
        QVERIFY(!std::filesystem::exists(path("bad-cv") + "/items.jsonl"));
        // An operator or ablate target the core does not know is named where it was written.
        const ProcessResult op = runCli({"study", "--suite", data + "/suite.json", "--out", path("bad-op"), "--operator", "scale,push"});
        QCOMPARE(op.exitCode, 2);
        QVERIFY2(op.err.find("the grid: operators: operator 'push' is not known (expected one of add, norm") != std::string::npos, op.err.c_str());
        const std::string suiteOp = errorOf([] { planGridsFromJson(json::parse(R"([{"cv": 1}, {"operator": ["add", "push"]}])"), ".", "s.json"); });
        QVERIFY2(suiteOp.find("s.json: plans[1].operator: operator 'push' is not known") != std::string::npos, suiteOp.c_str());
        const std::string suiteAblate = errorOf([] { planGridsFromJson(json::parse(R"([{"ablate_to": "half"}])"), ".", "s.json"); });
        QVERIFY2(suiteAblate.find("s.json: plans[0].ablate_to: ablate target 'half' is not known") != std::string::npos, suiteAblate.c_str());
    }

    // eval --metric chair: the captions' mentions against each item's objects, through a table.
    void evalScoresCaptionsWithChair() {
        const std::string data = path("demo-captions");
        QCOMPARE(runCli({"demo-study", "--out", data, "--images", "3", "--pairs", "0"}).exitCode, 0);
        const ProcessResult r = runCli({"eval", "--data", data + "/caption.jsonl", "--metric", "chair", "--synonyms", "shapes", "--vectors",
                                        KVSTEER_DEMO_VECTORS, "--out", path("chair-run"), "--json"});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const json summary = json::parse(r.out);
        for (const char* m : {"chair_i", "chair_s", "recall", "accuracy"}) QVERIFY2(summary.at("unsteered").contains(m), m);
        QCOMPARE(summary.at("unsteered").at("recall").get<double>(), 1.0);   // the demo model names every shape it sees
        std::map<std::string, size_t> objects;   // id -> the distinct objects the data line gives
        for (const json& d : fileLines(data + "/caption.jsonl"))
            objects[d.at("id")] = std::set<std::string>(d.at("objects").begin(), d.at("objects").end()).size();
        for (const json& l : fileLines(path("chair-run") + "/items.jsonl"))
            for (const char* c : {"unsteered", "steered"}) {
                const json& chair = l.at(c).at("chair");
                QCOMPARE(l.at(c).at("correct").get<bool>(), chair.at("hallucinated").get<int>() == 0);
                QCOMPARE(size_t(chair.at("ground_truth").get<int>()), objects.at(l.at("id")));
                QVERIFY(chair.at("mentions").get<int>() >= chair.at("recalled").get<int>());
            }
        const ProcessResult wrong = runCli({"eval", "--data", data + "/colour.jsonl", "--metric", "contains", "--synonyms", "shapes", "--out",
                                            path("chair-wrong"), "--vectors", KVSTEER_DEMO_VECTORS});
        QCOMPARE(wrong.exitCode, 2);
        const ProcessResult noObjects = runCli({"eval", "--data", data + "/colour.jsonl", "--metric", "chair", "--out", path("chair-none"),
                                                "--vectors", KVSTEER_DEMO_VECTORS});
        QCOMPARE(noObjects.exitCode, 1);
        QVERIFY2(noObjects.err.find("colour.jsonl line 1: --metric chair needs \"objects\"") != std::string::npos, noObjects.err.c_str());
    }

    void killedStudyContinuesAndShardsMerge() {
        const std::string data = path("demo-study");
        QCOMPARE(runCli({"demo-study", "--out", data, "--images", "8", "--pairs", "0"}).exitCode, 0);
        const std::vector<std::string> common = {"study", "--suite", data + "/suite.json", "--vectors", KVSTEER_DEMO_VECTORS, "--cv", "4,16",
                                                 "--ck", "0,1", "--max-new-tokens", "6"};
        auto with = [&](std::vector<std::string> extra) {
            std::vector<std::string> args = common;
            args.insert(args.end(), extra.begin(), extra.end());
            return args;
        };
        const std::string clean = path("study-clean");
        const ProcessResult one = runCli(with({"--out", clean, "--json"}));
        QVERIFY2(one.exitCode == 0, one.err.c_str());
        const json summary = json::parse(one.out);
        QCOMPARE(summary.at("plans").get<int>(), 4);
        QCOMPARE(summary.at("clusters").get<int>(), 8);
        const size_t lines = studyLines(clean).size();
        QVERIFY(lines > 200);

        // SIGKILL once some items are written, then the same command again.
        const std::string killed = path("study-killed");
        QProcess p;
        QStringList args;
        for (const std::string& a : with({"--out", killed})) args << QString::fromStdString(a);
        p.start(QString::fromStdString(cliPath()), args);
        QVERIFY(p.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(std::filesystem::exists(killed + "/items.jsonl") && studyLines(killed).size() >= 40, 60000);
        p.kill();
        p.waitForFinished();
        QVERIFY2(studyLines(killed).size() < lines, "the study ended before it could be killed");
        const ProcessResult resumed = runCli(with({"--out", killed}));
        QVERIFY2(resumed.exitCode == 0, resumed.err.c_str());
        QVERIFY2(resumed.err.find("done before: continuing") != std::string::npos, resumed.err.c_str());
        QVERIFY(studyLines(killed) == studyLines(clean));
        QVERIFY(summaryWithoutTimings(killed) == summaryWithoutTimings(clean));

        // Two shards by image, merged: the unsharded study.
        std::vector<std::string> shards;
        for (int k = 0; k < 2; ++k) {
            shards.push_back(path("study-shard" + std::to_string(k)));
            const ProcessResult r = runCli(with({"--out", shards.back(), "--shard", std::to_string(k) + "/2"}));
            QVERIFY2(r.exitCode == 0, r.err.c_str());
        }
        std::set<std::string> images0, images1;   // no image in both shards
        for (const json& l : fileLines(shards[0] + "/items.jsonl")) images0.insert(l.at("image"));
        for (const json& l : fileLines(shards[1] + "/items.jsonl")) images1.insert(l.at("image"));
        QVERIFY(!images0.empty() && !images1.empty());
        for (const std::string& i : images0) QVERIFY(!images1.count(i));
        const std::string merged = path("study-merged");
        const ProcessResult m = runCli({"study-merge", "--out", merged, shards[0], shards[1]});
        QVERIFY2(m.exitCode == 0, m.err.c_str());
        QVERIFY(studyLines(merged) == studyLines(clean));
        QVERIFY(summaryWithoutTimings(merged) == summaryWithoutTimings(clean));
        const ProcessResult missing = runCli({"study-merge", "--out", path("study-merged2"), shards[1]});
        QCOMPARE(missing.exitCode, 1);
        QVERIFY2(missing.err.find("shard 0/2 is missing") != std::string::npos, missing.err.c_str());

        // The folder with another grid is another study: refused, naming what differs.
        std::vector<std::string> longer = with({"--out", clean});
        *std::find(longer.begin(), longer.end(), "6") = "8";   // --max-new-tokens 8
        const ProcessResult other = runCli(longer);
        QCOMPARE(other.exitCode, 1);
        QVERIFY2(other.err.find("max_new_tokens (6 there, 8 here)") != std::string::npos, other.err.c_str());
    }
};

QTEST_GUILESS_MAIN(TestStudy)
#include "test_study.moc"
