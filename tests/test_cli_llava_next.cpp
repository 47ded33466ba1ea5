// LLaVA-NeXT from the command line, on tiny-llava-next and the 500 × 300 gradient: `inspect
// --image` names the views and their tokens; a region recipe painted in picture pixels keeps
// per-position vectors over every token of both views (newlines included, at zero), `vectors
// info` names the views, `steer` applies the file; `heatmaps` writes each view's maps (--view),
// non-zero exactly where the paint reaches; a view the picture does not have is refused.
#include "TestSupport.h"
#include "io/SafeTensors.h"

#include <ATen/TensorOperators.h>

#include <fstream>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

class TestCliLlavaNext : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    const std::string model_ = referenceDir() + "/tiny-llava-next";
    const std::string image_ = referenceDir() + "/images/gradient_500x300.png";

    std::string path(const std::string& name) const { return tmp_.filePath(QString::fromStdString(name)).toStdString(); }

    static void expect(const ProcessResult& r, int code, const std::string& stream, const std::vector<std::string>& phrases) {
        QVERIFY2(r.exitCode == code, ("exit code " + std::to_string(r.exitCode) + ": " + r.err).c_str());
        for (const auto& p : phrases) QVERIFY2(stream.find(p) != std::string::npos, ("missing '" + p + "' in: " + stream).c_str());
    }

    // The cells of layer `layer` above zero, as row * cols + col.
    static std::set<int> hot(const std::vector<float>& values, int layer, int rows, int cols) {
        std::set<int> out;
        for (int i = 0; i < rows * cols; ++i)
            if (values[size_t(layer * rows * cols + i)] > 0) out.insert(i);
        return out;
    }
    static std::set<int> block(int r0, int r1, int c0, int c1, int cols) {
        std::set<int> out;
        for (int r = r0; r <= r1; ++r)
            for (int c = c0; c <= c1; ++c) out.insert(r * cols + c);
        return out;
    }

private slots:
    void initTestCase() { QVERIFY(tmp_.isValid()); }

    void inspectNamesTheViews() {
        const ProcessResult r = runCli({"inspect", "--model", model_, "--image", image_});
        expect(r, 0, r.out, {"LLaVA-NeXT", "up to 2928 per image",
                             "500x300: base 24x24 (tokens 0-575) + crops 24x40, a newline after each row (tokens 576-1559)"});
    }

    void regionVectorsKeepEveryToken() {
        const std::string file = path("region.safetensors");
        const ProcessResult r = runCli({"extract", "--recipe", "region", "--model", model_, "--image", image_, "--prompt", "Describe the image.",
                                        "--mask", "px:100,60,200,150", "--per-position", "--out", file});
        expect(r, 0, r.err, {});
        const SafeTensorsFile f(file);
        const at::Tensor v = f.tensor("steer.values.1");
        QCOMPARE(v.sizes().vec(), (std::vector<int64_t>{2, 1560, 16}));
        QCOMPARE(v.select(1, 576 + 40).abs().max().item<float>(), 0.0f);   // the first crop row's newline
        QVERIFY(v.select(1, 4 * 24 + 4).abs().max().item<float>() > 0);     // a base cell the region covers
        const ProcessResult info = runCli({"vectors", "info", file});
        expect(info, 0, info.out, {"base 24x24 + crops 24x40", "1560"});
        const ProcessResult steer = runCli({"steer", "--model", model_, "--image", image_, "--prompt", "Describe the image.", "--vectors", file,
                                            "--mask", "px:100,60,200,150", "--cv", "8", "--max-new-tokens", "6"});
        expect(steer, 0, steer.err, {});
    }

    void heatmapsOfEachView() {
        const std::vector<std::string> run = {"heatmaps", "--model", model_, "--image", image_, "--prompt", "Describe the image.", "--operator",
                                              "ablate", "--mask", "px:100,60,200,150", "--metric", "value-delta", "--max-new-tokens", "2"};
        std::vector<std::string> crops = run, base = run;
        crops.insert(crops.end(), {"--out", path("crops.npy")});
        base.insert(base.end(), {"--view", "base", "--out", path("base.npy")});
        const ProcessResult rc = runCli(crops), rb = runCli(base);
        expect(rc, 0, rc.err, {"3 layers x 24x40 cells of the crops view"});
        expect(rb, 0, rb.err, {"3 layers x 24x24 cells of the base view"});
        const auto [cropShape, cropValues] = readNpy(path("crops.npy"));
        const auto [baseShape, baseValues] = readNpy(path("base.npy"));
        QCOMPARE(cropShape, std::string("3, 24, 40, "));
        QCOMPARE(baseShape, std::string("3, 24, 24, "));
        QCOMPARE(hot(cropValues, 1, 24, 40), block(4, 11, 8, 15, 40));
        QCOMPARE(hot(baseValues, 1, 24, 24), block(4, 11, 4, 9, 24));
        std::vector<std::string> wrong = run;
        wrong.insert(wrong.end(), {"--view", "tiles", "--out", path("x.npy")});
        const ProcessResult rw = runCli(wrong);
        expect(rw, 2, rw.err, {"--view tiles", "base, crops"});
    }
};

QTEST_GUILESS_MAIN(TestCliLlavaNext)
#include "test_cli_llava_next.moc"
