// Qwen2-VL's image processor and vision tower against Hugging Face transformers' own
// (expected-qwen2vl/, see the reference README's Qwen2-VL section), stage by stage on the 4 image
// cases: smart_resize and the grid, the Pillow-exact resize, pixel_values in the 2x2-cell order,
// vision_pos_ids, the float32 2D-RoPE angles, the Conv3d patch embedding, the ViT blocks and the
// PatchMerger. The tower runs from the float32 file as shipped, from a bfloat16 sharded copy with
// the newer model.visual.* names that the test writes itself (every reference weight is exactly
// representable in bfloat16), kept as bfloat16 views and widened to float32.
#include "TestSupport.h"
#include "Error.h"
#include "io/Checkpoint.h"
#include "io/SafeTensors.h"
#include "models/llava/RandomCheckpoint.h"
#include "models/qwen2vl/Qwen2VisionConfig.h"
#include "models/qwen2vl/Qwen2VisionTower.h"
#include "models/qwen2vl/Qwen2VlImageProcessor.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/from_blob.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

namespace {

std::string modelDir() { return referenceDir() + "/tiny-qwen2vl"; }
std::string tensorsPath(const std::string& caseName) { return ReferenceCases("expected-qwen2vl").tensorsPath(caseName); }

const char* const kCases[] = {"red_square", "gradient", "shapes", "checker"};

std::string readText(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

ImageU8 imageFromTensor(const at::Tensor& hwc) {   // [H, W, 3] uint8
    const at::Tensor c = hwc.contiguous();
    ImageU8 img(static_cast<int>(c.size(1)), static_cast<int>(c.size(0)));
    std::memcpy(img.rgb.data(), c.data_ptr<uint8_t>(), img.rgb.size());
    return img;
}

at::Tensor tensorFromImage(const ImageU8& img) {   // -> [H, W, 3] uint8 (a view of img)
    return at::from_blob(const_cast<uint8_t*>(img.rgb.data()), {img.height, img.width, 3}, at::kByte);
}

GridThw gridOf(const at::Tensor& imageGridThw) {   // [1, 3]
    const std::vector<int64_t> g = toIds(imageGridThw);
    return {g.at(0), g.at(1), g.at(2)};
}


// The worst relative difference of each stage over all cases and variants, printed at the end.
std::map<std::string, double> gWorst;
void noteWorst(const std::string& stage, double value) { gWorst[stage] = std::max(gWorst[stage], value); }

} // namespace

class TestQwen2VlVision : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    Qwen2VlImageProcessorConfig processor_;
    Qwen2VisionConfig vision_;
    std::map<std::string, std::unique_ptr<Qwen2VisionTower>> towers_;

    static void addCaseRows() {
        QTest::addColumn<QString>("caseName");
        for (const char* c : kCases) QTest::newRow(c) << QString(c);
    }

    static void addTowerRows() {
        QTest::addColumn<QString>("caseName");
        QTest::addColumn<QString>("variant");
        for (const char* v : {"f32", "bf16", "bf16-widened"})
            for (const char* c : kCases) QTest::newRow((std::string(c) + "/" + v).c_str()) << QString(c) << QString(v);
    }

private slots:
    void initTestCase() {
        QVERIFY2(QFile::exists(QString::fromStdString(modelDir() + "/config.json")), "reference tiny-qwen2vl not found: is ../shared beside the checkout?");
        processor_ = Qwen2VlImageProcessorConfig::fromJsonFile(modelDir() + "/preprocessor_config.json");
        vision_ = qwen2VisionConfigFromConfigJson(readText(modelDir() + "/config.json"), modelDir() + "/config.json");
        QVERIFY(tmp_.isValid());
        const std::string bf16Dir = tmp_.filePath("bf16").toStdString();
        writeConvertedQwen2Vl(bf16Dir, at::kBFloat16, 256 * 1024);

        const Checkpoint f32 = Checkpoint::open(modelDir());
        const Checkpoint bf16 = Checkpoint::open(bf16Dir);
        QVERIFY(bf16.fileCount() > 1);   // 775 KB of bfloat16 in 256 KB shards
        QCOMPARE(bf16.diskName("vision.blocks.0.attn.qkv.weight"), std::string("model.visual.blocks.0.attn.qkv.weight"));
        QCOMPARE(bf16.diskDtype("vision.blocks.0.attn.qkv.weight"), std::string("BF16"));
        WeightFormat asStored, widened;
        widened.storage = at::kFloat;
        towers_["f32"] = std::make_unique<Qwen2VisionTower>(vision_, f32, asStored);
        towers_["bf16"] = std::make_unique<Qwen2VisionTower>(vision_, bf16, asStored);
        towers_["bf16-widened"] = std::make_unique<Qwen2VisionTower>(vision_, bf16, widened);
    }

