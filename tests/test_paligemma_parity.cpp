// Parity with Hugging Face transformers' own PaliGemma on the reference checkpoint, stage by
// stage: ids and 1-indexed positions, pixels, SigLIP, projector, the scaled embeddings, the
// bidirectional (prefix-LM) prefill's hidden states, K/V cache and logits, and 20 greedy tokens.
// Run on the float32 file as shipped and on a bfloat16, sharded, trimmed-config copy with the
// newer tensor names that the test writes itself (every reference weight is exactly
// representable in bfloat16, so both must give the same numbers). And the loop: "prefill L-1,
// then decode" is not what PaliGemma does; kvsteer's Session gives the full prefill's logits.
#include "TestSupport.h"
#include "Error.h"
#include "cache/KVCache.h"
#include "generate/Session.h"
#include "io/SafeTensors.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "models/paligemma/PaliGemmaModel.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/topk.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;


class TestPaliGemmaParity : public QObject {
    Q_OBJECT

    ReferenceCases ref_{"expected-paligemma"};
    std::map<std::string, std::shared_ptr<PaliGemmaModel>> models_;
    QTemporaryDir tmp_;

    Prompt promptFor(const Model& model, const nlohmann::json& c) {
        const ImageU8 image = loadImage(referenceDir() + "/images/" + c["image"].get<std::string>());
        return buildPrompt(model, c["prefix"].get<std::string>(), false, &image);
    }

    // The decoder over the whole prompt in one pass, prefix-LM as transformers runs it.
    static at::Tensor fullPrefill(const Model& model, const std::vector<int64_t>& ids, const at::Tensor& features, KVCache& cache,
                                  bool bidirectional) {
        const TextConfig& t = model.config().text;
        cache = KVCache(t.numLayers, 1, t.numKvHeads, t.headDim, static_cast<int64_t>(ids.size()) + 1, at::kFloat);
        cache.positionOffset = 1;   // PaliGemma's rule
        ForwardPass pass;
        pass.bidirectional = bidirectional;
        return model.decoder().forward(model.embedPrompt(ids, features), cache, &pass);
    }

    static void addRows() {
        QTest::addColumn<QString>("caseName");
        QTest::addColumn<QString>("variant");
        for (const char* v : {"f32", "bf16-sharded"})
            for (const char* c : {"red_square", "gradient", "shapes"})
                QTest::newRow((std::string(c) + "/" + v).c_str()) << QString(c) << QString(v);
    }

private slots:
    void initTestCase() {
        QVERIFY2(ref_.load(), "reference summary.json not found: is ../shared beside the checkout?");
        QVERIFY(tmp_.isValid());
        const std::string bf16Dir = tmp_.filePath("bf16-sharded").toStdString();
        writeConvertedPaliGemma(bf16Dir, at::kBFloat16, 256 * 1024);   // 600 KB of weights: 3 shards
        for (auto [variant, dir] : {std::pair<std::string, std::string>{"f32", referencePaliGemmaDir()}, {"bf16-sharded", bf16Dir}}) {
            models_[variant] = std::dynamic_pointer_cast<PaliGemmaModel>(loadModel(dir));
            QVERIFY2(models_[variant], ("not loaded as PaliGemma: " + dir).c_str());
        }
    }

