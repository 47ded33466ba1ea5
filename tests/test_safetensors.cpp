// The safetensors reader/writer: round trips, zero-copy views, and strict validation of
// corrupt files (each must be a kvsteer::Error naming the file, never a crash).
#include "TestSupport.h"
#include "Error.h"
#include "io/Checkpoint.h"
#include "io/Config.h"
#include "io/SafeTensors.h"
#include "models/ModelRegistry.h"
#include "nn/Linear.h"
#include "Runtime.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/randn.h>

#include <cmath>
#include <fstream>
#include <string>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

namespace {

void writeRaw(const std::string& path, const std::string& header, const std::string& data) {
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << data;
}

// Expects construction to throw a kvsteer::Error whose message names the file and contains `phrase`.
void expectRejected(const std::string& path, const std::string& phrase) {
    try {
        SafeTensorsFile f(path);
        QFAIL(("accepted a bad file: " + path).c_str());
    } catch (const Error& e) {
        const std::string msg = e.what();
        QVERIFY2(msg.find(path) != std::string::npos, msg.c_str());
        QVERIFY2(msg.find(phrase) != std::string::npos, msg.c_str());
    }
}

} // namespace

class TestSafeTensors : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::string path(const char* name) { return tmp_.filePath(name).toStdString(); }

    // This process's resident pages of mapped files (RssFile in /proc/self/status), MiB.
    static double residentFileMiB() {
        std::ifstream in("/proc/self/status");
        for (std::string line; std::getline(in, line);)
            if (line.rfind("RssFile:", 0) == 0) return std::stod(line.substr(8)) / 1024.0;
        return -1;
    }