    void cleanupTestCase() {
        for (const auto& [stage, worst] : gWorst) qInfo("worst %s: %.3g", stage.c_str(), worst);
    }

    void canonicalNames() {
        QCOMPARE(canonicalTensorName("visual.blocks.1.attn.qkv.weight"), std::string("vision.blocks.1.attn.qkv.weight"));
        QCOMPARE(canonicalTensorName("model.visual.merger.mlp.0.bias"), std::string("vision.merger.mlp.0.bias"));
        QCOMPARE(canonicalTensorName("visual.patch_embed.proj.weight"), std::string("vision.patch_embed.proj.weight"));
        // Every earlier mapping still holds.
        QCOMPARE(canonicalTensorName("model.layers.0.self_attn.q_proj.bias"), std::string("text.layers.0.self_attn.q_proj.bias"));
        QCOMPARE(canonicalTensorName("model.language_model.norm.weight"), std::string("text.norm.weight"));
        QCOMPARE(canonicalTensorName("language_model.model.embed_tokens.weight"), std::string("text.embed_tokens.weight"));
        QCOMPARE(canonicalTensorName("language_model.lm_head.weight"), std::string("lm_head.weight"));
        QCOMPARE(canonicalTensorName("lm_head.weight"), std::string("lm_head.weight"));
        QCOMPARE(canonicalTensorName("vision_tower.vision_model.post_layernorm.weight"), std::string("vision.post_layernorm.weight"));
        QCOMPARE(canonicalTensorName("model.vision_tower.vision_model.embeddings.class_embedding"),
                 std::string("vision.embeddings.class_embedding"));
        QCOMPARE(canonicalTensorName("multi_modal_projector.linear_1.weight"), std::string("projector.linear_1.weight"));
        QCOMPARE(canonicalTensorName("model.multi_modal_projector.linear_2.bias"), std::string("projector.linear_2.bias"));
        QCOMPARE(canonicalTensorName("something.else"), std::string());
    }