    void configDefaultsAndLayout() {
        for (const auto& [variant, model] : models_) {
            const ModelConfig& c = model->config();
            QCOMPARE(c.modelType, std::string("paligemma"));
            QCOMPARE(c.text.headDim, 16);
            QCOMPARE(c.text.numKvHeads, 1);
            QCOMPARE(c.text.rmsNormEps, 1e-6);
            QCOMPARE(c.text.ropeTheta, 10000.0);
            QVERIFY(c.text.tieWordEmbeddings && c.text.normAddsOne && c.text.scaleEmbeddings);
            QCOMPARE(c.vision.imageSize, 224);
            QCOMPARE(c.vision.gridSize(), 16);
            QCOMPARE(c.imageSeqLength(), 256);
            QCOMPARE(model->parameterCount(), int64_t(303104));
            QVERIFY(model->promptAttention() == PromptAttention::Bidirectional);
        }
        // The trimmed config describes the same model: steering files of one fit the other.
        QCOMPARE(models_["bf16-sharded"]->config().configHash, models_["f32"]->config().configHash);
        QCOMPARE(models_["bf16-sharded"]->weightsDtype(), std::string("bfloat16"));
        const std::string dir = tmp_.filePath("bf16-sharded").toStdString();
        QVERIFY(QFile::exists(QString::fromStdString(dir + "/model.safetensors.index.json")));
        SafeTensorsFile first(dir + "/model-00001-of-00003.safetensors");
        for (const auto& name : first.names()) QVERIFY2(name.rfind("model.", 0) == 0, name.c_str());
    }