private slots:
    void roundTripAllDtypes() {
        std::vector<NamedTensor> tensors = {
            {"a.f32", at::randn({3, 5})},
            {"b.f16", at::randn({7}).to(at::kHalf)},
            {"c.bf16", at::randn({2, 2, 2}).to(at::kBFloat16)},
            {"d.i64", at::arange(10, at::kLong)},
            {"e.u8", at::arange(5, at::kByte)},
            {"f.empty", at::randn({0, 4})},
        };
        writeSafeTensors(path("rt.safetensors"), tensors, {{"note", "hello"}});
        SafeTensorsFile f(path("rt.safetensors"));
        QCOMPARE(f.names().size(), tensors.size());
        for (const auto& t : tensors) {
            QVERIFY(f.contains(t.name));
            QVERIFY(at::equal(f.tensor(t.name), t.tensor));
        }
        QCOMPARE(f.metadata().at("note"), std::string("hello"));
        // Data is 8-byte aligned, so float32 views are zero-copy (they point into the mapping).
        QVERIFY(reinterpret_cast<uintptr_t>(f.tensor("a.f32").data_ptr()) % 8 == 0);
    }

    void sixteenBitWeightsWidenExactly() {
        // A float16 checkpoint loaded as float32 (--dtype f32): big tensors are converted by
        // several threads in row blocks (a row count that does not divide evenly), small ones in
        // one copy; fused weights the same. Every value must equal ATen's own conversion.
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        const at::Tensor big = at::randn({1027, 1100}).to(at::kHalf), small = at::randn({5, 1100}).to(at::kHalf);
        writeSafeTensors(d + "/model.safetensors", {{"language_model.model.layers.0.mlp.down_proj.weight", big},
                                                    {"language_model.model.layers.0.mlp.up_proj.weight", small}});
        const Checkpoint ckpt = Checkpoint::open(d);
        setThreads(2);
        QCOMPARE(currentThreads(), 2);   // the threaded path
        WeightFormat f32;
        f32.storage = at::kFloat;
        const at::Tensor a = loadWeight(ckpt, "text.layers.0.mlp.down_proj.weight", {1027, 1100}, f32);
        QCOMPARE(a.scalar_type(), at::kFloat);
        QVERIFY(at::equal(a, big.to(at::kFloat)));
        QVERIFY(at::equal(loadWeight(ckpt, "text.layers.0.mlp.up_proj.weight", {5, 1100}, f32), small.to(at::kFloat)));
        const LinearWeight fused = loadFusedLinear(ckpt, {"text.layers.0.mlp.up_proj.weight", "text.layers.0.mlp.down_proj.weight"},
                                                   {{5, 1100}, {1027, 1100}}, f32);
        QCOMPARE(fused.parts.size(), size_t(1));   // converted: one stacked buffer
        QVERIFY(at::equal(fused.parts[0], at::cat({small, big}).to(at::kFloat)));
    }

    void sixteenBitWeightsStayMappedByDefault() {
        // The default format keeps each tensor's own dtype: float16 weights are views of the
        // mapped file (no copy), and a fused weight is its parts side by side, not a new buffer.
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        const at::Tensor big = at::randn({64, 96}).to(at::kHalf), small = at::randn({5, 96}).to(at::kBFloat16);
        writeSafeTensors(d + "/model.safetensors", {{"language_model.model.layers.0.mlp.down_proj.weight", big},
                                                    {"language_model.model.layers.0.mlp.up_proj.weight", small}});
        const Checkpoint ckpt = Checkpoint::open(d);
        const WeightFormat asStored;
        const at::Tensor view = ckpt.load("text.layers.0.mlp.down_proj.weight", {64, 96});
        const at::Tensor a = loadWeight(ckpt, "text.layers.0.mlp.down_proj.weight", {64, 96}, asStored);
        QCOMPARE(a.scalar_type(), at::kHalf);
        QCOMPARE(a.data_ptr(), view.data_ptr());   // the same mapped bytes
        const LinearWeight fused = loadFusedLinear(ckpt, {"text.layers.0.mlp.up_proj.weight", "text.layers.0.mlp.down_proj.weight"},
                                                   {{5, 96}, {64, 96}}, asStored);
        QCOMPARE(fused.parts.size(), size_t(2));
        QCOMPARE(fused.parts[0].scalar_type(), at::kBFloat16);
        QCOMPARE(fused.parts[1].data_ptr(), view.data_ptr());
        QCOMPARE(fused.outFeatures(), int64_t(69));
        // y = x W^T through the kernels equals ATen on the widened, concatenated weight.
        const at::Tensor x = at::randn({3, 96});
        const at::Tensor want = at::matmul(x, at::cat({small.to(at::kFloat), big.to(at::kFloat)}).t());
        QVERIFY(at::allclose(applyLinear(x, fused), want, 1e-4, 1e-4));
    }

    void convertedWeightsLeaveTheFilesPagesBehind() {
        // A weight converted at load (here widened to float32; on CUDA, uploaded) no longer needs
        // the file's bytes: their pages leave the process, so a 7B upload does not hold 13.5 GB of
        // host memory. Measured on the process's own resident file pages (RssFile).
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        const int64_t rows = 8192, cols = 4096;   // 64 MiB of float16
        writeSafeTensors(d + "/model.safetensors", {{"model.layers.0.mlp.down_proj.weight", at::randn({rows, cols}).to(at::kHalf)}});
        const Checkpoint ckpt = Checkpoint::open(d);
        const at::Tensor view = ckpt.load("text.layers.0.mlp.down_proj.weight", {rows, cols});
        const double before = residentFileMiB();
        QVERIFY(std::isfinite(view.to(at::kFloat).sum().item<double>()));   // every page read
        const double touched = residentFileMiB();
        QVERIFY2(touched - before > 56, QByteArray::number(touched - before));
        WeightFormat widen;
        widen.storage = at::kFloat;
        const at::Tensor w = loadWeight(ckpt, "text.layers.0.mlp.down_proj.weight", {rows, cols}, widen);
        QVERIFY2(touched - residentFileMiB() > 56, QByteArray::number(touched - residentFileMiB()));
        // The view still reads the right numbers: its pages come back from the file.
        QVERIFY(at::equal(view.to(at::kFloat), w));
    }

    void readsReferenceCheckpoint() {
        SafeTensorsFile f(referenceModelDir() + "/model.safetensors");
        int64_t params = 0;
        for (const auto& n : f.names()) params += f.info(n).numel();
        QCOMPARE(params, int64_t(4284576));
        QCOMPARE(f.info("language_model.lm_head.weight").shape, (std::vector<int64_t>{32064, 64}));
    }

    void rejectsCorruptFiles() {
        writeRaw(path("short"), "", "");
        expectRejected(path("short"), "not valid JSON");
        std::ofstream(path("tiny"), std::ios::binary) << "abc";
        expectRejected(path("tiny"), "truncated");
        {   // header length far larger than the file
            std::ofstream out(path("biglen"), std::ios::binary);
            const uint64_t n = 1000;
            out.write(reinterpret_cast<const char*>(&n), 8);
            out << "{}";
        }
        expectRejected(path("biglen"), "truncated");
        {
            std::ofstream out(path("huge"), std::ios::binary);
            const uint64_t n = uint64_t(1) << 40;
            out.write(reinterpret_cast<const char*>(&n), 8);
        }
        expectRejected(path("huge"), "100 MiB");
        {   // a text file given by mistake (a JSONL of pairs as --vectors) is named as not safetensors
            std::ofstream out(path("pairs.jsonl"), std::ios::binary);
            out << "{\"positive\": \"a\", \"negative\": \"b\"}\n";
        }
        expectRejected(path("pairs.jsonl"), "not a safetensors file (it starts with text: \"{\"positi...\"");
        writeRaw(path("notjson"), "{not json", "");
        expectRejected(path("notjson"), "not valid JSON");
        writeRaw(path("dtype"), R"({"x":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}})", "ab");
        expectRejected(path("dtype"), "unknown dtype 'Q4'");
        writeRaw(path("size"), R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd");
        expectRejected(path("size"), "does not match shape");
        writeRaw(path("outside"), R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "abcd");
        expectRejected(path("outside"), "outside");
        writeRaw(path("overlap"),
                 R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                 std::string(12, '\0'));
        expectRejected(path("overlap"), "overlap");
        writeRaw(path("negshape"), R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", "");
        expectRejected(path("negshape"), "non-negative");
        writeRaw(path("meta"), R"({"__metadata__":{"a":1}})", "");
        expectRejected(path("meta"), "__metadata__");
        expectRejected(path("does-not-exist"), "cannot open");
    }

    void writeIsAtomic() {
        // A failed write leaves the previous file intact and no temporary behind.
        writeSafeTensors(path("keep.safetensors"), {{"x", at::arange(4, at::kFloat)}});
        QVERIFY_THROWS_EXCEPTION(Error, writeSafeTensors(path("keep.safetensors"), {{"x", at::arange(4, at::kFloat)}, {"y", at::arange(2, at::kFloat).to(at::kComplexFloat)}}));
        SafeTensorsFile f(path("keep.safetensors"));
        QVERIFY(at::equal(f.tensor("x"), at::arange(4, at::kFloat)));
        QCOMPARE(QDir(tmp_.path()).entryList({"keep.safetensors.tmp*"}, QDir::Files).size(), 0);
    }

    void canonicalNamesCoverBothSchemes() {
        QCOMPARE(canonicalTensorName("language_model.model.layers.0.mlp.up_proj.weight"), std::string("text.layers.0.mlp.up_proj.weight"));
        QCOMPARE(canonicalTensorName("model.language_model.layers.0.mlp.up_proj.weight"), std::string("text.layers.0.mlp.up_proj.weight"));
        QCOMPARE(canonicalTensorName("language_model.lm_head.weight"), std::string("lm_head.weight"));
        QCOMPARE(canonicalTensorName("lm_head.weight"), std::string("lm_head.weight"));
        QCOMPARE(canonicalTensorName("vision_tower.vision_model.pre_layrnorm.weight"), std::string("vision.pre_layrnorm.weight"));
        QCOMPARE(canonicalTensorName("model.vision_tower.vision_model.pre_layrnorm.weight"), std::string("vision.pre_layrnorm.weight"));
        QCOMPARE(canonicalTensorName("model.multi_modal_projector.linear_1.bias"), std::string("projector.linear_1.bias"));
        QCOMPARE(canonicalTensorName("model.embed_tokens.weight"), std::string("text.embed_tokens.weight"));
    }

    void trimmedConfigGetsTransformersDefaults() {
        const ModelConfig c = parseModelConfig(R"({"model_type":"llava","text_config":{"model_type":"llama","vocab_size":32064},
            "vision_config":{"hidden_size":1024,"image_size":336,"intermediate_size":4096,"num_attention_heads":16,
            "num_hidden_layers":24,"patch_size":14}})", "test");
        QCOMPARE(c.text.hiddenSize, 4096);
        QCOMPARE(c.text.numKvHeads, 32);
        QCOMPARE(c.text.headDim, 128);
        QCOMPARE(c.text.hiddenAct, std::string("silu"));
        QCOMPARE(c.text.rmsNormEps, 1e-6);
        QCOMPARE(c.text.ropeTheta, 10000.0);
        QCOMPARE(c.vision.hiddenAct, std::string("quick_gelu"));
        QCOMPARE(c.vision.layerNormEps, 1e-5);
        QCOMPARE(c.imageTokenIndex, int64_t(32000));
        QCOMPARE(c.visionFeatureLayer, -2);
        QCOMPARE(c.visionLayersNeeded(), 23);
        QCOMPARE(c.imageSeqLength(), 576);
        const ModelConfig llama = parseModelConfig(R"({"model_type":"llama","hidden_size":256,"num_attention_heads":4})", "t");
        QVERIFY(!llama.hasVision);
        QCOMPARE(llama.text.headDim, 64);
        QVERIFY_THROWS_EXCEPTION(Error, parseModelConfig(R"({"model_type":"llava","text_config":{"hidden_size":"big"}})", "t"));
        QVERIFY_THROWS_EXCEPTION(Error, parseModelConfig(R"({"model_type":"gpt2"})", "t"));
        QVERIFY_THROWS_EXCEPTION(Error, parseModelConfig(R"({"model_type":"llama","num_attention_heads":6,"num_key_value_heads":4})", "t"));
    }
};

QTEST_GUILESS_MAIN(TestSafeTensors)
#include "test_safetensors.moc"