    void processorConfig() {
        QCOMPARE(processor_.minPixels, int64_t(3136));
        QCOMPARE(processor_.maxPixels, int64_t(153664));
        QCOMPARE(processor_.patchSize, 14);
        QCOMPARE(processor_.temporalPatchSize, 2);
        QCOMPARE(processor_.mergeSize, 2);
        QCOMPARE(processor_.factor(), 28);
        QCOMPARE(processor_.patchDim(), int64_t(1176));
        QCOMPARE(processor_.rescaleFactor, 1.0 / 255.0);
        QCOMPARE(processor_.mean[1], 0.4578275f);
        QCOMPARE(processor_.std[2], 0.27577711f);
        // An empty file is transformers' defaults (the real Qwen2-VL's max_pixels is 12845056).
        const auto d = Qwen2VlImageProcessorConfig::fromJsonString("{}", "p.json");
        QCOMPARE(d.minPixels, int64_t(3136));
        QCOMPARE(d.maxPixels, int64_t(1003520));
        QCOMPARE(d.patchSize, 14);
        QCOMPARE(d.mean[0], 0.48145466f);
        QVERIFY(d.doResize && d.doRescale && d.doNormalize);
        // transformers 5's size dict gives the budget; min_pixels / max_pixels win over it; null means unset.
        const auto s = Qwen2VlImageProcessorConfig::fromJsonString(R"({"size": {"shortest_edge": 1}, "max_pixels": null})", "p.json");
        QCOMPARE(s.minPixels, int64_t(1));
        QCOMPARE(s.maxPixels, int64_t(1003520));
        const auto hub = Qwen2VlImageProcessorConfig::fromJsonString(
            R"({"size": {"shortest_edge": 65536, "longest_edge": 16777216}, "max_pixels": 131072})", "p.json");
        QCOMPARE(hub.minPixels, int64_t(65536));
        QCOMPARE(hub.maxPixels, int64_t(131072));

        const std::vector<std::pair<std::string, std::string>> bad = {
            {R"({"resample": 2})", "resample"},
            {R"({"min_pixels": "3136"})", "min_pixels"},
            {R"({"min_pixels": 0})", "min_pixels"},
            {R"({"max_pixels": -5})", "max_pixels"},
            {R"({"max_pixels": 3136.5})", "max_pixels"},
            {R"({"size": {"longest_edge": "big"}})", "size.longest_edge"},
            {R"({"patch_size": 0})", "patch_size"},
            {R"({"temporal_patch_size": true})", "temporal_patch_size"},
            {R"({"merge_size": -2})", "merge_size"},
            {R"({"do_resize": 1})", "do_resize"},
            {R"({"do_normalize": "yes"})", "do_normalize"},
            {R"({"rescale_factor": "x"})", "rescale_factor"},
            {R"({"image_mean": [0.5, 0.5]})", "image_mean"},
            {R"({"image_std": [0.5, 0, 0.5]})", "image_std"},
            {R"({"min_pixels": 5000, "max_pixels": 4000})", "min_pixels"},
            {R"([1, 2])", "object"},
            {R"({"min_pixels": )", "JSON"},
        };
        for (const auto& [text, field] : bad) {
            const std::string message = errorOf([&] { Qwen2VlImageProcessorConfig::fromJsonString(text, "dir/preprocessor_config.json"); });
            QVERIFY2(message.find("dir/preprocessor_config.json") != std::string::npos, (text + " -> " + message).c_str());
            QVERIFY2(message.find(field) != std::string::npos, (text + " -> " + message).c_str());
        }
        const std::string missing = errorOf([] { Qwen2VlImageProcessorConfig::fromJsonFile("/nonexistent/preprocessor_config.json"); });
        QVERIFY2(missing.find("/nonexistent/preprocessor_config.json") != std::string::npos, missing.c_str());
    }

