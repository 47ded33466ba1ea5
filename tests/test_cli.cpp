// The kvsteer CLI end to end, as scripts use it: generate (--json, --dump-prefill) against the
// reference, inspect, make-random, and extract -> steer -> sweep; the same on PaliGemma (16x16
// grid, image tokens first), vector files tied to their family and grid, --raw-prompt in every
// command that takes --prompt, --help everywhere, and text-only steering on qwen2 (tokens: masks).
#include "TestSupport.h"
#include "io/SafeTensors.h"
#include "kernels/ComputeReport.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/equal.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;
using nlohmann::json;

class TestCli : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    json summary_;

    std::string image() const { return referenceDir() + "/images/red_square_336x336.png"; }
    std::string other() const { return referenceDir() + "/images/gradient_500x300.png"; }

    json runJson(const std::vector<std::string>& args) {
        const ProcessResult r = runCli(args);
        if (r.exitCode != 0) throw std::runtime_error("kvsteer failed: " + r.err);
        return json::parse(r.out);
    }

    static json vectorsMetadata(const std::string& path) { return json::parse(SafeTensorsFile(path).metadata().at("kvsteer")); }

    // `extract --recipe image-pair` on `model` (red square vs gradient) into tmp/<name>.
    std::string extractPair(const std::string& model, const std::string& name, const std::vector<std::string>& extra = {}) {
        const std::string out = tmp_.filePath(QString::fromStdString(name)).toStdString();
        std::vector<std::string> args = {"extract", "--model", model, "--recipe", "image-pair", "--prompt", "What is shown?",
                                         "--image-a", image(), "--image-b", other(), "--out", out};
        args.insert(args.end(), extra.begin(), extra.end());
        const ProcessResult r = runCli(args);
        if (r.exitCode != 0) throw std::runtime_error("extract failed: " + r.err);
        return out;
    }

    // Every kvsteer command, for the checks that run each one (--help, the exit-code rule).
    static const std::vector<std::string>& commands() {
        static const std::vector<std::string> all = {"generate", "inspect",     "tokenize",   "vectors",    "extract",     "steer",
                                                     "sweep",    "heatmaps",    "eval",       "eval-merge", "make-random", "demo-steer",
                                                     "train-demo", "eval-demo", "demo-corpus", "demo-images", "demo-pope"};
        return all;
    }

    // Runs kvsteer and checks exit code 1 and every phrase in stderr.
    static void expectError(const std::vector<std::string>& args, const std::vector<std::string>& phrases) {
        const ProcessResult r = runCli(args);
        QVERIFY2(r.exitCode == 1, ("exit code " + std::to_string(r.exitCode) + ": " + r.err).c_str());
        for (const auto& p : phrases) QVERIFY2(r.err.find(p) != std::string::npos, ("missing '" + p + "' in: " + r.err).c_str());
    }

