// The CLI's analysis outputs, as scripts use them: `extract --recipe image-pairs` (the shipped
// example pairs give demo-steer's vector; masks, bad lines and grids that differ), `steer --json`'s
// log-probs (top-k per step, the first step's KL, a --target's log-prob) and `kvsteer heatmaps`
// files (.npy, .csv, .png). The studio's side of heatmaps is in test_studio
// (cliHeatmapsEqualThePanels).
#include "TestSupport.h"
#include "io/SafeTensors.h"

#include <ATen/TensorOperators.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;
using nlohmann::json;

namespace {

const std::string kExamples = KVSTEER_EXAMPLES_DIR;
const std::string kDemoImage = KVSTEER_DEMO_IMAGE;
const std::string kDemoVectors = KVSTEER_DEMO_VECTORS;

// The largest difference over every tensor two vector files share (they must share all).
double maxDifference(const std::string& a, const std::string& b) {
    const SafeTensorsFile fa(a), fb(b);
    if (fa.names() != fb.names()) return INFINITY;
    double worst = 0;
    for (const auto& name : fa.names()) worst = std::max(worst, (fa.tensor(name) - fb.tensor(name)).abs().max().item<double>());
    return worst;
}

void writeLines(const std::string& path, const std::vector<std::string>& lines) {
    std::ofstream out(path);
    for (const auto& l : lines) out << l << "\n";
}

} // namespace

class TestCliAnalysis : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    std::string path(const std::string& name) const { return tmp_.filePath(QString::fromStdString(name)).toStdString(); }

    static void expect(const ProcessResult& r, int code, const std::vector<std::string>& phrases) {
        QVERIFY2(r.exitCode == code, ("exit code " + std::to_string(r.exitCode) + ": " + r.err).c_str());
        for (const auto& p : phrases) QVERIFY2(r.err.find(p) != std::string::npos, ("missing '" + p + "' in: " + r.err).c_str());
    }

    std::string extractPairs(const std::string& pairs, const std::string& out, const std::vector<std::string>& extra = {}) {
        std::vector<std::string> args = {"extract", "--recipe", "image-pairs", "--pairs", pairs, "--out", path(out)};
        args.insert(args.end(), extra.begin(), extra.end());
        const ProcessResult r = runCli(args);
        if (r.exitCode != 0) throw std::runtime_error("extract failed: " + r.err);
        return path(out);
    }