    void visionConfig() {
        QCOMPARE(vision_.depth, 2);
        QCOMPARE(vision_.embedDim, 32);
        QCOMPARE(vision_.numHeads, 2);
        QCOMPARE(vision_.headDim(), 16);
        QCOMPARE(vision_.mlpHidden(), 64);
        QCOMPARE(vision_.hiddenSize, 64);
        QCOMPARE(vision_.patchSize, 14);
        QCOMPARE(vision_.temporalPatchSize, 2);
        QCOMPARE(vision_.spatialMergeSize, 2);
        QCOMPARE(vision_.inChannels, 3);
        QCOMPARE(vision_.hiddenAct, std::string("quick_gelu"));
        QCOMPARE(vision_.patchDim(), int64_t(1176));
        QCOMPARE(vision_.mergerWidth(), 128);
        // No vision_config: Qwen2VLVisionConfig()'s defaults.
        const Qwen2VisionConfig d = qwen2VisionConfigFromConfigJson("{}", "c.json");
        QCOMPARE(d.depth, 32);
        QCOMPARE(d.embedDim, 1280);
        QCOMPARE(d.numHeads, 16);
        QCOMPARE(d.mlpHidden(), 5120);
        QCOMPARE(d.hiddenSize, 3584);
        QCOMPARE(d.headDim(), 80);

        const std::vector<std::pair<std::string, std::string>> bad = {
            {R"({"vision_config": {"hidden_act": "gelu"}})", "hidden_act"},
            {R"({"vision_config": {"in_channels": 4}})", "in_channels"},
            {R"({"vision_config": {"in_channels": 3, "in_chans": 1}})", "in_chans"},
            {R"({"vision_config": {"in_chans": 1}})", "in_channels"},
            {R"({"vision_config": {"embed_dim": 30, "num_heads": 4}})", "num_heads"},
            {R"({"vision_config": {"embed_dim": 36, "num_heads": 2}})", "multiple of 4"},
            {R"({"vision_config": {"depth": "two"}})", "depth"},
            {R"({"vision_config": {"depth": 0}})", "depth"},
            {R"({"vision_config": {"mlp_ratio": -1}})", "mlp_ratio"},
            {R"({"vision_config": {"spatial_merge_size": 0}})", "spatial_merge_size"},
            {R"({"vision_config": [1]})", "vision_config"},
        };
        for (const auto& [text, field] : bad) {
            const std::string message = errorOf([&] { qwen2VisionConfigFromConfigJson(text, "dir/config.json"); });
            QVERIFY2(message.find("dir/config.json") != std::string::npos, (text + " -> " + message).c_str());
            QVERIFY2(message.find(field) != std::string::npos, (text + " -> " + message).c_str());
        }
    }

    void smartResizeRules() {
        auto check = [](int h, int w, int64_t minPixels, int64_t maxPixels, int wantH, int wantW) {
            const ResizeSize s = smartResize(h, w, 28, minPixels, maxPixels);
            QVERIFY2(s.height == wantH && s.width == wantW,
                     (std::to_string(h) + "x" + std::to_string(w) + " -> " + std::to_string(s.height) + "x" + std::to_string(s.width)).c_str());
        };
        const int64_t mn = 3136, mx = 153664;
        check(210, 350, mn, mx, 224, 336);   // checker: 7.5 -> 8 and 12.5 -> 12 (halves to even; C's round gives 13)
        check(42, 70, mn, mx, 56, 56);       // 1.5 -> 2, 2.5 -> 2
        check(378, 378, mn, mx, 392, 392);   // 13.5 -> 14
        check(336, 336, mn, mx, 336, 336);   // red_square: identity
        check(300, 500, mn, mx, 280, 504);   // gradient: 308x504 > max_pixels -> floor(H / beta / 28) * 28
        check(1000, 1000, mn, mx, 392, 392);
        check(1000, 1000, mn, 1003520, 980, 980);
        check(30, 60, mn, mx, 56, 84);       // 28x56 < min_pixels -> ceil(H * beta / 28) * 28
        check(28, 28, mn, mx, 56, 56);
        check(28, 5600, mn, 12845056, 28, 5600);   // aspect ratio exactly 200 is allowed

        const std::string small = errorOf([] { smartResize(27, 100, 28, 3136, 153664); });
        QVERIFY2(small.find("at least 28") != std::string::npos, small.c_str());
        const std::string narrow = errorOf([] { smartResize(100, 27, 28, 3136, 153664); });
        QVERIFY2(narrow.find("at least 28") != std::string::npos, narrow.c_str());
        const std::string ratio = errorOf([] { smartResize(28, 5629, 28, 3136, 12845056); });
        QVERIFY2(ratio.find("aspect ratio") != std::string::npos, ratio.c_str());
        // transformers 4.45 floors the short side to 0 here (and then fails in the resize).
        const std::string empty = errorOf([] { smartResize(28, 5600, 28, 3136, 153664); });
        QVERIFY2(empty.find("0x") != std::string::npos || empty.find("x0") != std::string::npos, empty.c_str());

        // do_resize false keeps the image, whose sides must then be multiples of 28.
        Qwen2VlImageProcessorConfig noResize = processor_;
        noResize.doResize = false;
        QCOMPARE(qwen2VlResize(ImageU8(56, 28), noResize).width, 56);
        const std::string notMultiple = errorOf([&] { qwen2VlResize(ImageU8(50, 28), noResize); });
        QVERIFY2(notMultiple.find("multiples of 28") != std::string::npos, notMultiple.c_str());
    }

