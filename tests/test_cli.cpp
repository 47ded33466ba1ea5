// The kvsteer CLI end to end, as scripts use it: generate (--json, --dump-prefill) against the
// reference, inspect, make-random, and extract -> steer -> sweep.
#include "TestSupport.h"
#include "io/SafeTensors.h"

#include <ATen/TensorOperators.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

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

private slots:
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
        QCOMPARE(bad.exitCode, 1);
        QVERIFY(bad.err.find("unknown preset 'gpt-5'") != std::string::npos);
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
        QVERIFY(r.out.rfind("layers,ck,cv,changed,repetition,distinct,text\n", 0) == 0);

        r = runCli({"steer", "--model", referenceModelDir(), "--image", image(), "--prompt", "x", "--vectors", vectors, "--mask", "rect:0,0,30,3"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY(r.err.find("rect:0,0,30,3") != std::string::npos);
        r = runCli({"steer", "--model", referenceModelDir(), "--image", image(), "--prompt", "x", "--operator", "add"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.find("needs --vectors") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
