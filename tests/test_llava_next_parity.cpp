// Parity with Hugging Face transformers' own LLaVA-NeXT on tiny-llava-next: the anyres choice
// (best resolution, crop grid, unpadded grid, token count), ids, the views' pixel values, the
// packed image features (newline rows included), the prefill's hidden states, K/V and logits,
// cache reuse and 20 greedy ids on the three cases — from llava-hf's nested config as shipped and
// from a trimmed, sharded copy with the newer tensor names; a float16 copy keeps the answer's
// first token and its logits near.
#include "TestSupport.h"
#include "cache/KVCache.h"
#include "generate/Session.h"
#include "io/SafeTensors.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "models/llava_next/LlavaNextConfig.h"
#include "models/llava_next/LlavaNextModel.h"

#include <nlohmann/json.hpp>

#include <map>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

namespace {

std::string referenceLlavaNextDir() { return referenceDir() + "/tiny-llava-next"; }

// The hub's other dialect: everything equal to LlavaNextConfig's / LlamaConfig's defaults left
// out (the pinpoints, image_token_index, the select strategy, rope_theta, ...).
const char* kTrimmedConfig = R"({
  "architectures": ["LlavaNextForConditionalGeneration"],
  "model_type": "llava_next",
  "text_config": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-05, "vocab_size": 32064,
                  "max_position_embeddings": 4096, "model_type": "llama"},
  "vision_config": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3, "num_attention_heads": 2,
                    "image_size": 336, "patch_size": 14, "projection_dim": 32, "model_type": "clip_vision_model"}
}
)";

} // namespace

class TestLlavaNextParity : public QObject {
    Q_OBJECT

    ReferenceCases ref_{"expected-llava-next"};
    std::map<std::string, std::shared_ptr<Model>> models_;
    QTemporaryDir tmp_;

    static void addRows() { addCaseRows({"red_square", "gradient", "stripes_tall"}, {"nested", "trimmed-sharded"}); }

private slots:
    void initTestCase() {
        QVERIFY2(ref_.load(), "reference summary.json not found: is ../shared beside the checkout?");
        QVERIFY(tmp_.isValid());
        const std::string trimmed = tmp_.filePath("trimmed-sharded").toStdString(), f16 = tmp_.filePath("f16").toStdString();
        writeConvertedCopy(referenceLlavaNextDir(), trimmed, at::kFloat, 6 * 1024 * 1024, kTrimmedConfig);
        writeConvertedCopy(referenceLlavaNextDir(), f16, at::kHalf, 3 * 1024 * 1024, kTrimmedConfig);
        models_["nested"] = loadModel(referenceLlavaNextDir());
        models_["trimmed-sharded"] = loadModel(trimmed);
        models_["f16"] = loadModel(f16);
    }

    void bothDialectsReadTheSameConfig() {
        const auto& nested = dynamic_cast<const LlavaNextModel&>(*models_["nested"]);
        const auto& trimmed = dynamic_cast<const LlavaNextModel&>(*models_["trimmed-sharded"]);
        QCOMPARE(nested.familyName(), std::string("LLaVA-NeXT"));
        QCOMPARE(trimmed.config().configHash, nested.config().configHash);
        QCOMPARE(trimmed.pinpoints().size(), size_t(5));
        QVERIFY(trimmed.pinpoints() == nested.pinpoints());
        QCOMPARE(models_["f16"]->config().configHash, nested.config().configHash);
        QCOMPARE(models_["f16"]->weightsDtype(), std::string("float16"));
        QCOMPARE(nested.config().imageSeqLength(), 576 + 48 * 49);   // a picture that fills 672 x 672
        QVERIFY(QFile::exists(QString::fromStdString(tmp_.filePath("trimmed-sharded").toStdString() + "/model.safetensors.index.json")));
    }

