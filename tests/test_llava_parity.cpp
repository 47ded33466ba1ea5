// Parity with Hugging Face transformers' own LLaVA on the reference checkpoint, stage by stage:
// ids, pixels, vision tower, projector, merged embeddings, decoder hidden states, K/V cache,
// logits and 20 greedy tokens. Run on the float32 file as shipped, and on a float16, sharded,
// trimmed-config copy with the newer tensor names that the test writes itself.
#include "TestSupport.h"
#include "Error.h"
#include "cache/KVCache.h"
#include "models/llava/LlavaModel.h"
#include "io/SafeTensors.h"
#include "models/Prompt.h"
#include "generate/Session.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/topk.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

class TestLlavaParity : public QObject {
    Q_OBJECT

    nlohmann::json summary_;
    std::map<std::string, std::shared_ptr<LlavaModel>> models_;
    QTemporaryDir tmp_;

    nlohmann::json caseInfo(const std::string& name) const {
        for (const auto& c : summary_["cases"])
            if (c["name"] == name) return c;
        throw Error("no case " + name);
    }

    Prompt promptFor(const LlavaModel& model, const nlohmann::json& c) {
        if (c["image"].is_null()) return buildPrompt(model, c["prompt"].get<std::string>(), true, nullptr);
        const ImageU8 image = loadImage(referenceDir() + "/images/" + c["image"].get<std::string>());
        return buildPrompt(model, c["prompt"].get<std::string>(), true, &image);
    }

    static void addRows() {
        QTest::addColumn<QString>("caseName");
        QTest::addColumn<QString>("variant");
        for (const char* v : {"f32", "f16-sharded"})
            for (const char* c : {"red_square", "gradient", "text_only"})
                QTest::newRow((std::string(c) + "/" + v).c_str()) << QString(c) << QString(v);
    }

private slots:
    void initTestCase() {
        std::ifstream in(referenceDir() + "/expected/summary.json");
        QVERIFY2(in.good(), "reference summary.json not found: is ../shared beside the checkout?");
        summary_ = nlohmann::json::parse(in);
        QVERIFY(tmp_.isValid());
        const std::string f16Dir = tmp_.filePath("f16-sharded").toStdString();
        // 4.2 M float16 parameters ~ 8.6 MB: 3 MB shards give several files, like a real download.
        writeConvertedReferenceModel(f16Dir, at::kHalf, 3 * 1024 * 1024);
        const std::string bf16Dir = tmp_.filePath("bf16-sharded").toStdString();
        writeConvertedReferenceModel(bf16Dir, at::kBFloat16, 3 * 1024 * 1024);
        models_["f32"] = LlavaModel::load(referenceModelDir());
        // The default path: 16-bit weights stay 16-bit (mmap views), the kernels widen them.
        models_["f16-sharded"] = LlavaModel::load(f16Dir);
        models_["bf16-sharded"] = LlavaModel::load(bf16Dir);
        // The same files widened once at load (--dtype f32): the path the kernels must equal.
        LoadOptions widen;
        widen.dtype = "f32";
        models_["f16-widened"] = LlavaModel::load(f16Dir, widen);
        models_["bf16-widened"] = LlavaModel::load(bf16Dir, widen);
    }

    void sixteenBitWeightsStaySixteenBit() {
        QCOMPARE(models_["f16-sharded"]->weightsDtype(), std::string("float16"));
        QCOMPARE(models_["bf16-sharded"]->weightsDtype(), std::string("bfloat16"));
        QCOMPARE(models_["f16-widened"]->weightsDtype(), std::string("float32"));
        QCOMPARE(models_["f32"]->weightsDtype(), std::string("float32"));
    }

    void keptSixteenBitEqualsWidened_data() {
        QTest::addColumn<QString>("caseName");
        QTest::addColumn<QString>("dtype");
        for (const char* d : {"f16", "bf16"})
            for (const char* c : {"red_square", "gradient", "text_only"})
                QTest::newRow((std::string(c) + "/" + d).c_str()) << QString(c) << QString(d);
    }
    void keptSixteenBitEqualsWidened() {
        // f16/bf16 -> f32 is exact, so the kernels on kept 16-bit weights and ATen on the widened
        // copy differ only in summation order: the same cache to float32 rounding, the same
        // greedy answer token for token.
        QFETCH(QString, caseName);
        QFETCH(QString, dtype);
        const auto c = caseInfo(caseName.toStdString());
        auto kept = models_[dtype.toStdString() + "-sharded"], widened = models_[dtype.toStdString() + "-widened"];
        Session a(kept), b(widened);
        a.prefill(promptFor(*kept, c), 20);
        b.prefill(promptFor(*widened, c), 20);
        for (int l = 0; l < kept->config().text.numLayers; ++l) {
            QVERIFY2(maxAbsDiff(a.snapshot().keys(l), b.snapshot().keys(l)) <= 1e-4, "keys");
            QVERIFY2(maxAbsDiff(a.snapshot().values(l), b.snapshot().values(l)) <= 1e-4, "values");
        }
        GenerationOptions gen;
        gen.maxNewTokens = 20;
        gen.stopAtEos = false;
        const Generation ga = a.generate(gen), gb = b.generate(gen);
        QCOMPARE(ga.ids, gb.ids);
        // float16 weights keep HF's float32 answer on these cases; bfloat16's 8-bit mantissa moves
        // the tiny model's logits enough to change it (the weights' rounding, not the kernels':
        // the widened bfloat16 model answers the same as the kept one, checked above).
        if (dtype == "f16") QCOMPARE(ga.ids, toIds(SafeTensorsFile(referenceTensorsPath(caseName.toStdString())).tensor("greedy_ids")));
    }