private slots:
    // The 8 shipped pairs are demo-steer's extraction pairs: one CLI line gives its vector.
    void imagePairsReproduceDemoSteer() {
        const std::string ours = extractPairs(kExamples + "/red-to-blue/pairs.jsonl", "pairs.safetensors");
        const ProcessResult r = runCli({"demo-steer", "--pairs", "8", "--n", "1", "--save-vectors", path("demo.safetensors")});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const double diff = maxDifference(ours, path("demo.safetensors"));
        qInfo("image-pairs vs demo-steer: max |difference| %.3g", diff);
        QVERIFY(diff <= 1e-6);
        QVERIFY(maxDifference(ours, kDemoVectors) <= 1e-5);   // and the shipped file, made the same way
        // --pca: one direction per head, as long along itself as the mean is.
        const std::string pca = extractPairs(kExamples + "/red-to-blue/pairs.jsonl", "pca.safetensors", {"--pca"});
        const SafeTensorsFile mean(ours), principal(pca);
        const at::Tensor m = mean.tensor("steer.values.1").to(at::kFloat), p = principal.tensor("steer.values.1").to(at::kFloat);
        QCOMPARE(p.sizes().vec(), m.sizes().vec());
        QVERIFY((p * m).sum(1).min().item<double>() > 0);   // sign aligned with the mean
    }

    // A pair's mask picks the cells whose difference counts: the whole grid is no mask at all.
    void imagePairMasks() {
        const std::string dir = kExamples + "/red-to-blue/";
        const std::string pair = "\"image_a\": \"" + dir + "blue_0.png\", \"image_b\": \"" + dir + "red_0.png\", \"prompt\": \"What color is the circle?\"";
        writeLines(path("plain.jsonl"), {"{" + pair + "}"});
        writeLines(path("whole.jsonl"), {"{" + pair + ", \"mask\": \"rect:0,0,23,23\"}"});
        writeLines(path("corner.jsonl"), {"{" + pair + ", \"mask\": \"rect:0,0,3,3\"}"});
        const std::string plain = extractPairs(path("plain.jsonl"), "plain.safetensors");
        QVERIFY(maxDifference(plain, extractPairs(path("whole.jsonl"), "whole.safetensors")) <= 1e-6);
        QVERIFY(maxDifference(plain, extractPairs(path("corner.jsonl"), "corner.safetensors")) > 1e-3);
        writeLines(path("empty-mask.jsonl"), {"{" + pair + ", \"mask\": \"rect:0,0,3,3\"}", "{" + pair + ", \"mask\": \"" + path("none.npy") + "\"}"});
        expect(runCli({"extract", "--recipe", "image-pairs", "--pairs", path("empty-mask.jsonl"), "--out", path("x.safetensors")}), 1,
               {"empty-mask.jsonl line 2", "none.npy"});
    }

    void imagePairErrorsNameTheLine() {
        writeLines(path("bad.jsonl"), {"{\"image_a\": \"" + kDemoImage + "\", \"image_b\": \"" + kDemoImage + "\"}", "{\"image_a\": \"a.png\"}"});
        expect(runCli({"extract", "--recipe", "image-pairs", "--prompt", "What?", "--pairs", path("bad.jsonl"), "--out", path("x.safetensors")}), 1,
               {"bad.jsonl line 2", "image_b"});
        expect(runCli({"extract", "--recipe", "image-pairs", "--pairs", path("bad.jsonl"), "--out", path("x.safetensors")}), 1,
               {"bad.jsonl line 1", "prompt"});
        // Qwen2-VL lays an image out on a grid that follows its size: a pair's two images must share
        // one, and per-position vectors need one grid for all pairs (the mean does not).
        const std::string images = referenceDir() + "/images/";
        writeLines(path("grids.jsonl"), {"{\"image_a\": \"" + images + "red_square_336x336.png\", \"image_b\": \"" + images + "red_square_336x336.png\"}",
                                         "{\"image_a\": \"" + images + "gradient_500x300.png\", \"image_b\": \"" + images + "gradient_500x300.png\"}"});
        const std::vector<std::string> grids = {"extract", "--model", referenceQwen2VlDir(), "--recipe", "image-pairs", "--prompt", "What is shown?",
                                                "--pairs", path("grids.jsonl"), "--out", path("x.safetensors")};
        expect(runCli(grids), 0, {"wrote"});
        std::vector<std::string> perPosition = grids;
        perPosition.push_back("--per-position");
        expect(runCli(perPosition), 1, {"grids.jsonl line 2", "grid", "per-position vectors need every pair on one layout"});
        // A missing mask file is named with its line before any image is encoded.
        writeLines(path("nomask.jsonl"), {"{\"image_a\": \"" + kDemoImage + "\", \"image_b\": \"" + kDemoImage + "\", \"mask\": \"gone.png\"}"});
        expect(runCli({"extract", "--recipe", "image-pairs", "--prompt", "What?", "--pairs", path("nomask.jsonl"), "--out", path("x.safetensors")}),
               1, {"nomask.jsonl line 1", "gone.png", "file not found"});
        writeLines(path("grid.jsonl"), {"{\"image_a\": \"" + images + "red_square_336x336.png\", \"image_b\": \"" + images + "gradient_500x300.png\"}"});
        expect(runCli({"extract", "--model", referenceQwen2VlDir(), "--recipe", "image-pairs", "--prompt", "What is shown?", "--pairs",
                       path("grid.jsonl"), "--out", path("x.safetensors")}),
               1, {"grid.jsonl line 1", "image A lays out as a 12x12 grid"});
    }

    // steer --json: top-k log-probs per step, the first step's KL, and a target's log-prob.
    void steerJsonCarriesLogProbs() {
        const std::vector<std::string> base = {"steer", "--image", kDemoImage, "--prompt", "What color is the circle?", "--vectors", kDemoVectors,
                                               "--mask", "rect:6,9,15,18", "--json", "--logprobs", "3"};
        auto run = [&](std::vector<std::string> extra) {
            std::vector<std::string> args = base;
            args.insert(args.end(), extra.begin(), extra.end());
            const ProcessResult r = runCli(args);
            if (r.exitCode != 0) throw std::runtime_error("steer failed: " + r.err);
            return json::parse(r.out);
        };
        const json j = run({"--target", "blue"});
        QCOMPARE(j["steered"]["text"].get<std::string>(), std::string("blue"));
        for (const char* stream : {"unsteered", "steered"}) {
            const json& s = j[stream];
            QCOMPARE(s["steps"].size(), s["ids"].size());
            for (size_t i = 0; i < s["steps"].size(); ++i) {
                const json& step = s["steps"][i];
                QCOMPARE(step["id"], s["ids"][i]);
                QCOMPARE(step["top"].size(), size_t(3));
                QCOMPARE(step["top"][0]["id"], step["id"]);   // greedy: the chosen token is the most likely
                QVERIFY(step["logprob"].get<double>() <= 0);
                for (size_t k = 1; k < 3; ++k) QVERIFY(step["top"][k]["logprob"].get<double>() <= step["top"][k - 1]["logprob"].get<double>());
            }
        }
        QVERIFY(j["first_step_kl"].get<double>() > 1);   // red -> blue moves the first distribution far
        const json& t = j["target"];
        // "blue" is the steered answer's first token: its teacher-forced log-prob is that step's.
        QCOMPARE(t["ids"].size(), size_t(1));
        QCOMPARE(t["ids"][0], j["steered"]["ids"][0]);
        QVERIFY(std::abs(t["steered_logprob"].get<double>() - j["steered"]["steps"][0]["logprob"].get<double>()) < 1e-4);
        // Unsteered, "blue" is not the top token: its log-prob is at most the third's.
        QVERIFY(t["unsteered_logprob"].get<double>() <= j["unsteered"]["steps"][0]["top"][2]["logprob"].get<double>() + 1e-4);
        QVERIFY(t["difference"].get<double>() > 5);
        // Strength zero edits nothing: the two first distributions are the same.
        const json zero = run({"--cv", "0", "--logprobs", "0"});
        QVERIFY(std::abs(zero["first_step_kl"].get<double>()) < 1e-6);
        QVERIFY(!zero["steered"].contains("steps"));
        // Refused before any work: --logprobs without --json, too many, an empty target.
        expect(runCli({"steer", "--image", kDemoImage, "--prompt", "x", "--logprobs", "3"}), 2, {"--json"});
        expect(runCli({"steer", "--image", kDemoImage, "--prompt", "x", "--json", "--logprobs", "5000"}), 2, {"0..1000"});
        expect(runCli({"steer", "--image", kDemoImage, "--prompt", "x", "--vectors", kDemoVectors, "--json", "--target", ""}), 2, {"--target"});
    }

    // kvsteer heatmaps: ‖ΔV‖ is nonzero exactly on the painted cells, in each format.
    void heatmapsFiles() {
        const std::vector<std::string> run = {"heatmaps", "--image", kDemoImage, "--prompt", "What color is the circle?", "--vectors", kDemoVectors,
                                              "--mask", "rect:6,9,15,18", "--metric", "value-delta"};
        for (const char* ext : {".npy", ".csv", ".png"}) {
            std::vector<std::string> args = run;
            args.insert(args.end(), {"--out", path(std::string("dv") + ext)});
            expect(runCli(args), 0, {"wrote"});
        }
        // numpy itself reads the file (Debian's python3-numpy, scripts/install-deps.sh).
        const ProcessResult np = runProgram("/usr/bin/python3", {"-c", "import numpy, sys; a = numpy.load(sys.argv[1]); print(a.shape, a.dtype, int((a > 0).sum()))",
                                                                 path("dv.npy")});
        QVERIFY2(np.exitCode == 0, np.err.c_str());
        QCOMPARE(np.out, std::string("(4, 24, 24) float32 400\n"));
        const auto [shape, values] = readNpy(path("dv.npy"));
        QCOMPARE(shape, std::string("4, 24, 24, "));
        QCOMPARE(values.size(), size_t(4 * 24 * 24));
        for (size_t i = 0; i < values.size(); ++i) {
            const int row = int(i / 24 % 24), col = int(i % 24);
            const bool painted = row >= 6 && row <= 15 && col >= 9 && col <= 18;
            QVERIFY2(painted ? values[i] > 0 : values[i] == 0, qPrintable(QString("cell %1").arg(i)));
        }
        std::ifstream csv(path("dv.csv"));
        std::string line;
        std::getline(csv, line);
        QCOMPARE(line, std::string("layer,row,col,value"));
        int rows = 0;
        while (std::getline(csv, line)) ++rows;
        QCOMPARE(rows, 4 * 24 * 24);
        QVERIFY(std::filesystem::file_size(path("dv.png")) > 100);

        // Without a plan nothing is edited; the attention of each step sums over the grid to at most 1.
        expect(runCli({"heatmaps", "--image", kDemoImage, "--prompt", "What color is the circle?", "--out", path("none.npy")}), 0, {"plan: none"});
        for (float v : readNpy(path("none.npy")).second) QCOMPARE(v, 0.0f);
        expect(runCli({"heatmaps", "--image", kDemoImage, "--prompt", "What color is the circle?", "--metric", "attention", "--step", "0",
                       "--out", path("att.npy")}),
               0, {"step 0"});
        const auto att = readNpy(path("att.npy")).second;
        for (int l = 0; l < 4; ++l) {
            const double total = std::accumulate(att.begin() + l * 576, att.begin() + (l + 1) * 576, 0.0);
            QVERIFY(total > 0 && total <= 1 + 1e-5);
        }
        // --max-pixels is Qwen's: refused for a family of fixed-size images.
        expect(runCli({"inspect", "--max-pixels", "100000"}), 2, {"--max-pixels", "llava"});
        // Bad input: a format it cannot write, a metric it does not know, a step the answer lacks.
        expect(runCli({"heatmaps", "--image", kDemoImage, "--prompt", "x", "--out", path("maps.txt")}), 1, {"maps.txt", ".npy, .csv or .png"});
        expect(runCli({"heatmaps", "--image", kDemoImage, "--prompt", "x", "--metric", "dv", "--out", path("x.npy")}), 2, {"--metric", "value-delta"});
        expect(runCli({"heatmaps", "--image", kDemoImage, "--prompt", "What color is the circle?", "--metric", "attention", "--step", "40",
                       "--out", path("x.npy")}),
               2, {"--step 40", "--max-new-tokens 8"});
        expect(runCli({"heatmaps", "--image", kDemoImage, "--prompt", "What color is the circle?", "--metric", "attention", "--step", "5",
                       "--out", path("x.npy")}),
               1, {"no step 5", "ended after 2 tokens"});
        expect(runCli({"heatmaps", "--image", kDemoImage, "--prompt", "x", "--step", "0", "--out", path("x.npy")}), 2, {"--metric attention"});
        expect(runCli({"heatmaps", "--image", kDemoImage, "--prompt", "x", "--metric", "value-cosine", "--out", path("x.npy")}), 2, {"--vectors"});
    }
};

QTEST_GUILESS_MAIN(TestCliAnalysis)
#include "test_cli_analysis.moc"
