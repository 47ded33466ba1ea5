// Parity with Hugging Face transformers' own Qwen3-VL on tiny-qwen3vl (transformers 5.3, float32):
// the config in both dialects and its defaults, ids, pixels, M-RoPE positions and rope deltas,
// every stage of the tower (patch embedding, the interpolated position table, the blocks, the
// merger and every DeepStack merger), each decoder layer's input (DeepStack added), K/V, logits,
// cache reuse, 20 greedy ids with their top-5 logits at every step, on every case — also from a
// bfloat16 copy with the config in the other dialect, sharded (the reference's weights are
// bfloat16 numbers, so it must match the reference itself). Then DeepStack where steering meets
// it: a recompute of the prompt from inside the image gives the prefill's K/V bit for bit, a zero
// plan changes nothing, and a vector from two images turns the gradient's answer on its grid. The
// checks read the checkpoint's config and the reference's summary, not tiny-qwen3vl's sizes.
#include "TestSupport.h"
#include "cache/KVCache.h"
#include "generate/Session.h"
#include "io/SafeTensors.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "models/common/TransformerDecoder.h"
#include "models/qwen3vl/Qwen3VlConfig.h"
#include "models/qwen3vl/Qwen3VlModel.h"
#include "steer/Recipes.h"
#include "steer/SideBySide.h"
#include "steer/SteeringPlan.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

namespace {

// Every layer's K and V equal bit for bit over the first `n` positions.
bool sameCache(const KVCache& a, const KVCache& b, int64_t n, std::string* where) {
    for (int l = 0; l < a.numLayers(); ++l)
        for (bool keys : {true, false}) {
            const at::Tensor x = (keys ? a.keys(l) : a.values(l)).narrow(2, 0, n), y = (keys ? b.keys(l) : b.values(l)).narrow(2, 0, n);
            if (!at::equal(x, y)) {
                *where = std::string(keys ? "keys" : "values") + " of layer " + std::to_string(l);
                return false;
            }
        }
    return true;
}

} // namespace

class TestQwen3VlParity : public QObject {
    Q_OBJECT

    ReferenceCases ref_{"expected-qwen3vl"};
    std::map<std::string, std::shared_ptr<Model>> models_;
    QTemporaryDir tmp_;

    static void addRows() { addCaseRows({"red_square", "gradient", "text_only"}, {"own", "other-dialect-bf16"}); }

private slots:
    void initTestCase() {
        QVERIFY2(ref_.load(), "reference summary.json not found: is ../shared beside the checkout?");
        QVERIFY(tmp_.isValid());
        const std::string other = tmp_.filePath("other").toStdString();
        writeConvertedQwen3Vl(other, at::kBFloat16, 256 * 1024);
        models_["own"] = loadModel(referenceQwen3VlDir());
        models_["other-dialect-bf16"] = loadModel(other);
    }