    void f16CopyIsShardedWithNewNames() {
        const std::string dir = tmp_.filePath("f16-sharded").toStdString();
        QVERIFY(QFile::exists(QString::fromStdString(dir + "/model.safetensors.index.json")));
        QVERIFY(!QFile::exists(QString::fromStdString(dir + "/model.safetensors")));
        QVERIFY(QFile::exists(QString::fromStdString(dir + "/model-00001-of-00003.safetensors")));
        SafeTensorsFile first(dir + "/model-00001-of-00003.safetensors");
        for (const auto& name : first.names()) {
            QVERIFY2(name.rfind("language_model.", 0) != 0 && name.rfind("vision_tower.", 0) != 0, name.c_str());
            QCOMPARE(first.info(name).dtype, std::string("F16"));
        }
        QCOMPARE(models_["f16-sharded"]->parameterCount(), int64_t(4284576));
        QCOMPARE(models_["f32"]->parameterCount(), int64_t(4284576));
    }

    void plainLlamaDirectoryForTextOnly() {
        // The language model alone, saved as a plain Llama, answers the text-only case identically.
        const std::string dir = tmp_.filePath("llama").toStdString();
        writePlainLlamaFromReference(dir);
        auto llama = LlavaModel::load(dir);
        QVERIFY(!llama->hasVision());
        const auto c = caseInfo("text_only");
        Session session(llama);
        session.prefill(promptFor(*llama, c), 20);
        GenerationOptions gen;
        gen.maxNewTokens = 20;
        gen.stopAtEos = false;
        QCOMPARE(session.generate(gen).ids, c["greedy_ids"].get<std::vector<int64_t>>());
        const ImageU8 image = loadImage(referenceDir() + "/images/red_square_336x336.png");
        QVERIFY_THROWS_EXCEPTION(Error, buildPrompt(*llama, "What is this?", false, &image));
    }

