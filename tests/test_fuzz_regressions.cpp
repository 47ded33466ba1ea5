// Inputs the fuzz targets (fuzz/, scripts/fuzz.sh) found crashing or misbehaving, kept under
// tests/data/fuzz/ and fed again through the same real loader: each must now be refused with a
// kvsteer::Error that names the file and says what was wrong. Built like every other test, and
// also under ASan/UBSan by scripts/test-sanitized.sh.
#include <ATen/core/Tensor.h>  // torch headers before Qt headers

#include "Error.h"
#include "io/Image.h"
#include "models/ModelRegistry.h"

#include <fstream>
#include <functional>
#include <sstream>
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

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// For an input whose only report is inside stb (suppressed there, scripts/sanitizers/ubsan.supp):
// loading gives an image of the declared size or a kvsteer::Error naming the file. Returns what
// went wrong, or "".
std::string loadsOrNamesTheFile(const std::string& path, int width, int height) {
    try {
        const kvsteer::ImageU8 img = kvsteer::loadImage(path);
        if (img.width != width || img.height != height)
            return "decoded " + std::to_string(img.width) + "x" + std::to_string(img.height) + ", declared " +
                   std::to_string(width) + "x" + std::to_string(height);
    } catch (const kvsteer::Error& e) {
        if (!contains(e.what(), path)) return std::string("the error does not name the file: ") + e.what();
    }
    return "";
}

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

    // A scan that decodes with Huffman tables no DHT defined: stb used its uninitialised tables
    // (UBSan: index -16776699 out of bounds in stbi__jpeg_huff_decode; a shift exponent of 38 with
    // other heap contents).
    void jpegScanWithUndefinedHuffmanTable() {
        const std::string path = fuzzData("image-jpeg-undefined-huffman-table.jpg");
        const std::string e = errorOf([&] { kvsteer::loadImage(path); });
        QVERIFY2(contains(e, path) && contains(e, "corrupt JPEG") && contains(e, "no DHT segment defined"), e.c_str());
    }

    // A 44-byte GIF whose canvas is 13000x13000 (under the pixel cap): stb_image allocates the
    // canvas three times over before reading a frame, 2.3 GB and 10 s under the fuzz harness.
    void gifHugeCanvas() {
        const std::string path = fuzzData("image-gif-huge-canvas.gif");
        const std::string e = errorOf([&] { kvsteer::loadImage(path); });
        QVERIFY2(contains(e, path) && contains(e, "canvas is too large") && contains(e, "13000x13000"), e.c_str());
    }

    // A 42-byte GIF declaring a 9216x1836 canvas (under the GIF canvas cap): stb filled 17 million
    // pixels from almost no data, seconds under the fuzz harness (fuzz_mask timed out). LZW codes
    // paint at most 4096 pixels a bit, so the file is refused as truncated, as a mask too.
    void gifCanvasBeyondItsData() {
        const std::string path = fuzzData("mask-gif-canvas-beyond-data.gif");
        const std::string e = errorOf([&] { kvsteer::loadImage(path); });
        QVERIFY2(contains(e, path) && contains(e, "truncated") && contains(e, "9216x1836"), e.c_str());
    }

    // A corrupt progressive JPEG whose AC scan runs out of bits: stb's fast AC path takes bits the
    // buffer does not hold and then shifts by 32 (UBSan, inside stb; suppressed by name in
    // scripts/sanitizers/ubsan.supp with why). kvsteer's part: the load ends in an image of the
    // declared size or a kvsteer::Error naming the file, and a sanitized build of this test passes.
    void jpegProgressiveScanOutOfBits() {
        const std::string why = loadsOrNamesTheFile(fuzzData("image-jpeg-prog-ac-bits.jpg"), 16, 12);
        QVERIFY2(why.empty(), why.c_str());
    }

    // A PNG whose first IDAT chunk is empty: stb copies its zero bytes with memcpy(NULL, ...)
    // (UBSan, inside stb; suppressed by name with why). The load ends in an image of the declared
    // size or a kvsteer::Error naming the file.
    void pngEmptyFirstIdat() {
        const std::string why = loadsOrNamesTheFile(fuzzData("image-png-empty-first-idat.png"), 16, 12);
        QVERIFY2(why.empty(), why.c_str());
    }

    // A 146-byte BMP claiming 3997712x12 pixels with compression 0xFF000003: stb reads that as a
    // negative int and decodes plain pixels (zeros past the end), the truncation pre-check took it
    // for a compression stb refuses and let it through: 10 s in fuzz_image (timeout).
    void bmpNegativeCompressionTruncated() {
        const std::string path = fuzzData("image-bmp-negative-compression-truncated.bmp");
        const std::string e = errorOf([&] { kvsteer::loadImage(path); });
        QVERIFY2(contains(e, path) && contains(e, "damaged BMP") && contains(e, "truncated"), e.c_str());
    }

    // A 193-byte BMP of 14221072x12 pixels at 40 bits a pixel: stb reads any depth above 24 bits
    // as 32-bit words, the pre-check skipped depths over 32 as "stb refuses them": 28 s, 1.4 GB.
    void bmpFortyBitTruncated() {
        const std::string path = fuzzData("image-bmp-40-bit-truncated.bmp");
        const std::string e = errorOf([&] { kvsteer::loadImage(path); });
        QVERIFY2(contains(e, path) && contains(e, "damaged BMP") && contains(e, "truncated"), e.c_str());
    }

    // A 42-byte BMP whose row size times height passes 2^63 (width 2086310464, 9233 bits a pixel,
    // height -1509875470): the truncation pre-check's offset + stride * height overflowed (UBSan).
    void bmpSizeOverflow() {
        const std::string path = fuzzData("image-bmp-size-overflow.bmp");
        const std::string e = errorOf([&] { kvsteer::loadImage(path); });
        QVERIFY2(contains(e, path) && contains(e, "damaged BMP") && contains(e, "truncated"), e.c_str());
    }

    // A 210-byte PNG whose second IDAT chunk declares 1937670554 bytes: stb_image grew its buffer
    // to that size (2 GB) before finding the data missing (fuzz_mask: out of memory, malloc 2 GB).
    void pngHugeIdatChunk() {
        const std::string path = fuzzData("image-png-huge-idat.png");
        const std::string e = errorOf([&] { kvsteer::loadImage(path); });
        QVERIFY2(contains(e, path) && contains(e, "damaged PNG") && contains(e, "1937670554"), e.c_str());
    }

    // An 854-byte JPEG declaring 64272x244 pixels: stb decodes the missing data as zeros, seconds
    // under ASan (fuzz_image timeout on a loaded machine).
    void jpegTruncatedLargeFrame() {
        const std::string path = fuzzData("image-jpeg-truncated-64272x244.jpg");
        const std::string e = errorOf([&] { kvsteer::loadImage(path); });
        QVERIFY2(contains(e, path) && contains(e, "truncated") && contains(e, "64272x244"), e.c_str());
    }

    // A number too large for an int in an integer field (here an integer literal past 64 bits,
    // which nlohmann reads as the double 1e48) was cast to int: undefined behaviour (UBSan:
    // 1e+48 is outside the range of 'int'), in practice a garbage section size.
    void configNumberOutOfRange() {
        const std::string text = readFile(fuzzData("config-mrope-section-1e48.json"));
        QVERIFY(!text.empty());
        const std::string e = errorOf([&] { kvsteer::parseModelConfig(text, "config-mrope-section-1e48.json"); });
        QVERIFY2(contains(e, "config-mrope-section-1e48.json") && contains(e, "'mrope_section'") && contains(e, "whole number"),
                 e.c_str());
        // The same rule for every integer field, and a fractional value is no integer either.
        const std::string llama = R"({"model_type": "llama", "hidden_size": 3000000000})";
        QVERIFY(contains(errorOf([&] { kvsteer::parseModelConfig(llama, "c.json"); }), "'hidden_size' must be a whole number"));
        const std::string half = R"({"model_type": "llama", "num_hidden_layers": 2.5})";
        QVERIFY(contains(errorOf([&] { kvsteer::parseModelConfig(half, "c.json"); }), "'num_hidden_layers' must be a whole number"));
    }

    // eos_token_id as a list of non-integers threw nlohmann's type_error, not kvsteer::Error.
    void configEosListOfStrings() {
        const std::string text = R"({"model_type": "llama", "eos_token_id": ["</s>"]})";
        const std::string e = errorOf([&] { kvsteer::parseModelConfig(text, "c.json"); });
        QVERIFY2(contains(e, "c.json") && contains(e, "'eos_token_id'"), e.c_str());
    }
};

QTEST_GUILESS_MAIN(TestFuzzRegressions)
#include "test_fuzz_regressions.moc"