    // The checkpoint's config and its copy in the other dialect read alike, and as transformers
    // reads the files: the keys they state, and transformers' defaults for the rest.
    void bothDialectsReadTheSameConfig() {
        const Model& own = *models_["own"];
        const Model& other = *models_["other-dialect-bf16"];
        QCOMPARE(own.familyName(), std::string("Qwen3-VL"));
        QCOMPARE(other.config().configHash, own.config().configHash);
        QCOMPARE(other.weightsDtype(), std::string("bfloat16"));
        const nlohmann::json c = nlohmann::json::parse(std::ifstream(referenceQwen3VlDir() + "/config.json"));
        const nlohmann::json& text = c["text_config"];
        const nlohmann::json rope = text.contains("rope_parameters") ? text["rope_parameters"] : text.value("rope_scaling", nlohmann::json::object());
        for (const Model* m : {&own, &other}) {
            const TextConfig& t = m->config().text;
            QCOMPARE(t.headDim, text.value("head_dim", 128));
            QCOMPARE(t.ropeTheta, rope.value("rope_theta", text.value("rope_theta", 500000.0)));
            QCOMPARE(t.mropeSection, rope.value("mrope_section", std::vector<int>{24, 20, 20}));
            QVERIFY(t.mropeInterleaved && t.qkNorm && !t.qkvBiasOnly);
            QVERIFY2(t.tieWordEmbeddings == c.value("tie_word_embeddings", false), "the top level's tie_word_embeddings counts, not text_config's");
            const Qwen3VisionConfig& v = dynamic_cast<const Qwen3VlModel&>(*m).visionTower().config();
            QCOMPARE(v.positionSide() * v.positionSide(), c["vision_config"].value("num_position_embeddings", 2304));
            QCOMPARE(v.deepstackVisualIndexes, c["vision_config"].value("deepstack_visual_indexes", std::vector<int>{8, 16, 24}));
            const auto& processor = dynamic_cast<const Qwen3VlModel&>(*m).imageConfig();
            QCOMPARE(processor.maxPixels, ref_.summary["image_processor"]["max_pixels"].get<int64_t>());
            QCOMPARE(processor.minPixels, ref_.summary["image_processor"]["min_pixels"].get<int64_t>());
            QCOMPARE(processor.mean[0], 0.5f);
            QCOMPARE(processor.factor(), v.patchSize * v.spatialMergeSize);
        }
        // Another family's model is another model: its vector files do not fit this one.
        QVERIFY(loadModel(referenceQwen25VlDir())->config().configHash != own.config().configHash);
    }

