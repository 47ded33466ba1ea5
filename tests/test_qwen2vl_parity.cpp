// Parity with Hugging Face transformers' own Qwen2-VL (and Qwen2) on the reference checkpoints:
// ids, M-RoPE position ids and rope deltas, the prompt's embeddings with the merged image
// features, the causal prefill's hidden states, K/V cache (keys after M-RoPE) and logits, the
// decode positions (cache index + rope delta), cache reuse and 20 greedy tokens, on every case,
// from the float32 files and from a bfloat16, sharded, trimmed-config copy with the newer tensor
// names that the test writes itself. tiny-qwen2 (the decoder alone, plain RoPE) gives the
// text-only case bit-identically to the VL model. The vision tower has its own test.
#include "TestSupport.h"
#include "Error.h"
#include "cache/KVCache.h"
#include "generate/Session.h"
#include "io/SafeTensors.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/topk.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

class TestQwen2VlParity : public QObject {
    Q_OBJECT

    ReferenceCases ref_{"expected-qwen2vl"};
    std::map<std::string, std::shared_ptr<Model>> models_;
    QTemporaryDir tmp_;

    static void addRows() { addCaseRows({"red_square", "gradient", "shapes", "checker", "text_only"}, {"f32", "bf16-sharded"}); }

private slots:
    void initTestCase() {
        QVERIFY2(ref_.load(), "reference summary.json not found: is ../shared beside the checkout?");
        QVERIFY(tmp_.isValid());
        const std::string bf16Dir = tmp_.filePath("bf16-sharded").toStdString();
        writeConvertedQwen2Vl(bf16Dir, at::kBFloat16, 256 * 1024);
        models_["f32"] = loadModel(referenceQwen2VlDir());
        models_["bf16-sharded"] = loadModel(bf16Dir);
        models_["qwen2"] = loadModel(referenceDir() + "/tiny-qwen2");
    }

    void familiesAndConfig() {
        QCOMPARE(models_["f32"]->familyName(), std::string("Qwen2-VL"));
        QCOMPARE(models_["qwen2"]->familyName(), std::string("Qwen2"));
        QVERIFY(!models_["qwen2"]->hasVision());
        QCOMPARE(models_["bf16-sharded"]->config().configHash, models_["f32"]->config().configHash);
        // The hash vector files and sessions made for this model record: it must not move when
        // the reader grows (Qwen2.5-VL's fields are hashed only for Qwen2.5-VL).
        QCOMPARE(models_["f32"]->config().configHash, std::string("00720d787d3f0199"));
        QCOMPARE(models_["bf16-sharded"]->weightsDtype(), std::string("bfloat16"));
        const TextConfig& t = models_["bf16-sharded"]->config().text;
        QCOMPARE(t.ropeTheta, 1e6);
        QCOMPARE(t.headDim, 16);
        QCOMPARE(t.mropeSection, (std::vector<int>{2, 3, 3}));
        QVERIFY(t.qkvBiasOnly && t.tieWordEmbeddings);
    }

    void idsAndPositions_data() { addRows(); }
    void idsAndPositions() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = ref_.caseInfo(caseName.toStdString());
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        const Prompt p = casePrompt(*models_[variant.toStdString()], c);
        QCOMPARE(p.text, c["prompt"].get<std::string>());
        QCOMPARE(p.ids, toIds(expected.tensor("input_ids")));
        const int64_t delta = toIds(expected.tensor("rope_deltas"))[0];
        QCOMPARE(p.positionOffset, delta);
        if (!p.hasImage) return;
        QCOMPARE(toIds(p.positionIds), toIds(expected.tensor("position_ids")));
        // The merged grid, not square in general (gradient 10x18, checker 8x12).
        const std::vector<int64_t> merged = c["merged_grid_hw"].get<std::vector<int64_t>>();
        QCOMPARE(int64_t(p.span.gridHeight), merged[0]);
        QCOMPARE(int64_t(p.span.gridWidth), merged[1]);
        QCOMPARE(p.span.length, merged[0] * merged[1]);
        const at::Tensor resized = at::from_blob(const_cast<uint8_t*>(p.image->resized.rgb.data()),
                                                 {p.image->resized.height, p.image->resized.width, 3}, at::kByte);
        QVERIFY(maxAbsDiff(resized, expected.tensor("image_resized_u8")) <= 1.0);
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
        // The seed complaint: prefill L-1, feed the last token through the cache = full prefill.
        KVCache cache = session.snapshot().clone();
        const at::Tensor reuse = session.feed(cache, {session.lastPromptToken()});
        QVERIFY2(maxAbsDiff(reuse, expected.tensor("cache_reuse.last_logits").squeeze(0)) <= 1e-3, "cache_reuse.last_logits");
        QVERIFY2(maxAbsDiff(reuse, expected.tensor("prefill_last_logits").squeeze(0)) <= 1e-3, "= full prefill");

        // Fed-back tokens sit at cache index + rope delta in every row.
        const int64_t n = int64_t(session.prompt().ids.size());
        const at::Tensor decodePositions = session.snapshot().positions(n, 19).select(0, 0);
        QCOMPARE(toIds(decodePositions), toIds(expected.tensor("decode_position_ids")));

        const GreedyAgainstReference g = greedyAgainstReference(session, expected);
        QCOMPARE(g.ids, toIds(expected.tensor("greedy_ids")));
        QVERIFY2(g.worstTop5 <= 1e-3, ("top-5 logits differ by " + std::to_string(g.worstTop5)).c_str());
        QCOMPARE(g.text, c["greedy_text"].get<std::string>());
    }

    void qwen2TextModelIsTheSameDecoder() {
        // tiny-qwen2: plain RoPE, model_type qwen2. On text, M-RoPE's three equal rows are RoPE, so
        // the VL model and the text model agree bit for bit, and both match the reference.
        const SafeTensorsFile expected(ref_.tensorsPath("qwen2_text_only"));
        const auto c = ref_.caseInfo("text_only");
        Session text(models_["qwen2"]), vl(models_["f32"]);
        text.prefill(casePrompt(*models_["qwen2"], c), 20);
        vl.prefill(casePrompt(*models_["f32"], c), 20);
        QCOMPARE(text.prompt().ids, toIds(expected.tensor("input_ids")));
        for (int l = 0; l < 3; ++l) {
            QVERIFY(at::equal(text.snapshot().keys(l), vl.snapshot().keys(l)));
            QVERIFY(at::equal(text.snapshot().values(l), vl.snapshot().values(l)));
            QVERIFY(relativeDiff(text.snapshot().keys(l), expected.tensor("past_key." + std::to_string(l)).narrow(2, 0, text.snapshot().size())) <=
                    1e-4);
        }
        GenerationOptions gen;
        gen.maxNewTokens = 20;
        gen.stopAtEos = false;
        const Generation a = text.generate(gen), b = vl.generate(gen);
        QCOMPARE(a.ids, b.ids);
        QCOMPARE(a.ids, toIds(expected.tensor("greedy_ids")));
    }
};

QTEST_GUILESS_MAIN(TestQwen2VlParity)
#include "test_qwen2vl_parity.moc"