private slots:
    // `inspect` says what computes: kvsteer's kernels and their ISA, and the BLAS with its core.
    // A generic core forced with OPENBLAS_CORETYPE is reported as the user's setting with the
    // better one named; setting the better one takes effect (the remedy works); with nothing set
    // the warning for a fallback names the variable (the words are checked on a report by hand:
    // this machine's OpenBLAS knows its CPU).
    void inspectSaysWhatComputes() {
        const ProcessResult plain = runCli({"inspect"});
        QVERIFY2(plain.exitCode == 0, plain.err.c_str());
        QVERIFY2(plain.out.find("kernels: kvsteer's, ") != std::string::npos, plain.out.c_str());
        if (plain.out.find("BLAS: OpenBLAS") == std::string::npos) QSKIP("no OpenBLAS loaded in this build");
        const bool avx2 = plain.out.find("kernels: kvsteer's, portable") == std::string::npos;
        const ProcessResult forced = runProgram("env", {"OPENBLAS_CORETYPE=Prescott", cliPath(), "inspect"});
        QVERIFY2(forced.exitCode == 0, forced.err.c_str());
        QVERIFY2(forced.out.find("core Prescott (OPENBLAS_CORETYPE=Prescott set)") != std::string::npos, forced.out.c_str());
        const std::string better = plain.out.find("kernels: kvsteer's, avx512") != std::string::npos ? "SkylakeX" : "Haswell";
        if (avx2) {
            QVERIFY2(forced.out.find("note: OPENBLAS_CORETYPE=Prescott runs OpenBLAS's no AVX2 kernels") != std::string::npos, forced.out.c_str());
            QVERIFY2(forced.out.find("set " + better + " for speed") != std::string::npos, forced.out.c_str());
            const ProcessResult remedied = runProgram("env", {"OPENBLAS_CORETYPE=" + better, cliPath(), "inspect"});
            QVERIFY2(remedied.out.find("core " + better) != std::string::npos, remedied.out.c_str());
            QVERIFY2(remedied.out.find("note:") == std::string::npos && remedied.out.find("warning:") == std::string::npos, remedied.out.c_str());
        }
        kernels::ComputeReport fallback;   // what Debian's OpenBLAS said on a new Xeon, nothing set
        fallback.cpu = kernels::Isa::Avx512;
        fallback.blas = "OpenBLAS 0.3.21";
        fallback.blasCore = "Prescott";
        fallback.blasCoreOlderThanCpu = true;
        const std::string w = kernels::blasWarning(fallback);
        QVERIFY2(w.find("fell back to its generic core Prescott (no AVX2) on a CPU with AVX-512") != std::string::npos, w.c_str());
        QVERIFY2(w.find("start kvsteer with OPENBLAS_CORETYPE=SkylakeX") != std::string::npos, w.c_str());
        fallback.blasCore = "Cooperlake";
        fallback.blasCoreOlderThanCpu = false;
        QCOMPARE(kernels::blasWarning(fallback), std::string());
        QVERIFY(kernels::openblasCoreLevel("Zen") == kernels::Isa::Avx2);
        QVERIFY(kernels::openblasCoreLevel("Sandybridge") == kernels::Isa::Portable);
        QVERIFY(kernels::openblasCoreLevel("SapphireRapids") == kernels::Isa::Avx512);
    }

    void initTestCase() {
        std::ifstream in(referenceDir() + "/expected/summary.json");
        summary_ = json::parse(in);
    }

    void generateJsonMatchesReference() {
        const auto& c = summary_["cases"][0];   // red_square
        const json out = runJson({"generate", "--model", referenceModelDir(), "--image", image(), "--raw-prompt", "--prompt",
                                  c["prompt"].get<std::string>(), "--max-new-tokens", "20", "--json"});
        QCOMPARE(out["input_ids"].size(), size_t(595));
        QCOMPARE(out["generated_ids"].get<std::vector<int64_t>>(), c["greedy_ids"].get<std::vector<int64_t>>());
        QCOMPARE(out["text"].get<std::string>(), c["greedy_text"].get<std::string>());
        QVERIFY(out["prefill_ms"].get<double>() > 0);
        QVERIFY(out["decode_tokens_per_s"].get<double>() > 0);
    }

    void dumpPrefillMatchesReference() {
        const auto& c = summary_["cases"][1];   // gradient
        const std::string dump = tmp_.filePath("dump.safetensors").toStdString();
        const ProcessResult r = runCli({"generate", "--model", referenceModelDir(), "--image", other(), "--raw-prompt", "--prompt",
                                        c["prompt"].get<std::string>(), "--max-new-tokens", "1", "--dump-prefill", dump});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const SafeTensorsFile got(dump), want(referenceTensorsPath("gradient"));
        QCOMPARE(toIds(got.tensor("input_ids")), toIds(want.tensor("input_ids")));
        QCOMPARE(maxAbsDiff(got.tensor("pixel_values"), want.tensor("pixel_values")), 0.0);
        QVERIFY(maxAbsDiff(got.tensor("prefill_last_logits"), want.tensor("prefill_last_logits")) <= 1e-3);
        for (int l = 0; l < 3; ++l) {
            QVERIFY(maxAbsDiff(got.tensor("past_key." + std::to_string(l)), want.tensor("past_key." + std::to_string(l))) <= 1e-4);
            QVERIFY(maxAbsDiff(got.tensor("past_value." + std::to_string(l)), want.tensor("past_value." + std::to_string(l))) <= 1e-4);
        }
    }

    void inspectDescribesTheModel() {
        const ProcessResult r = runCli({"inspect", "--model", referenceModelDir()});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.find("4284576") != std::string::npos);
        QVERIFY(r.out.find("4 heads / 2 KV heads") != std::string::npos);
        QVERIFY(r.out.find("24x24 = 576 patches") != std::string::npos);
    }

    void makeRandomWritesALoadableShardedModel() {
        const std::string dir = tmp_.filePath("micro").toStdString();
        const ProcessResult r = runCli({"make-random", "--preset", "llava-micro", "--dtype", "bf16", "--out", dir, "--tokenizer-from",
                                        referenceModelDir(), "--shard-gb", "0.002"});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QVERIFY(std::filesystem::exists(dir + "/model.safetensors.index.json"));
        QVERIFY(std::filesystem::exists(dir + "/model-00004-of-00004.safetensors"));   // embeddings and lm_head get shards of their own
        const ProcessResult info = runCli({"inspect", "--model", dir});
        QVERIFY2(info.exitCode == 0, info.err.c_str());
        QVERIFY(info.out.find("BF16") != std::string::npos);
        const json out = runJson({"generate", "--model", dir, "--image", image(), "--prompt", "hi", "--max-new-tokens", "4", "--json"});
        QCOMPARE(out["generated_ids"].size(), size_t(4));
        const ProcessResult bad = runCli({"make-random", "--preset", "gpt-5", "--out", dir});
        QCOMPARE(bad.exitCode, 2);   // a value of the wrong form: usage
        QVERIFY(bad.err.find("unknown preset 'gpt-5'") != std::string::npos && bad.err.find("qwen2.5-vl-7b") != std::string::npos);
    }

    void extractSteerSweep() {
        const std::string vectors = tmp_.filePath("v.safetensors").toStdString();
        ProcessResult r = runCli({"extract", "--model", referenceModelDir(), "--recipe", "image-pair", "--prompt", "What is shown?",
                                  "--image-a", image(), "--image-b", other(), "--out", vectors});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const json plain = runJson({"generate", "--model", referenceModelDir(), "--image", image(), "--prompt", "What is shown?",
                                    "--max-new-tokens", "8", "--json"});
        const json steered = runJson({"steer", "--model", referenceModelDir(), "--image", image(), "--prompt", "What is shown?",
                                      "--vectors", vectors, "--mask", "rect:0,0,23,23", "--cv", "8", "--max-new-tokens", "8", "--json"});
        QCOMPARE(steered["unsteered"]["ids"], plain["generated_ids"]);
        QVERIFY(steered["steered"]["ids"] != plain["generated_ids"]);
        QCOMPARE(steered["mode"].get<std::string>(), std::string("edit-only"));
        const json zero = runJson({"steer", "--model", referenceModelDir(), "--image", image(), "--prompt", "What is shown?",
                                   "--vectors", vectors, "--ck", "0", "--cv", "0", "--propagate", "--max-new-tokens", "8", "--json"});
        QCOMPARE(zero["steered"]["ids"], plain["generated_ids"]);

        r = runCli({"sweep", "--model", referenceModelDir(), "--image", image(), "--prompt", "What is shown?", "--vectors", vectors,
                    "--cv", "0,4", "--layers", "0-1,2", "--max-new-tokens", "6", "--csv"});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QCOMPARE(std::count(r.out.begin(), r.out.end(), '\n'), 6L);   // header, baseline, 2 x 2 settings
        QVERIFY(r.out.rfind("layers,ck,cv,outcome,changed,repetition,distinct,eos,text\n", 0) == 0);

        r = runCli({"steer", "--model", referenceModelDir(), "--image", image(), "--prompt", "x", "--vectors", vectors, "--mask", "rect:0,0,30,3"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY(r.err.find("rect:0,0,30,3") != std::string::npos);
        r = runCli({"steer", "--model", referenceModelDir(), "--image", image(), "--prompt", "x", "--operator", "add"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.find("needs --vectors") != std::string::npos);
    }

    // sweep --json on the demo: the atlas's cells, classified as the studio's atlas shows them.
    void sweepJsonOnTheDemo() {
        const json j = runJson({"sweep", "--image", KVSTEER_DEMO_IMAGE, "--prompt", "What color is the circle?", "--vectors", KVSTEER_DEMO_VECTORS,
                                "--mask", "rect:6,9,15,18", "--cv", "8,16,32", "--layers", "all,middle", "--max-new-tokens", "8", "--json"});
        QCOMPARE(j["unsteered"]["text"].get<std::string>(), std::string("red"));
        QCOMPARE(j["operator"].get<std::string>(), std::string("add"));
        QCOMPARE(j["cells"].size(), size_t(6));
        const json& flip = j["cells"][1];
        QCOMPARE(flip["layers"].get<std::string>(), std::string("all"));
        QCOMPARE(flip["cv"].get<double>(), 16.0);
        QCOMPARE(flip["ck"].get<double>(), 0.0);   // the file's c_k: values only
        QCOMPARE(flip["text"].get<std::string>(), std::string("blue"));
        QCOMPARE(flip["outcome"].get<std::string>(), std::string("different"));
        QCOMPARE(j["cells"][2]["outcome"].get<std::string>(), std::string("degenerate"));
        QCOMPARE(j["cells"][2]["stutter"].get<bool>(), true);
        QCOMPARE(j["cells"][3]["layer_ids"], json({1, 2}));   // "middle" of 4 layers
        // One cell per forward pass gives the same table.
        const json one = runJson({"sweep", "--image", KVSTEER_DEMO_IMAGE, "--prompt", "What color is the circle?", "--vectors", KVSTEER_DEMO_VECTORS,
                                  "--mask", "rect:6,9,15,18", "--cv", "8,16,32", "--layers", "all,middle", "--max-new-tokens", "8", "--batch", "1",
                                  "--json"});
        for (size_t i = 0; i < 6; ++i) QCOMPARE(one["cells"][i]["ids"], j["cells"][i]["ids"]);
        const ProcessResult bad = runCli({"sweep", "--image", KVSTEER_DEMO_IMAGE, "--prompt", "x", "--layers", "first"});
        QCOMPARE(bad.exitCode, 2);   // a usage error
        QVERIFY2(bad.err.find("--layers: layers 'first'") != std::string::npos, bad.err.c_str());
    }

    // steer takes the layer words sweep takes (one parser in core), refuses a non-number in a
    // list by name, and cuts a budget the context cannot hold with a notice, as the studio does.
    void steerSharesTheLayerWordsAndCutsTheBudget() {
        const std::vector<std::string> common = {"steer", "--image", KVSTEER_DEMO_IMAGE, "--prompt", "What color is the circle?", "--vectors",
                                                 KVSTEER_DEMO_VECTORS, "--mask", "rect:6,9,15,18", "--max-new-tokens", "8", "--json"};
        auto with = [&](std::vector<std::string> extra) {
            std::vector<std::string> args = common;
            args.insert(args.end(), extra.begin(), extra.end());
            return args;
        };
        const json early = runJson(with({"--layers", "early"}));   // 4 layers: early is layer 0
        QCOMPARE(early["steered"]["ids"], runJson(with({"--layers", "0"}))["steered"]["ids"]);
        QCOMPARE(runJson(with({"--layers", "early,late"}))["steered"]["ids"], runJson(with({"--layers", "0,3"}))["steered"]["ids"]);
        const json all = runJson(with({"--layers", "all"}));
        QCOMPARE(all["steered"]["text"].get<std::string>(), std::string("blue"));
        // The plan says where each part came from: the file suggests the operator and c_v 16, the
        // mask is the flag's, the layers are the flag's here and the default (all) without it.
        QCOMPARE(all["plan"]["cv"], json::array({16.0}));
        QCOMPARE(all["plan"]["sources"], (json{{"operator", "vector file"}, {"ck", "vector file"}, {"cv", "vector file"}, {"layers", "flag"}, {"cells", "flag"}}));
        const ProcessResult echoed = runCli({"steer", "--image", KVSTEER_DEMO_IMAGE, "--prompt", "What color is the circle?", "--vectors",
                                             KVSTEER_DEMO_VECTORS, "--mask", "rect:6,9,15,18", "--max-new-tokens", "8"});
        QVERIFY2(echoed.err.find("c_v [16.0] (vector file), layers all (default), 100 of 576 cells painted (flag)") != std::string::npos,
                 echoed.err.c_str());
        const ProcessResult bad = runCli(with({"--cv", "1.5x"}));
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.find("--cv: '1.5x' is not a number") != std::string::npos, bad.err.c_str());
        const ProcessResult cut = runCli({"steer", "--image", KVSTEER_DEMO_IMAGE, "--prompt", "What color is the circle?", "--vectors",
                                          KVSTEER_DEMO_VECTORS, "--max-new-tokens", "100000", "--json"});
        QCOMPARE(cut.exitCode, 0);
        QVERIFY2(cut.err.find("--max-new-tokens 100000 is cut to 434: the prompt fills 590 of the model's 1024-token context") != std::string::npos,
                 cut.err.c_str());
        QCOMPARE(json::parse(cut.out)["max_new_tokens"].get<int>(), 434);
    }

    void paliGemmaGenerateMatchesReference() {
        std::ifstream in(referenceDir() + "/expected-paligemma/summary.json");
        const json c = json::parse(in)["cases"][0];
        QCOMPARE(c["name"].get<std::string>(), std::string("red_square"));
        const json out = runJson({"generate", "--model", referencePaliGemmaDir(), "--image", image(), "--prompt",
                                  c["prefix"].get<std::string>(), "--max-new-tokens", "20", "--json"});
        QCOMPARE(out["input_ids"].size(), c["input_ids_len"].get<size_t>());
        QCOMPARE(out["generated_ids"].get<std::vector<int64_t>>(), c["greedy_ids"].get<std::vector<int64_t>>());
    }

    void paliGemmaZeroScaleEqualsUnsteered() {
        const json out = runJson({"steer", "--model", referencePaliGemmaDir(), "--image", image(), "--prompt", "What color is the square?",
                                  "--operator", "scale", "--ck", "0", "--cv", "0", "--mask", "rect:0,0,15,15", "--max-new-tokens", "8", "--json"});
        QCOMPARE(out["steered"]["ids"], out["unsteered"]["ids"]);
        QCOMPARE(out["operator"].get<std::string>(), std::string("scale"));
        // LLaVA's whole-grid rectangle is outside PaliGemma's grid, and the message says whose grid.
        expectError({"steer", "--model", referencePaliGemmaDir(), "--image", image(), "--prompt", "x", "--operator", "scale", "--mask",
                     "rect:0,0,23,23"},
                    {"rect:0,0,23,23 is outside the model's 16x16 grid"});
    }

    void paliGemmaExtractThenSteer() {
        const std::string vectors = extractPair(referencePaliGemmaDir(), "pg.safetensors");
        const json meta = vectorsMetadata(vectors);
        QCOMPARE(meta["model_type"].get<std::string>(), std::string("paligemma"));
        QCOMPARE(meta["grid"].get<std::vector<int>>(), (std::vector<int>{16, 16}));
        QCOMPARE(meta["prompt_template"].get<std::string>(), std::string("<image><bos>{question}\n"));
        const json plain = runJson({"generate", "--model", referencePaliGemmaDir(), "--image", image(), "--prompt", "What is shown?",
                                    "--max-new-tokens", "8", "--json"});
        const json steered = runJson({"steer", "--model", referencePaliGemmaDir(), "--image", image(), "--prompt", "What is shown?",
                                      "--vectors", vectors, "--cv", "8", "--max-new-tokens", "8", "--json"});
        QCOMPARE(steered["unsteered"]["ids"], plain["generated_ids"]);
        QVERIFY(steered["steered"]["ids"] != plain["generated_ids"]);

        // Per position: one vector per cell of the 16x16 grid; a count for another grid is refused.
        const std::string perPos = extractPair(referencePaliGemmaDir(), "pg-pos.safetensors", {"--per-position"});
        std::vector<NamedTensor> tensors;
        std::map<std::string, std::string> metadata;
        {
            const SafeTensorsFile f(perPos);
            QCOMPARE(f.tensor("steer.values.0").sizes().vec(), (std::vector<int64_t>{1, 256, 16}));
            for (const auto& n : f.names()) tensors.push_back({n, n == "steer.values.1" ? f.tensor(n).narrow(1, 0, 100).clone() : f.tensor(n).clone()});
            metadata = f.metadata();
        }
        const std::string cut = tmp_.filePath("pg-cut.safetensors").toStdString();
        writeSafeTensors(cut, tensors, metadata);
        expectError({"steer", "--model", referencePaliGemmaDir(), "--image", image(), "--prompt", "x", "--vectors", cut},
                    {cut, "steer.values.1", "100 positions", "16x16 grid has 256 cells"});
    }

    // Vectors written by plain Python (numpy, bare steer.* tensors, no metadata: the shipped
    // resources/examples/python/raw_vectors.py, following docs/FORMAT.md) import for a model and
    // steer exactly like the file they came from. Debian's python3 with python3-numpy
    // (scripts/install-deps.sh).
    void vectorsFromPythonImportAndSteerAlike() {
        const std::string raw = tmp_.filePath("from-python.safetensors").toStdString();
        const ProcessResult python = runProgram("/usr/bin/python3", {KVSTEER_EXAMPLES_DIR "/python/raw_vectors.py", KVSTEER_DEMO_VECTORS, raw});
        QVERIFY2(python.exitCode == 0, (python.out + python.err).c_str());
        QVERIFY(SafeTensorsFile(raw).metadata().empty());
        const std::string imported = tmp_.filePath("imported.safetensors").toStdString();
        ProcessResult r = runCli({"vectors", "import", raw, "--out", imported, "--ck", "0", "--cv", "16"});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const std::vector<std::string> steer = {"steer", "--image", KVSTEER_DEMO_IMAGE, "--prompt", "What color is the circle?",
                                                "--mask", "rect:6,9,15,18", "--max-new-tokens", "8", "--json", "--vectors"};
        auto with = [&](const std::string& file) {
            std::vector<std::string> args = steer;
            args.push_back(file);
            return runJson(args);
        };
        const json mine = with(imported), theirs = with(KVSTEER_DEMO_VECTORS);
        QCOMPARE(mine["steered"]["ids"], theirs["steered"]["ids"]);
        QCOMPARE(mine["steered"]["text"].get<std::string>(), std::string("blue"));

        r = runCli({"vectors", "info", imported});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QVERIFY2(r.out.find("family       LLaVA-1.5") != std::string::npos && r.out.find("recipe       imported") != std::string::npos &&
                     r.out.find("steer.values.0 [2,32]") != std::string::npos,
                 r.out.c_str());
        // For a model of other shapes: refused, naming the tensor and what the model wants.
        r = runCli({"vectors", "import", raw, "--model", referenceModelDir(), "--out", tmp_.filePath("wrong.safetensors").toStdString()});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.find("steer.") != std::string::npos && r.err.find("expected [2, 16]") != std::string::npos, r.err.c_str());
    }

    void vectorFilesAreTiedToTheirFamilyAndGrid() {
        const std::string llava = extractPair(referenceModelDir(), "llava.safetensors");
        QCOMPARE(vectorsMetadata(llava)["grid"].get<std::vector<int>>(), (std::vector<int>{24, 24}));
        expectError({"steer", "--model", referencePaliGemmaDir(), "--image", image(), "--prompt", "x", "--vectors", llava},
                    {llava, "made for LLaVA-1.5 (llava) 'tiny-llava' (24x24 grid)", "the loaded model is PaliGemma (paligemma) 'tiny-paligemma' (16x16 grid)"});

        // A file from before these fields (no model_type, no grid) still loads on its own model,
        // and the config hash still refuses it elsewhere.
        std::vector<NamedTensor> tensors;
        json meta;
        {
            const SafeTensorsFile f(llava);
            for (const auto& n : f.names()) tensors.push_back({n, f.tensor(n).clone()});
            meta = json::parse(f.metadata().at("kvsteer"));
        }
        meta.erase("model_type");
        meta.erase("grid");
        const std::string old = tmp_.filePath("old.safetensors").toStdString();
        writeSafeTensors(old, tensors, {{"kvsteer", meta.dump()}});
        const ProcessResult r = runCli({"steer", "--model", referenceModelDir(), "--image", image(), "--prompt", "x", "--vectors", old,
                                        "--max-new-tokens", "2", "--json"});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        expectError({"steer", "--model", referencePaliGemmaDir(), "--image", image(), "--prompt", "x", "--vectors", old},
                    {"made for model 'tiny-llava'", "config hash"});
        // The shipped demo vectors are such a file.
        const ProcessResult demo = runCli({"steer", "--image", referenceDir() + "/images/shapes_224x224.png", "--prompt", "What color is the circle?",
                                           "--vectors", KVSTEER_DEMO_VECTORS,
                                           "--max-new-tokens", "2", "--json"});
        QVERIFY2(demo.exitCode == 0, demo.err.c_str());
    }

    void rawPromptInEveryPromptCommand() {
        const std::string q = "What is shown?", raw = "USER: <image>\nWhat is shown? ASSISTANT:";
        const std::vector<std::string> common = {"--model", referenceModelDir(), "--image", image(), "--operator", "scale", "--cv", "2",
                                                 "--max-new-tokens", "6"};
        auto steer = [&](const std::vector<std::string>& prompt) {
            std::vector<std::string> args = {"steer"};
            args.insert(args.end(), common.begin(), common.end());
            args.insert(args.end(), prompt.begin(), prompt.end());
            args.push_back("--json");
            return runJson(args);
        };
        // The raw text that is LLaVA's template around the question answers the same.
        const json templated = steer({"--prompt", q}), asIs = steer({"--raw-prompt", "--prompt", raw});
        QCOMPARE(asIs["unsteered"]["ids"], templated["unsteered"]["ids"]);
        QCOMPARE(asIs["steered"]["ids"], templated["steered"]["ids"]);

        std::vector<std::string> sweep = {"sweep", "--raw-prompt", "--prompt", raw, "--ck", "0", "--csv"};
        sweep.insert(sweep.end(), common.begin(), common.end());
        const ProcessResult r = runCli(sweep);
        QVERIFY2(r.exitCode == 0, r.err.c_str());

        const std::string file = extractPair(referenceModelDir(), "raw.safetensors", {"--raw-prompt", "--prompt", raw});
        const json meta = vectorsMetadata(file);
        QCOMPARE(meta["prompt_template"].get<std::string>(), raw);
        QCOMPARE(meta["recipe_inputs"]["raw_prompt"].get<bool>(), true);
        QVERIFY(at::equal(SafeTensorsFile(file).tensor("steer.values.0"),
                          SafeTensorsFile(extractPair(referenceModelDir(), "templated.safetensors")).tensor("steer.values.0")));

        // As in generate: the raw text must hold "<image>" once.
        expectError({"steer", "--model", referenceModelDir(), "--image", image(), "--raw-prompt", "--prompt", q}, {"exactly one \"<image>\"", "found 0"});
        expectError({"extract", "--model", referenceModelDir(), "--recipe", "image-pair", "--raw-prompt", "--prompt", q, "--image-a", image(),
                     "--image-b", other(), "--out", tmp_.filePath("x.safetensors").toStdString()},
                    {"exactly one \"<image>\""});
    }

    // One exit-code rule for every command, said in each --help: 0 done, 1 bad input or model,
    // 2 usage (one line and where the help is).
    void exitCodesFollowOneRule() {
        const std::string missing = tmp_.filePath("no-such-dir").toStdString();
        const std::string pope = tmp_.filePath("exit-pope").toStdString();
        QCOMPARE(runCli({"demo-pope", "--out", pope, "--images", "1"}).exitCode, 0);
        // Each command with an input that does not exist (or a model that does not load): exit 1.
        const std::vector<std::vector<std::string>> badInput = {
            {"generate", "--model", missing, "--prompt", "x"},
            {"inspect", "--model", missing},
            {"tokenize", "--model", missing, "--text", "x"},
            {"extract", "--recipe", "text-pairs", "--pairs", missing, "--out", tmp_.filePath("x.safetensors").toStdString()},
            {"steer", "--prompt", "x", "--image", missing},
            {"sweep", "--prompt", "x", "--image", missing, "--cv", "1"},
            {"eval", "--data", missing, "--out", tmp_.filePath("exit-eval").toStdString()},
            {"eval-merge", "--out", tmp_.filePath("exit-merged").toStdString(), missing},
            {"make-random", "--preset", "llava-micro", "--dtype", "f16", "--out", tmp_.filePath("exit-random").toStdString(), "--tokenizer-from", missing},
            {"demo-steer", "--model", missing},
            {"eval-demo", "--model", missing},
        };
        for (const auto& args : badInput) {
            const ProcessResult r = runCli(args);
            QVERIFY2(r.exitCode == 1 && r.err.find("kvsteer: error: ") != std::string::npos, (args[0] + ": " + std::to_string(r.exitCode) + " " + r.err).c_str());
        }
        for (const std::string& command : commands()) {
            const ProcessResult usage = runCli({command, "--bogus"});
            QVERIFY2(usage.exitCode == 2 && usage.err.find("see: kvsteer " + command + " --help") != std::string::npos, (command + ": " + usage.err).c_str());
            const ProcessResult help = runCli({command, "--help"});
            QVERIFY2(help.exitCode == 0 && help.out.find("Exit status: 0 done; 1 bad input or model") != std::string::npos, command.c_str());
        }
    }

    // Every command's --help lists its options, and each option that takes a value says its
    // default or that it is required. (kvsteer itself fails a --help that leaves out an option
    // its parser accepts: "kvsteer: --help of COMMAND does not describe --name", exit 1.)
    void helpListsEveryOptionWithItsDefault() {
        for (const std::string& command : commands()) {
            const ProcessResult r = runCli({command, "--help"});
            QVERIFY2(r.exitCode == 0 && r.err.empty(), (command + ": exit " + std::to_string(r.exitCode) + ", " + r.err).c_str());
            std::vector<std::string> lines;
            std::istringstream text(r.out);
            for (std::string line; std::getline(text, line);) lines.push_back(line);
            int options = 0;
            for (size_t i = 0; i < lines.size(); ++i) {
                // An option line: "  --flag ARG   meaning (default: X)", its meaning continued on
                // lines indented further (a wide flag stands on its own line, the meaning below).
                if (lines[i].rfind("  --", 0) != 0) continue;
                ++options;
                const size_t gap = lines[i].find("  ", 2);
                const std::string flag = lines[i].substr(2, gap == std::string::npos ? std::string::npos : gap - 2);
                if (flag.find(' ') == std::string::npos) continue;   // a switch: off unless given
                std::string entry = lines[i];
                for (size_t j = i + 1; j < lines.size() && lines[j].rfind("    ", 0) == 0; ++j) entry += " " + lines[j];
                QVERIFY2(entry.find("default") != std::string::npos || entry.find("required") != std::string::npos,
                         (command + " --help: " + flag + " says neither its default nor that it is required").c_str());
            }
            QVERIFY2(options > 0, (command + " --help lists no options").c_str());
        }
    }

    void helpExitsZeroEverywhere() {
        ProcessResult r = runCli({"--help"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.find("usage: kvsteer") != std::string::npos);
        QVERIFY2(r.out.find("USER: <image>\\n{q} ASSISTANT:") != std::string::npos, r.out.c_str());   // from the registry
        QVERIFY2(r.out.find("\"<bos>{prefix}\\n\"") != std::string::npos, r.out.c_str());
        QVERIFY(r.out.find("wrapped in the") == std::string::npos);
        for (const char* command : {"generate", "inspect", "extract", "steer", "sweep", "make-random", "demo-steer", "train-demo", "eval-demo",
                                    "demo-corpus", "demo-images", "eval", "eval-merge", "study", "study-merge", "demo-study"}) {
            r = runCli({command, "--help"});
            QVERIFY2(r.exitCode == 0, (std::string(command) + ": " + r.err).c_str());
            QVERIFY2(r.out.rfind(std::string("usage: kvsteer ") + command + " ", 0) == 0, r.out.c_str());
            QCOMPARE(runCli({command, "-h"}).exitCode, 0);
        }
        r = runCli({"steer", "--help"});
        QVERIFY(r.out.find("--raw-prompt") != std::string::npos && r.out.find("paligemma") != std::string::npos);
        // --help as an option's value is that value, not a request for help.
        r = runCli({"generate", "--model", referenceModelDir(), "--prompt", "--help", "--max-new-tokens", "1", "--json"});
        QVERIFY2(r.exitCode == 0 && r.out.find("generated_ids") != std::string::npos, r.err.c_str());

        r = runCli({"steer", "--bogus"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.find("kvsteer steer: unknown option --bogus") != std::string::npos, r.err.c_str());
        // A usage error is one line and where the help is, not the help itself.
        QVERIFY2(r.err.find("see: kvsteer steer --help") != std::string::npos && r.err.find("usage:") == std::string::npos, r.err.c_str());
        QCOMPARE(std::count(r.err.begin(), r.err.end(), '\n'), 2);
        r = runCli({"frobnicate"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.find("unknown command 'frobnicate'") != std::string::npos);
#ifdef KVSTEER_STUDIO_PATH
        // Without a display (none set, no platform chosen) the studio still prints its help; it
        // aborted in Qt's xcb plugin.
        r = runProgram("env", {"-u", "DISPLAY", "-u", "WAYLAND_DISPLAY", "-u", "QT_QPA_PLATFORM", KVSTEER_STUDIO_PATH, "--help"});
        QVERIFY2(r.exitCode == 0, (r.out + r.err).c_str());
        QVERIFY2(r.out.find("--model") != std::string::npos && r.out.find("--run") != std::string::npos, r.out.c_str());
        // A value that does not read is refused naming its flag, never read as 0 (--ck 0,1,x was c_k 0).
        for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
                 {"--ck", "0,1,x"}, {"--cv", "two"}, {"--max-new-tokens", "0"}, {"--layers", "3-1"}, {"--ablate-to", "half"},
                 {"--operator", "push"}, {"--threads", "-2"}, {"--heatmap-layer", "x"}}) {
            r = runProgram("env", {"QT_QPA_PLATFORM=offscreen", KVSTEER_STUDIO_PATH, flag, value});
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.find(flag) != std::string::npos && r.err.find(value) != std::string::npos, (flag + ": " + r.err).c_str());
        }
        r = runProgram("env", {"QT_QPA_PLATFORM=offscreen", KVSTEER_STUDIO_PATH, "--propagate", "--no-propagate"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.find("contradict") != std::string::npos, r.err.c_str());
#endif
#ifdef KVSTEER_BENCH_PATH
        r = runProgram(KVSTEER_BENCH_PATH, {"--help"});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QVERIFY(r.out.rfind("usage: bench", 0) == 0);
        r = runProgram(KVSTEER_BENCH_PATH, {"--bogus"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.find("unknown option --bogus") != std::string::npos);
#endif
    }


    // bench --threads 1,2 --beside-busy: a row per thread count, in that order, each saying it
    // was measured beside the busy process, and that process gone with the bench.
    void benchRowsPerThreadCountBesideABusyProcess() {
#ifndef KVSTEER_BENCH_PATH
        QSKIP("bench is not built (KVSTEER_BENCH=OFF)");
#else
        namespace fs = std::filesystem;
        const ProcessResult r = runProgram(KVSTEER_BENCH_PATH, {"--model", referenceModelDir(), "--threads", "1,2", "--beside-busy",
                                                                "--eval-images", "0", "--repeat", "1", "--new-tokens", "4", "--json"});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const nlohmann::json rows = nlohmann::json::parse(r.out);
        QCOMPARE(int(rows.size()), 2);
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(rows[i].at("threads").get<int>(), i + 1);
            QVERIFY(rows[i].at("beside_busy").get<bool>());
            QVERIFY(rows[i].at("decode_tok_s").get<double>() > 0);
        }
        const std::string bench = fs::canonical(KVSTEER_BENCH_PATH).string();
        for (const fs::directory_entry& process : fs::directory_iterator("/proc")) {
            std::error_code ec;
            const fs::path exe = fs::read_symlink(process.path() / "exe", ec);
            QVERIFY2(ec || exe.string() != bench, ("a bench process outlived the bench: " + process.path().string()).c_str());
        }
        const ProcessResult bad = runProgram(KVSTEER_BENCH_PATH, {"--threads", "1,x"});
        QCOMPARE(bad.exitCode, 1);
        QVERIFY2(bad.err.find("--threads") != std::string::npos && bad.err.find("'x'") != std::string::npos, bad.err.c_str());
#endif
    }

    void inspectNamesFamilyGridAndTemplate() {
        const ProcessResult r = runCli({"inspect", "--model", referencePaliGemmaDir()});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QVERIFY2(r.out.find("type         paligemma (PaliGemma)") != std::string::npos, r.out.c_str());
        QVERIFY2(r.out.find("16x16 = 256 patches") != std::string::npos, r.out.c_str());
        QVERIFY2(r.out.find("prompt       <image><bos>{question}\\n\n") != std::string::npos, r.out.c_str());
    }

    void textOnlySteeringOnQwen2() {
        // No --image: the prompt's tokens are the strip. The text-pair recipe, then steer at the
        // last token (the default) and at a token range; c 0 is the unsteered answer.
        const std::string model = referenceDir() + "/tiny-qwen2", pairs = tmp_.filePath("pairs.jsonl").toStdString();
        std::ofstream(pairs) << R"({"positive": "What a great day", "negative": "What an awful day"})" << "\n"
                             << R"({"positive": "The answer is yes", "negative": "The answer is no"})" << "\n";
        const std::string vectors = tmp_.filePath("qwen2-pairs.safetensors").toStdString();
        ProcessResult r = runCli({"extract", "--model", model, "--recipe", "text-pairs", "--pairs", pairs, "--out", vectors});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QCOMPARE(vectorsMetadata(vectors).at("model_type").get<std::string>(), std::string("qwen2"));
        const std::vector<std::string> steer{"steer", "--model", model, "--prompt", "Tell me about the weather", "--vectors", vectors,
                                             "--max-new-tokens", "10", "--json"};
        auto with = [&](std::vector<std::string> extra) {
            std::vector<std::string> args = steer;
            args.insert(args.end(), extra.begin(), extra.end());
            return runJson(args);
        };
        json last = with({"--ck", "8", "--cv", "8"});
        QVERIFY(last["steered"]["ids"] != last["unsteered"]["ids"]);
        json range = with({"--mask", "tokens:2-5", "--ck", "8", "--cv", "8"});
        QVERIFY(range["steered"]["ids"] != last["steered"]["ids"]);
        json zero = with({"--mask", "tokens:0-20", "--ck", "0", "--cv", "0"});
        QCOMPARE(zero["steered"]["ids"], zero["unsteered"]["ids"]);
        r = runCli({"steer", "--model", model, "--prompt", "Tell me about the weather", "--vectors", vectors, "--mask", "tokens:400"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.find("token 400 is outside the prompt's") != std::string::npos, r.err.c_str());
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