    void inputIdsAndPixels_data() { addRows(); }
    void inputIdsAndPixels() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = caseInfo(caseName.toStdString());
        const SafeTensorsFile expected(referenceTensorsPath(caseName.toStdString()));
        const Prompt p = promptFor(*models_[variant.toStdString()], c);
        QCOMPARE(p.ids, toIds(expected.tensor("input_ids")));
        if (!p.hasImage) return;
        QCOMPARE(p.span.start, c["image_token_span"][0].get<int64_t>());
        QCOMPARE(p.span.end(), c["image_token_span"][1].get<int64_t>());
        // The resize may differ by one uint8 level; crop and normalisation must be exact.
        at::Tensor resized = at::from_blob(const_cast<uint8_t*>(p.image->resized.rgb.data()),
                                           {p.image->resized.height, p.image->resized.width, 3}, at::kByte);
        QVERIFY(maxAbsDiff(resized, expected.tensor("image_resized_u8")) <= 1.0);
        at::Tensor cropped = at::from_blob(const_cast<uint8_t*>(p.image->cropped.rgb.data()), {336, 336, 3}, at::kByte);
        const double cropDiff = maxAbsDiff(cropped, expected.tensor("image_cropped_u8"));
        QVERIFY(cropDiff <= 1.0);
        if (cropDiff == 0) QCOMPARE(maxAbsDiff(p.pixels, expected.tensor("pixel_values")), 0.0);
    }

    void visionAndProjector_data() { addRows(); }
    void visionAndProjector() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = caseInfo(caseName.toStdString());
        if (c["image"].is_null()) QSKIP("text-only case has no image");
        const auto& model = *models_[variant.toStdString()];
        const SafeTensorsFile expected(referenceTensorsPath(caseName.toStdString()));
        // Feed the reference pixels so this stage is judged on its own.
        at::Tensor pixels = expected.tensor("pixel_values");
        at::Tensor embeddings;
        at::Tensor selected = model.visionHidden(pixels, &embeddings);
        const double tol = variant == "f32" ? 1e-4 : 1e-2;
        QVERIFY2(maxAbsDiff(embeddings, expected.tensor("vision_embeddings")) <= tol, "vision_embeddings");
        QVERIFY2(maxAbsDiff(selected, expected.tensor("vision_selected")) <= tol, "vision_selected");
        const double featureDiff = maxAbsDiff(model.encodeImage(pixels), expected.tensor("image_features").squeeze(0));
        QVERIFY2(featureDiff <= tol, ("image_features differ by " + std::to_string(featureDiff)).c_str());
    }

    void decoderAndCache_data() { addRows(); }
    void decoderAndCache() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = caseInfo(caseName.toStdString());
        const auto& model = *models_[variant.toStdString()];
        const SafeTensorsFile expected(referenceTensorsPath(caseName.toStdString()));
        const std::vector<int64_t> ids = toIds(expected.tensor("input_ids"));
        at::Tensor features = c["image"].is_null() ? at::Tensor() : expected.tensor("image_features").squeeze(0);
        const bool exact = variant == "f32";

        at::Tensor embeds = model.embedPrompt(ids, features);
        QVERIFY(maxAbsDiff(embeds, expected.tensor("inputs_embeds")) <= (exact ? 1e-4 : 1e-2));

        const TextConfig& t = model.config().text;
        KVCache cache(t.numLayers, 1, t.numKvHeads, t.headDim, static_cast<int64_t>(ids.size()), at::kFloat);
        at::Tensor hidden = model.decoder().forward(embeds, cache);
        QCOMPARE(cache.size(), static_cast<int64_t>(ids.size()));
        at::Tensor logits = model.decoder().logits(hidden.select(1, hidden.size(1) - 1));
        if (exact) {
            QVERIFY2(maxAbsDiff(hidden, expected.tensor("last_hidden_state")) <= 1e-4, "last_hidden_state");
            QVERIFY2(maxAbsDiff(logits, expected.tensor("prefill_last_logits")) <= 1e-3, "prefill_last_logits");
            for (int l = 0; l < t.numLayers; ++l) {
                QVERIFY2(maxAbsDiff(cache.keys(l), expected.tensor("past_key." + std::to_string(l))) <= 1e-4, "past_key");
                QVERIFY2(maxAbsDiff(cache.values(l), expected.tensor("past_value." + std::to_string(l))) <= 1e-4, "past_value");
            }
        } else {
            // float16 weights perturb the numbers; the argmax must survive.
            QCOMPARE(logits.argmax(-1).item<int64_t>(), c["prefill_argmax"].get<int64_t>());
            QVERIFY(maxAbsDiff(logits, expected.tensor("prefill_last_logits")) <= 0.25);
        }
    }

    void greedyAndCacheReuse_data() { addRows(); }
    void greedyAndCacheReuse() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = caseInfo(caseName.toStdString());
        auto model = models_[variant.toStdString()];
        const SafeTensorsFile expected(referenceTensorsPath(caseName.toStdString()));
        Session session(model);
        session.prefill(promptFor(*model, c), 20);
        QCOMPARE(session.snapshot().size(), static_cast<int64_t>(c["input_ids_len"].get<int>() - 1));

        // Cache reuse: the last prompt token through the L-1 cache.
        KVCache cache = session.snapshot().clone();
        at::Tensor reuse = session.feed(cache, {session.lastPromptToken()});
        if (variant == "f32") QVERIFY(maxAbsDiff(reuse, expected.tensor("cache_reuse.last_logits").squeeze(0)) <= 1e-3);

        GenerationOptions gen;
        gen.maxNewTokens = 20;
        gen.stopAtEos = false;
        at::Tensor top5Logits = expected.tensor("greedy_top5_logits"), top5Ids = expected.tensor("greedy_top5_ids");
        double worstTop5 = 0;
        const Generation g = session.generate(gen, [&](const TokenEvent& ev) {
            auto top = at::topk(*ev.logits, 5);
            worstTop5 = std::max(worstTop5, maxAbsDiff(std::get<0>(top), top5Logits[ev.step]));
        });
        QCOMPARE(g.ids, toIds(expected.tensor("greedy_ids")));
        if (variant == "f32") {
            QVERIFY2(worstTop5 <= 1e-3, ("top-5 logits differ by " + std::to_string(worstTop5)).c_str());
            QCOMPARE(g.text, c["greedy_text"].get<std::string>());
        }
    }
};

QTEST_GUILESS_MAIN(TestLlavaParity)
#include "test_llava_parity.moc"
