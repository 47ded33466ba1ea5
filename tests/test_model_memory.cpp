// What a load decides before it touches a weight (core/models/ModelMemory.h), on any machine:
// the dtypes per device (on CUDA, --dtype auto keeps a float16 checkpoint float16, as
// torch_dtype="auto" does; CPU always computes in float32), and the memory estimate they give —
// a float16 7B on CUDA is its 13.5 GB of weights plus caches, not the 27 GB of a float32 copy.
#include "TestSupport.h"
#include "models/ModelMemory.h"
#include "models/llava/RandomCheckpoint.h"
#include "models/qwen3vl/Qwen3VlConfig.h"
#include "models/qwen3vl/RandomQwen3Vl.h"

#include <QtTest>

using namespace kvsteer;

namespace {

const c10::Device kCpu(c10::kCPU), kCuda(c10::kCUDA, 0);
constexpr auto kAuto = c10::ScalarType::Undefined;

// The weight bytes of a tensor layout at `bytesPerElement`.
int64_t weightBytes(const std::vector<TensorSpec>& layout, int64_t bytesPerElement) {
    int64_t elements = 0;
    for (const TensorSpec& t : layout) {
        int64_t n = 1;
        for (int64_t d : t.shape) n *= d;
        elements += n;
    }
    return elements * bytesPerElement;
}
int64_t weightBytes(const ModelConfig& c, int64_t bytesPerElement) { return weightBytes(checkpointLayout(c), bytesPerElement); }

} // namespace

class TestModelMemory : public QObject {
    Q_OBJECT

private slots:
    void dtypesPerDevice() {
        // CPU: storage as asked (auto: as stored), compute float32 whatever the file.
        for (auto stored : {at::kHalf, at::kBFloat16, at::kFloat}) {
            const WeightFormat f = chooseWeightFormat(kCpu, kAuto, stored);
            QCOMPARE(f.storage, kAuto);
            QCOMPARE(f.compute, at::kFloat);
            QCOMPARE(chooseWeightFormat(kCpu, at::kHalf, stored).storage, at::kHalf);
            QCOMPARE(chooseWeightFormat(kCpu, at::kHalf, stored).compute, at::kFloat);
        }
        // CUDA: auto keeps the checkpoint's dtype for storage and compute; a request wins.
        for (auto stored : {at::kHalf, at::kBFloat16, at::kFloat}) {
            const WeightFormat f = chooseWeightFormat(kCuda, kAuto, stored);
            QCOMPARE(f.device, kCuda);
            QCOMPARE(f.storage, stored);
            QCOMPARE(f.compute, stored);
            const WeightFormat widened = chooseWeightFormat(kCuda, at::kFloat, stored);
            QCOMPARE(widened.storage, at::kFloat);
            QCOMPARE(widened.compute, at::kFloat);
        }
    }

    void cudaAutoEstimateOfAFloat16SevenB() {
        const ModelConfig c = randomPreset("llava-1.5-7b");
        const WeightFormat f = chooseWeightFormat(kCuda, kAuto, at::kHalf);
        const MemoryNeed half = estimateMemory(c, weightBytes(c, c10::elementSize(f.storage)), f.compute, 256);
        const MemoryNeed full = estimateMemory(c, weightBytes(c, 4), at::kFloat, 256);
        const double gib = 1024.0 * 1024 * 1024;
        qInfo("7B float16 on CUDA (auto): weights %.2f GiB, KV %.2f GiB, activations %.2f GiB, total %.2f GiB; as float32 %.2f GiB",
              half.weights / gib, half.kvCache / gib, half.activations / gib, half.total() / gib, full.total() / gib);
        QVERIFY(std::abs(half.weights / gib - 13.2) < 0.3);   // 7.06 B parameters x 2 bytes
        QCOMPARE(half.weights * 2, full.weights);
        QCOMPARE(half.kvCache * 2, full.kvCache);             // float16 caches
        QVERIFY(half.total() < int64_t(20 * gib));            // fits a 24 GB card with room
        QVERIFY(full.total() > int64_t(26 * gib));            // the float32 copy would not
        QCOMPARE(half.contextTokens, int64_t(576 + 128 + 256));
    }

    // Qwen3-VL-8B in bfloat16 on a CPU with a 1024 x 1024 picture (--max-pixels 1048576: 32 x 32
    // cells, 1024 image tokens) fits a 24 GB machine; the hub processor's own budget (16.8 Mpx,
    // 16,384 tokens) would not, which is why the load refuses it and names --max-pixels.
    void qwen3Vl8bWithA1024Picture() {
        ModelConfig c = parseQwen3VlConfig(qwen3VlPresetConfig("qwen3-vl-8b"), "qwen3-vl-8b").model;
        const int64_t bf16 = weightBytes(qwen3VlPresetLayout("qwen3-vl-8b"), 2);
        const double gib = 1024.0 * 1024 * 1024;
        QVERIFY(std::abs(bf16 / 2 / 1e9 - 8.77) < 0.05);   // 8.77 B parameters, the vision tower's included
        c.vision.imageSize = 1024;   // what a 1,048,576-pixel budget gives (Qwen3VlModel::load)
        QCOMPARE(c.imageSeqLength(), 1024);
        const MemoryNeed picture = estimateMemory(c, bf16, at::kFloat, 256);
        qInfo("Qwen3-VL-8B bf16 on CPU, 1024 image tokens: weights %.2f GiB, KV %.2f GiB, activations %.2f GiB, total %.2f GiB",
              picture.weights / gib, picture.kvCache / gib, picture.activations / gib, picture.total() / gib);
        QCOMPARE(picture.contextTokens, int64_t(1024 + 128 + 256));
        QCOMPARE(picture.kvCache, int64_t(3) * 2 * 36 * 8 * 128 * 4 * picture.contextTokens);   // snapshot + pair, float32
        QVERIFY(picture.total() < int64_t(21 * gib));
        c.vision.imageSize = 4096;   // the hub's 16,777,216 pixels
        QCOMPARE(c.imageSeqLength(), 16384);
        QVERIFY(estimateMemory(c, bf16, at::kFloat, 256).total() > int64_t(24 * gib));
    }
};

QTEST_GUILESS_MAIN(TestModelMemory)
#include "test_model_memory.moc"