    void preprocessing_data() { addCaseRows(); }
    void preprocessing() {
        QFETCH(QString, caseName);
        const std::string name = caseName.toStdString();
        const SafeTensorsFile expected(tensorsPath(name));
        nlohmann::json summary = nlohmann::json::parse(readText(referenceDir() + "/expected-qwen2vl/summary.json"));
        std::string file;
        for (const auto& c : summary["cases"])
            if (c["name"] == name) file = c["image"].get<std::string>();
        QVERIFY(!file.empty());

        const Qwen2VlImage out = qwen2VlPreprocess(loadImage(referenceDir() + "/images/" + file), processor_);
        const GridThw want = gridOf(expected.tensor("image_grid_thw"));
        QCOMPARE(out.grid.t, want.t);
        QCOMPARE(out.grid.h, want.h);
        QCOMPARE(out.grid.w, want.w);
        // The resize: exact size, at most 1 level off; pixel_values exact when the resize is.
        const at::Tensor refResized = expected.tensor("image_resized_u8");
        const ImageU8& r = out.image.resized;
        QCOMPARE(int64_t(r.height), refResized.size(0));
        QCOMPARE(int64_t(r.width), refResized.size(1));
        const double resizeDiff = maxAbsDiff(tensorFromImage(r), refResized);
        QVERIFY2(resizeDiff <= 1.0, std::to_string(resizeDiff).c_str());
        noteWorst("resize (uint8 levels)", resizeDiff);
        if (resizeDiff == 0) QCOMPARE(maxAbsDiff(out.pixelValues, expected.tensor("pixel_values")), 0.0);
        QCOMPARE(toIds(out.positions), toIds(expected.tensor("vision_pos_ids")));
        // What the studio shows: the resized image, uncropped, and its normalised CHW pixels.
        QCOMPARE(out.image.cropped.rgb, r.rgb);
        QCOMPARE(out.image.pixels.size(), size_t(3) * r.width * r.height);

        // From the reference's own resized image the rest of the pipeline is exact.
        Qwen2VlImageProcessorConfig noResize = processor_;
        noResize.doResize = false;
        const Qwen2VlImage fromRef = qwen2VlPreprocess(imageFromTensor(refResized), noResize);
        QCOMPARE(maxAbsDiff(fromRef.pixelValues, expected.tensor("pixel_values")), 0.0);
    }

    void visionTower_data() { addTowerRows(); }
    void visionTower() {
        QFETCH(QString, caseName);
        QFETCH(QString, variant);
        const Qwen2VisionTower& tower = *towers_.at(variant.toStdString());
        const SafeTensorsFile expected(tensorsPath(caseName.toStdString()));
        const GridThw grid = gridOf(expected.tensor("image_grid_thw"));

        // The whole tower from the reference pixels.
        Qwen2VisionTower::Trace trace;
        const at::Tensor features = tower.forward(expected.tensor("pixel_values"), grid, &trace);
        const at::Tensor refAngles = expected.tensor("vision_rotary_angles");
        const double angles = relativeDiff(trace.rotaryAngles, refAngles);
        QVERIFY2(angles <= 1e-6, std::to_string(angles).c_str());
        noteWorst("vision_rotary_angles", angles);
        const std::vector<std::pair<const char*, at::Tensor>> stages = {
            {"vision_patch_embeddings", trace.patchEmbeddings}, {"vision_block_output", trace.blockOutput}, {"image_features", features}};
        for (const auto& [stageName, got] : stages) {
            const double d = relativeDiff(got, expected.tensor(stageName));
            QVERIFY2(d <= 1e-4, (std::string(stageName) + ": " + std::to_string(d)).c_str());
            noteWorst(std::string(stageName) + " (" + variant.toStdString() + ")", d);
        }

        // Each stage alone, from the reference's input to it.
        const double blocks = relativeDiff(tower.runBlocks(expected.tensor("vision_patch_embeddings"), grid),
                                           expected.tensor("vision_block_output"));
        QVERIFY2(blocks <= 1e-4, std::to_string(blocks).c_str());
        const double merged = relativeDiff(tower.merge(expected.tensor("vision_block_output")), expected.tensor("image_features"));
        QVERIFY2(merged <= 1e-4, std::to_string(merged).c_str());
    }