    void mistralAndBadConfigs() {
        // llava-v1.6-mistral's trimmed text_config leans on MistralConfig's defaults; its null
        // sliding window leaves the context, the default 4096 window caps it.
        const std::string mistral = R"({"model_type": "llava_next", "text_config": {"model_type": "mistral", "sliding_window": null,
            "max_position_embeddings": 32768, "rope_theta": 1000000.0, "vocab_size": 32064}})";
        const LlavaNextConfig m = parseLlavaNextConfig(mistral, "mistral");
        QCOMPARE(m.textModelType, std::string("mistral"));
        QCOMPARE(m.model.text.intermediateSize, 14336);
        QCOMPARE(m.model.text.numKvHeads, 8);
        QCOMPARE(m.model.text.maxPositionEmbeddings, int64_t(32768));
        QCOMPARE(m.pinpoints.size(), size_t(5));   // LlavaNextConfig's defaults
        std::string windowed = mistral;
        windowed.replace(windowed.find("\"sliding_window\": null,"), 24, "");
        QCOMPARE(parseLlavaNextConfig(windowed, "windowed").model.text.maxPositionEmbeddings, int64_t(4096));
        QVERIFY(errorOf([] { parseLlavaNextConfig(R"({"model_type": "llava_next", "text_config": {"vocab_size": 32064}, "image_grid_pinpoints": [[336, 500]]})", "c"); })
                    .find("[336, 500] is not a multiple of the vision tower's image_size 336") != std::string::npos);
        QVERIFY(errorOf([] { parseLlavaNextConfig(R"({"model_type": "llava_next", "text_config": {"vocab_size": 32064}, "image_grid_pinpoints": [[336]]})", "c"); })
                    .find("image_grid_pinpoints entry [336] is not valid") != std::string::npos);
        QVERIFY(errorOf([] { parseLlavaNextConfig(R"({"model_type": "llava_next", "text_config": {"vocab_size": 32064}, "vision_feature_select_strategy": "full"})", "c"); })
                    .find("not supported for llava_next") != std::string::npos);
    }

    void anyresChoiceMatches_data() {
        QTest::addColumn<QString>("caseName");
        for (const char* c : {"red_square", "gradient", "stripes_tall"}) QTest::newRow(c) << QString(c);
    }
    void anyresChoiceMatches() {
        QFETCH(QString, caseName);
        const auto c = ref_.caseInfo(caseName.toStdString());
        const auto& model = dynamic_cast<const LlavaNextModel&>(*models_["nested"]);
        const std::vector<int> hw = c["image_hw"].get<std::vector<int>>();
        const AnyresGrid g = model.gridFor({hw[0], hw[1]});
        QCOMPARE((std::vector<int>{g.best.height, g.best.width}), c["best_resolution_hw"].get<std::vector<int>>());
        QCOMPARE((std::vector<int>{g.cropRows, g.cropCols}), c["crop_grid_hw"].get<std::vector<int>>());
        QCOMPARE(g.views(), c["pixel_values_views"].get<int>());
        QCOMPARE(g.tokens(), c["n_image_tokens"].get<int64_t>());
    }

    void idsAndPixels_data() { addRows(); }
    void idsAndPixels() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = ref_.caseInfo(caseName.toStdString());
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        const Prompt p = casePrompt(*models_[variant.toStdString()], c);
        QCOMPARE(p.text, c["prompt"].get<std::string>());
        QCOMPARE(p.ids, toIds(expected.tensor("input_ids")));
        QCOMPARE(int64_t(p.ids.size()), c["L"].get<int64_t>());
        QCOMPARE(p.span.length, c["n_image_tokens"].get<int64_t>());
        QCOMPARE(p.ids[size_t(p.span.start)], int64_t(32000));
        QCOMPARE(p.ids[size_t(p.span.start - 1)] != 32000 && p.ids[size_t(p.span.end())] != 32000, true);
        QCOMPARE(toIds(expected.tensor("image_sizes")), (std::vector<int64_t>{p.image->sourceHeight, p.image->sourceWidth}));
        QCOMPARE(maxAbsDiff(p.pixels, expected.tensor("pixel_values").squeeze(0)), 0.0);
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
        KVCache cache = session.snapshot().clone();
        const at::Tensor reuse = session.feed(cache, {session.lastPromptToken()});
        QVERIFY2(maxAbsDiff(reuse, expected.tensor("cache_reuse.last_logits").squeeze(0)) <= 1e-3, "cache_reuse.last_logits");
        const GreedyAgainstReference greedy = greedyAgainstReference(session, expected);   // 20 tokens, as generate() ran
        QCOMPARE(greedy.ids, toIds(expected.tensor("greedy_ids")));
        QCOMPARE(greedy.ids, c["greedy_ids"].get<std::vector<int64_t>>());
        QVERIFY2(greedy.worstTop5 <= 1e-3, ("top-5 logits differ by " + std::to_string(greedy.worstTop5)).c_str());
    }

    void float16WeightsStayNear_data() {
        QTest::addColumn<QString>("caseName");
        for (const char* c : {"red_square", "gradient", "stripes_tall"}) QTest::newRow(c) << QString(c);
    }
    void float16WeightsStayNear() {
        // float16 weights perturb a tiny random model's logits: the first answer token survives,
        // the logits stay near (later greedy tokens may drift, as on LLaVA-1.5's copy).
        QFETCH(QString, caseName);
        const auto c = ref_.caseInfo(caseName.toStdString());
        auto model = models_["f16"];
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        Session session(model);
        session.prefill(casePrompt(*model, c), 20);
        KVCache cache = session.snapshot().clone();
        const at::Tensor logits = session.feed(cache, {session.lastPromptToken()});
        QVERIFY(maxAbsDiff(logits, expected.tensor("prefill_last_logits").squeeze(0)) <= 0.25);
        QCOMPARE(logits.argmax(-1).item<int64_t>(), c["greedy_ids"][0].get<int64_t>());
    }
};

QTEST_GUILESS_MAIN(TestLlavaNextParity)
#include "test_llava_next_parity.moc"