    void inputIdsPositionsAndPixels_data() { addRows(); }
    void inputIdsPositionsAndPixels() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = ref_.caseInfo(caseName.toStdString());
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        const Prompt p = promptFor(*models_[variant.toStdString()], c);
        QCOMPARE(p.ids, toIds(expected.tensor("input_ids")));
        const at::Tensor positions = at::arange(p.positionOffset, p.positionOffset + int64_t(p.ids.size()), at::kLong);
        QCOMPARE(toIds(positions), toIds(expected.tensor("position_ids")));
        // The image tokens come first: visual token i is grid cell (i / 16, i % 16).
        QCOMPARE(p.span.start, int64_t(0));
        QCOMPARE(p.span.length, int64_t(256));
        QCOMPARE(p.span.gridHeight, 16);
        QCOMPARE(p.span.gridWidth, 16);
        // A direct bicubic resize to 224x224 (no crop); ≤ 1 level on the resize, exact after it.
        const ImageU8& r = p.image->resized;
        QCOMPARE(r.width, 224);
        QCOMPARE(r.height, 224);
        at::Tensor resized = at::from_blob(const_cast<uint8_t*>(r.rgb.data()), {224, 224, 3}, at::kByte);
        const double resizeDiff = maxAbsDiff(resized, expected.tensor("image_resized_u8"));
        QVERIFY(resizeDiff <= 1.0);
        if (resizeDiff == 0) QCOMPARE(maxAbsDiff(p.pixels, expected.tensor("pixel_values")), 0.0);
    }

    void visionProjectorAndEmbeddings_data() { addRows(); }
    void visionProjectorAndEmbeddings() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto& model = *models_[variant.toStdString()];
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        // The reference pixels, so each stage is judged on its own.
        const at::Tensor pixels = expected.tensor("pixel_values");
        at::Tensor embeddings;
        const at::Tensor hidden = model.visionHidden(pixels, &embeddings);
        QVERIFY2(relativeDiff(embeddings, expected.tensor("vision_embeddings")) <= 1e-4, "vision_embeddings");
        QVERIFY2(relativeDiff(hidden, expected.tensor("vision_last_hidden_state")) <= 1e-4, "vision_last_hidden_state");
        QVERIFY2(relativeDiff(model.project(expected.tensor("vision_last_hidden_state")), expected.tensor("image_features")) <= 1e-4,
                 "image_features");
        const at::Tensor features = model.encodeImage(pixels);
        QVERIFY2(relativeDiff(features, expected.tensor("image_features_scaled").squeeze(0)) <= 1e-4, "image_features_scaled");
        const std::vector<int64_t> ids = toIds(expected.tensor("input_ids"));
        QVERIFY2(relativeDiff(model.embedPrompt(ids, features), expected.tensor("inputs_embeds")) <= 1e-4, "inputs_embeds");
    }

    void bidirectionalPrefill_data() { addRows(); }
    void bidirectionalPrefill() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto& model = *models_[variant.toStdString()];
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        const std::vector<int64_t> ids = toIds(expected.tensor("input_ids"));
        KVCache cache;
        const at::Tensor hidden = fullPrefill(model, ids, expected.tensor("image_features_scaled").squeeze(0), cache, true);
        QVERIFY2(relativeDiff(hidden, expected.tensor("last_hidden_state")) <= 1e-4, "last_hidden_state");
        const at::Tensor logits = model.decoder().logits(hidden.select(1, hidden.size(1) - 1));
        QVERIFY2(maxAbsDiff(logits, expected.tensor("prefill_last_logits")) <= 1e-3, "prefill_last_logits");
        QVERIFY2(cacheRelativeDiff(cache, expected) <= 1e-4, "past_key (after RoPE) / past_value");
    }

    void causalResumeIsNotPaliGemma_data() { addRows(); }
    void causalResumeIsNotPaliGemma() {
        // "Prefill L-1 tokens, then feed the last through the cache": what a LLaVA loop does. The
        // earlier tokens never see the last one, so the logits are the reference's causal_resume
        // ones — measurably not the model's answer.
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        auto model = models_[variant.toStdString()];
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        std::vector<int64_t> ids = toIds(expected.tensor("input_ids"));
        const int64_t last = ids.back();
        ids.pop_back();
        KVCache cache;
        fullPrefill(*model, ids, expected.tensor("image_features_scaled").squeeze(0), cache, true);
        Session session(model);
        const at::Tensor resumed = session.feed(cache, {last});
        QVERIFY2(maxAbsDiff(resumed, expected.tensor("causal_resume.last_logits").squeeze(0)) <= 1e-3, "causal_resume.last_logits");
        QVERIFY(maxAbsDiff(resumed, expected.tensor("prefill_last_logits").squeeze(0)) > 0.1);

        // kvsteer's loop: the snapshot holds L-1 positions that have seen the last token, and
        // feeding it against them gives the full prefill's logits and K/V.
        session.prefill(promptFor(*model, ref_.caseInfo(caseName.toStdString())), 20);
        const int64_t n = int64_t(ids.size());
        QCOMPARE(session.snapshot().size(), n);
        QCOMPARE(session.snapshot().positionOffset, int64_t(1));
        KVCache full = session.snapshot().clone();
        const at::Tensor first = session.feed(full, {session.lastPromptToken()});
        QVERIFY2(maxAbsDiff(first, expected.tensor("prefill_last_logits").squeeze(0)) <= 1e-3, "first answer logits");
        QVERIFY2(cacheRelativeDiff(full, expected) <= 1e-4, "keys / values");
    }

    void greedyAnswer_data() { addRows(); }
    void greedyAnswer() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = ref_.caseInfo(caseName.toStdString());
        auto model = models_[variant.toStdString()];
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        Session session(model);
        session.prefill(promptFor(*model, c), 20);
        const GreedyAgainstReference g = greedyAgainstReference(session, expected);
        QCOMPARE(g.ids, toIds(expected.tensor("greedy_ids")));
        QVERIFY2(g.worstTop5 <= 1e-3, ("top-5 logits differ by " + std::to_string(g.worstTop5)).c_str());
        QCOMPARE(g.text, c["greedy_text"].get<std::string>());
    }

    void zeroIndexedPositionsWouldBeWrong() {
        // RoPE is relative, so the logits hardly notice a shift; the cached keys do.
        auto model = models_["f32"];
        const SafeTensorsFile expected(ref_.tensorsPath("red_square"));
        const std::vector<int64_t> ids = toIds(expected.tensor("input_ids"));
        const TextConfig& t = model->config().text;
        KVCache shifted(t.numLayers, 1, t.numKvHeads, t.headDim, int64_t(ids.size()), at::kFloat);
        ForwardPass pass;
        pass.bidirectional = true;
        model->decoder().forward(model->embedPrompt(ids, expected.tensor("image_features_scaled").squeeze(0)), shifted, &pass);
        QVERIFY(relativeDiff(shifted.keys(1), expected.tensor("past_key.1")) > 0.1);
    }
};

QTEST_GUILESS_MAIN(TestPaliGemmaParity)
#include "test_paligemma_parity.moc"