    void rotaryAnglesAreBitExact_data() { addCaseRows(); }
    void rotaryAnglesAreBitExact() {
        // float32 products of float32 inverse frequencies, exactly as transformers computes them.
        QFETCH(QString, caseName);
        const SafeTensorsFile expected(tensorsPath(caseName.toStdString()));
        Qwen2VisionTower::Trace trace;
        towers_.at("f32")->forward(expected.tensor("pixel_values"), gridOf(expected.tensor("image_grid_thw")), &trace);
        QCOMPARE(maxAbsDiff(trace.rotaryAngles, expected.tensor("vision_rotary_angles")), 0.0);
    }

    void framesAttendOnlyToThemselves() {
        // A grid with t = 2 (a video of two temporal patches) is two frames with the same
        // positions, attending block-diagonally: each frame's tokens are the single image's.
        const Qwen2VisionTower& tower = *towers_.at("f32");
        const SafeTensorsFile expected(tensorsPath("shapes"));
        const at::Tensor pixels = expected.tensor("pixel_values");
        const GridThw grid = gridOf(expected.tensor("image_grid_thw"));
        const at::Tensor positions = patchPositions(GridThw{2, grid.h, grid.w}, 2);
        QCOMPARE(toIds(positions.narrow(0, grid.patches(), grid.patches())), toIds(expected.tensor("vision_pos_ids")));
        const at::Tensor single = tower.forward(pixels, grid);
        const at::Tensor both = tower.forward(at::cat({pixels, pixels}, 0), GridThw{2, grid.h, grid.w});
        QCOMPARE(both.size(0), 2 * single.size(0));
        QVERIFY(relativeDiff(both.narrow(0, 0, single.size(0)), single) <= 1e-6);
        QVERIFY(relativeDiff(both.narrow(0, single.size(0), single.size(0)), single) <= 1e-6);
    }

    void towerRejectsBadShapes() {
        const Qwen2VisionTower& tower = *towers_.at("f32");
        const SafeTensorsFile expected(tensorsPath("shapes"));
        const at::Tensor pixels = expected.tensor("pixel_values");   // [256, 1176], grid (1, 16, 16)
        const std::string count = errorOf([&] { tower.forward(pixels, GridThw{1, 16, 14}); });
        QVERIFY2(count.find("pixel_values") != std::string::npos, count.c_str());
        const std::string odd = errorOf([&] { tower.forward(pixels.narrow(0, 0, 240), GridThw{1, 16, 15}); });
        QVERIFY2(odd.find("merge_size") != std::string::npos, odd.c_str());
        const std::string width = errorOf([&] { tower.forward(pixels.narrow(1, 0, 1000), GridThw{1, 16, 16}); });
        QVERIFY2(width.find("1176") != std::string::npos, width.c_str());
        const std::string merger = errorOf([&] { tower.merge(expected.tensor("vision_block_output").narrow(0, 0, 6)); });
        QVERIFY2(merger.find("multiple of 4") != std::string::npos, merger.c_str());
    }
};

QTEST_GUILESS_MAIN(TestQwen2VlVision)
#include "test_qwen2vl_vision.moc"
