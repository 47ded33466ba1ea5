// Inputs the fuzz targets (fuzz/, scripts/fuzz.sh) found crashing or misbehaving, kept under
// tests/data/fuzz/ and fed again through the same real loader: each must now be refused with a
// kvsteer::Error that names the file and says what was wrong. Built like every other test, and
// also under ASan/UBSan by scripts/test-sanitized.sh.
#include <ATen/core/Tensor.h>  // torch headers before Qt headers

#include "Error.h"
#include "io/Image.h"

#include <functional>
#include <string>

#include <QtTest>

namespace {

std::string fuzzData(const std::string& name) { return std::string(KVSTEER_FUZZ_DATA_DIR) + "/" + name; }

// The error `load` throws; fails the test when it throws nothing or something else.
std::string errorOf(const std::function<void()>& load) {
    try {
        load();
    } catch (const kvsteer::Error& e) {
        return e.what();
    }
    return "(no error)";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

} // namespace

class TestFuzzRegressions : public QObject {
    Q_OBJECT
private slots:
    // stb_image skips 0xFF fill bytes before SOI, the JPEG pre-check did not: a Huffman table
    // declaring more than 256 symbols reached stb, which wrote past its 257-entry size table
    // (UBSan: index 257 out of bounds in stbi__build_huffman).
    void jpegWithFillBytesBeforeSoi() {
        const std::string path = fuzzData("image-jpeg-fill-bytes-before-soi.jpg");
        const std::string e = errorOf([&] { kvsteer::loadImage(path); });
        QVERIFY2(contains(e, path) && contains(e, "corrupt JPEG") && contains(e, "Huffman table"), e.c_str());
    }
};

QTEST_GUILESS_MAIN(TestFuzzRegressions)
#include "test_fuzz_regressions.moc"