    // What a trimmed config leaves to transformers' defaults, and what it refuses.
    void configDefaultsAndErrors() {
        const std::string minimal = R"({"model_type": "qwen3_vl", "tie_word_embeddings": false,
            "text_config": {"hidden_size": 2560, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 9728,
                            "num_hidden_layers": 36, "tie_word_embeddings": true},
            "vision_config": {"out_hidden_size": 2560}})";
        const Qwen3VlConfig q = parseQwen3VlConfig(minimal, "c.json");
        QCOMPARE(q.model.text.headDim, 128);   // not 2560 / 32 = 80
        QCOMPARE(q.model.text.ropeTheta, 500000.0);
        QCOMPARE(q.model.text.mropeSection, (std::vector<int>{24, 20, 20}));
        QCOMPARE(q.model.text.rmsNormEps, 1e-6);
        QVERIFY(!q.model.text.tieWordEmbeddings);
        QCOMPARE(q.model.imageTokenIndex, int64_t(151655));
        QCOMPARE(q.vision.deepstackVisualIndexes, (std::vector<int>{8, 16, 24}));
        QCOMPARE(q.vision.positionSide(), 48);

        const std::vector<std::pair<std::string, std::string>> bad = {
            {R"({"model_type": "qwen3_vl", "hidden_size": 64})", "text_config"},
            {R"({"model_type": "qwen3_vl", "text_config": {"rope_scaling": {"rope_type": "yarn", "mrope_section": [24, 20, 20]}}})", "rope_type"},
            {R"({"model_type": "qwen3_vl", "text_config": {"rope_parameters": {"mrope_section": [24, 20]}}})", "mrope_section"},
            {R"({"model_type": "qwen3_vl", "text_config": {"hidden_size": 64}})", "out_hidden_size"},
            {R"({"model_type": "qwen3_vl", "vision_config": {"num_position_embeddings": 60}})", "num_position_embeddings"},
            {R"({"model_type": "qwen3_vl", "vision_config": {"deepstack_visual_indexes": [5, 40]}})", "deepstack_visual_indexes"},
            {R"({"model_type": "qwen3_vl", "vision_config": {"hidden_act": "relu"}})", "hidden_act"},
        };
        for (const auto& [json, field] : bad) {
            const std::string why = errorOf([&] { parseQwen3VlConfig(json, "c.json"); });
            QVERIFY2(why.find("c.json") != std::string::npos && why.find(field) != std::string::npos, (json + " -> " + why).c_str());
        }
    }

    // Interleaved M-RoPE: which position row (t 0, h 1, w 2) each frequency reads.
    void interleavedFrequencyRows() {
        QCOMPARE(ropeFrequencyRows({2, 3, 3}, true, 8), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1}));
        const std::vector<int64_t> real = ropeFrequencyRows({24, 20, 20}, true, 64);
        std::map<int64_t, std::vector<int64_t>> byRow;
        for (int64_t j = 0; j < 64; ++j) byRow[real[size_t(j)]].push_back(j);
        QCOMPARE(byRow[0].size(), size_t(24));
        QCOMPARE(byRow[1].size(), size_t(20));
        QCOMPARE(byRow[2].size(), size_t(20));
        QCOMPARE(byRow[0].back(), int64_t(63));
        QCOMPARE(std::vector<int64_t>(byRow[0].end() - 4, byRow[0].end()), (std::vector<int64_t>{60, 61, 62, 63}));
        QCOMPARE(byRow[1].back(), int64_t(58));
        QCOMPARE(byRow[2].back(), int64_t(59));
        // Qwen2-VL's runs, for contrast.
        QCOMPARE(ropeFrequencyRows({2, 3, 3}, false, 8), (std::vector<int64_t>{0, 0, 1, 1, 1, 2, 2, 2}));
    }

    void idsPixelsAndPositions_data() { addRows(); }
    void idsPixelsAndPositions() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = ref_.caseInfo(caseName.toStdString());
        const auto& model = dynamic_cast<const Qwen3VlModel&>(*models_[variant.toStdString()]);
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        const Prompt p = casePrompt(model, c);
        QCOMPARE(p.text, c["prompt"].get<std::string>());
        QCOMPARE(p.ids, toIds(expected.tensor("input_ids")));
        QCOMPARE(p.positionOffset, toIds(expected.tensor("rope_deltas"))[0]);
        if (!p.hasImage) return;
        QCOMPARE(toIds(p.positionIds), toIds(expected.tensor("position_ids")));
        const std::vector<int64_t> merged = c["merged_grid_hw"].get<std::vector<int64_t>>();
        QCOMPARE(int64_t(p.span.gridHeight), merged[0]);
        QCOMPARE(int64_t(p.span.gridWidth), merged[1]);
        // The resize within one uint8 level, the pixels from it exact.
        const at::Tensor resized = expected.tensor("image_resized_u8").to(at::kInt);
        const ImageU8& ours = p.image->resized;
        QCOMPARE(int64_t(ours.height), resized.size(0));
        QCOMPARE(int64_t(ours.width), resized.size(1));
        const at::Tensor mine = at::tensor(std::vector<int>(ours.rgb.begin(), ours.rgb.end())).view(resized.sizes());
        QVERIFY2(maxAbsDiff(mine.to(at::kFloat), resized.to(at::kFloat)) <= 1, "image_resized_u8 within one level");
        const at::Tensor chw = p.pixels.select(0, 0).contiguous();
        const std::vector<float> values(chw.data_ptr<float>(), chw.data_ptr<float>() + chw.numel());
        const at::Tensor patches = flattenPatches(values, int(chw.size(1)), int(chw.size(2)), model.imageConfig());
        const double worst = maxAbsDiff(patches, expected.tensor("pixel_values"));
        QVERIFY2(worst <= (at::equal(mine, resized) ? 1e-7 : 2.0 / 255), ("pixel_values " + std::to_string(worst)).c_str());
        // Decoding continues at cache index + rope delta.
        const at::Tensor decode = expected.tensor("decode_position_ids");
        for (int64_t i = 0; i < decode.size(0); ++i) QCOMPARE(int64_t(p.ids.size()) + i + p.positionOffset, decode[i].item<int64_t>());
    }

    void visionStages_data() { addRows(); }
    void visionStages() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const auto c = ref_.caseInfo(caseName.toStdString());
        if (c["image"].is_null()) QSKIP("text_only has no image");
        const auto& model = dynamic_cast<const Qwen3VlModel&>(*models_[variant.toStdString()]);
        const SafeTensorsFile expected(ref_.tensorsPath(caseName.toStdString()));
        const Prompt p = casePrompt(model, c);
        const int patch = model.imageConfig().patchSize;
        const GridThw grid{1, p.pixels.size(2) / patch, p.pixels.size(3) / patch};
        QCOMPARE(toIds(patchPositions(grid, model.imageConfig().mergeSize)), toIds(expected.tensor("vision_pos_ids")));
        Qwen3VisionTower::Trace trace;
        const ImageFeatures f = model.encodePixels(p.pixels, &trace);
        std::vector<std::pair<std::string, at::Tensor>> stages = {
            {"vision_patch_embeddings", trace.patchEmbeddings}, {"vision_pos_embeds", trace.positionEmbeddings},
            {"vision_block_output", trace.blockOutput}, {"image_features", f.tokens}};
        QCOMPARE(f.deepstack.size(), model.visionTower().config().deepstackVisualIndexes.size());
        for (size_t k = 0; k < f.deepstack.size(); ++k) stages.push_back({"deepstack_features." + std::to_string(k), f.deepstack[k]});
        for (const auto& [name, ours] : stages) {
            const double d = relativeDiff(ours, expected.tensor(name));
            QVERIFY2(d <= 1e-4, (name + ": " + std::to_string(d)).c_str());
        }
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
        QVERIFY2(cacheRelativeDiff(session.snapshot(), expected) <= 1e-4, "the snapshot's K/V");
        KVCache cache = session.snapshot().clone();
        const at::Tensor reuse = session.feed(cache, {session.lastPromptToken()});
        QVERIFY2(maxAbsDiff(reuse, expected.tensor("cache_reuse.last_logits").squeeze(0)) <= 1e-3, "cache_reuse.last_logits");
        QVERIFY2(maxAbsDiff(reuse, expected.tensor("prefill_last_logits").squeeze(0)) <= 1e-3, "= full prefill");
        const GreedyAgainstReference greedy = greedyAgainstReference(session, expected);
        QCOMPARE(greedy.ids, toIds(expected.tensor("greedy_ids")));
        QCOMPARE(greedy.ids, c["greedy_ids"].get<std::vector<int64_t>>());
        QVERIFY2(greedy.worstTop5 <= 1e-3, ("top-5 logits off by " + std::to_string(greedy.worstTop5)).c_str());
    }

    // Qwen3-VL's template has no default system prompt; --system adds the turn.
    void systemTurnOnlyWhenGiven() {
        QVERIFY(models_["own"]->takesSystemMessage());
        LoadOptions o;
        o.systemMessage = "Answer in one word.";
        const auto model = loadModel(referenceQwen3VlDir(), o);
        const std::string text = model->applyTemplate("Hi?", false);
        QCOMPARE(text, std::string("<|im_start|>system\nAnswer in one word.<|im_end|>\n<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n"));
    }

    // A video's token in a raw prompt is refused by name, not read as text.
    void videosAreRefused() {
        const std::string why = errorOf([&] {
            buildPrompt(*models_["own"], "<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>Go<|im_end|>\n", true, nullptr);
        });
        QVERIFY2(why.find("video") != std::string::npos && why.find("images only") != std::string::npos, why.c_str());
    }

    // The K/V of layer 0 carry only the main features; DeepStack reaches every later layer. A
    // recompute of the prompt from anywhere — inside the image (its tokens entering through their
    // features, DeepStack rows added again after layers 0 and 1), at its end (propagate's own
    // start) — gives the prefill's K/V bit for bit. Without the DeepStack rows every later layer differs.
    void deepstackRecomputeIsBitIdentical() {
        auto model = models_["own"];
        const auto c = ref_.caseInfo("red_square");
        Session session(model);
        session.prefill(casePrompt(*model, c), 8);
        const KVCache& snapshot = session.snapshot();
        const VisualSpan span = snapshot.visualSpan;
        for (int64_t from : {int64_t(0), span.start, span.start + span.length / 3, span.end(), snapshot.size() - 3}) {
            KVCache recomputed = snapshot.clone();
            session.recomputePrompt(recomputed, from);
            QCOMPARE(recomputed.size(), snapshot.size());
            QCOMPARE(recomputed.tokens(), snapshot.tokens());
            std::string where;
            QVERIFY2(sameCache(recomputed, snapshot, snapshot.size(), &where), ("from " + std::to_string(from) + ": " + where).c_str());
        }
        // The same forward without the rows: layer 0 unchanged, every later layer not.
        const Prompt& p = session.prompt();
        const std::vector<int64_t> kept(p.ids.begin(), p.ids.end() - 1);
        const TextConfig& t = model->config().text;
        KVCache bare(t.numLayers, 1, t.numKvHeads, t.headDim, snapshot.size(), at::kFloat);
        bare.positionOffset = p.positionOffset;
        bare.promptPositions = p.positionIds;
        model->decoder().forward(model->embedPrompt(kept, session.image().tokens), bare);
        QVERIFY(at::equal(bare.keys(0).narrow(2, 0, snapshot.size()), snapshot.keys(0).narrow(2, 0, snapshot.size())));
        for (int l = 1; l < t.numLayers; ++l)
            QVERIFY(!at::equal(bare.values(l).narrow(2, 0, snapshot.size()), snapshot.values(l).narrow(2, 0, snapshot.size())));
    }

    // Steering on the gradient's own grid (8 x 14 on tiny-qwen3vl): strength 0 changes nothing (edit-only and propagate),
    // a vector from two 500 x 300 images (the gradient and its colours inverted), painted over the
    // whole grid, changes the answer.
    void imagePairVectorSteersTheGradient() {
        auto model = models_["own"];
        const ImageU8 a = loadImage(referenceDir() + "/images/gradient_500x300.png");
        ImageU8 b = a;
        for (uint8_t& v : b.rgb) v = uint8_t(255 - v);
        const SteeringVectors v = extractImagePair(model, "What colors do you see?", b, a, ExtractOptions{});
        Session session(model);
        session.prefill(buildPrompt(*model, "What colors do you see?", false, &a), 16);
        const VisualSpan& span = session.snapshot().visualSpan;
        const std::vector<int64_t> merged = ref_.caseInfo("gradient")["merged_grid_hw"].get<std::vector<int64_t>>();
        QCOMPARE(int64_t(span.gridHeight), merged[0]);
        QCOMPARE(int64_t(span.gridWidth), merged[1]);
        SteeringPlan plan;
        plan.vectors = v;
        plan.strength = at::ones({span.gridHeight, span.gridWidth});
        GenerationOptions gen;
        gen.maxNewTokens = 12;
        gen.stopAtEos = false;
        const std::vector<int64_t> unsteered = session.generate(gen).ids;
        plan.ck = {0.0};
        plan.cv = {0.0};
        for (PlanMode mode : {PlanMode::EditOnly, PlanMode::Propagate}) {
            plan.mode = mode;
            const GenerationPair zero = decodeSideBySide(session, applyPlan(session, plan), gen);
            QCOMPARE(zero.steered.ids, zero.unsteered.ids);
            QCOMPARE(zero.unsteered.ids, unsteered);
        }
        plan.mode = PlanMode::EditOnly;
        plan.cv = {8.0};
        const GenerationPair steered = decodeSideBySide(session, applyPlan(session, plan), gen);
        QCOMPARE(steered.unsteered.ids, unsteered);
        QVERIFY(steered.steered.ids != steered.unsteered.ids);
    }
};

QTEST_GUILESS_MAIN(TestQwen3VlParity)
#include "test_qwen3vl_parity.moc"
