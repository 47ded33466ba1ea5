// Tests for core/io/Image (Image, ImageResize, ClipPreprocess): decoding, Pillow-exact bicubic resize, transformers' center crop and
// CLIP normalisation, against the Hugging Face reference in KVSTEER_REFERENCE_DIR.
#include <ATen/ATen.h>  // torch headers before Qt headers

#include "Error.h"
#include "io/Image.h"
#include "io/SafeTensors.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

// stb_image_write lives here, and only here, in the whole program (static functions).
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wcast-qual"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#endif
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include <QtTest>

#ifndef KVSTEER_REFERENCE_DIR
#error "KVSTEER_REFERENCE_DIR must be defined (absolute path of ../shared/reference)"
#endif

using kvsteer::ImageU8;

namespace {

std::string referenceDir() { return std::string(KVSTEER_REFERENCE_DIR); }

ImageU8 makeImage(int w, int h, const std::function<void(int, int, uint8_t*)>& fill) {
    ImageU8 img(w, h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) fill(x, y, &img.rgb[(static_cast<size_t>(y) * w + x) * 3]);
    return img;
}

void writeBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> readBytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Runs f, expects kvsteer::Error whose message contains `needle`; returns the message.
template <typename F>
QString expectError(F&& f, const std::string& needle) {
    try {
        f();
    } catch (const kvsteer::Error& e) {
        const QString msg = QString::fromStdString(e.what());
        if (msg.indexOf(QString::fromStdString(needle)) < 0)
            return QStringLiteral("message does not contain \"%1\": %2").arg(QString::fromStdString(needle), msg);
        return QString();
    } catch (const std::exception& e) {
        return QStringLiteral("threw a non-kvsteer exception: %1").arg(QString::fromUtf8(e.what()));
    }
    return QStringLiteral("did not throw");
}

#define EXPECT_ERROR(expr, needle)                                         \
    do {                                                                   \
        const QString why_ = expectError([&] { (void)(expr); }, (needle)); \
        QVERIFY2(why_.isEmpty(), qPrintable(why_));                        \
    } while (0)

// --- tiny hand-made encoders for formats stb_image_write lacks ------------------------------

uint32_t crc32(const uint8_t* p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

void putBE32(std::vector<uint8_t>& v, uint32_t x) {
    for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<uint8_t>(x >> s));
}

void pngChunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
    putBE32(out, static_cast<uint32_t>(data.size()));
    std::vector<uint8_t> body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    out.insert(out.end(), body.begin(), body.end());
    putBE32(out, crc32(body.data(), body.size()));
}

// A 16-bit greyscale PNG (colour type 0, depth 16).
std::vector<uint8_t> png16Grey(int w, int h, const std::vector<uint16_t>& px) {
    std::vector<uint8_t> raw;
    for (int y = 0; y < h; ++y) {
        raw.push_back(0);  // filter: none
        for (int x = 0; x < w; ++x) {
            raw.push_back(static_cast<uint8_t>(px[static_cast<size_t>(y) * w + x] >> 8));
            raw.push_back(static_cast<uint8_t>(px[static_cast<size_t>(y) * w + x] & 0xFF));
        }
    }
    int zlen = 0;
    unsigned char* z = stbi_zlib_compress(raw.data(), static_cast<int>(raw.size()), &zlen, 8);
    std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    std::vector<uint8_t> ihdr;
    putBE32(ihdr, static_cast<uint32_t>(w));
    putBE32(ihdr, static_cast<uint32_t>(h));
    ihdr.insert(ihdr.end(), {16, 0, 0, 0, 0});
    pngChunk(out, "IHDR", ihdr);
    pngChunk(out, "IDAT", std::vector<uint8_t>(z, z + zlen));
    pngChunk(out, "IEND", {});
    STBIW_FREE(z);
    return out;
}

// A GIF89a with a 4-colour global palette and one image per entry of `frames` (palette indices,
// w*h each). LZW data is "uncompressed": a clear code before every literal keeps codes 3 bits wide.
std::vector<uint8_t> gif4(int w, int h, const uint8_t palette[4][3], const std::vector<std::vector<uint8_t>>& frames) {
    std::vector<uint8_t> out = {'G', 'I', 'F', '8', '9', 'a'};
    auto le16 = [&](int v) {
        out.push_back(static_cast<uint8_t>(v & 0xFF));
        out.push_back(static_cast<uint8_t>(v >> 8));
    };
    le16(w);
    le16(h);
    out.insert(out.end(), {0x91, 0, 0});  // global table of 4 entries, colour resolution 2 bits
    for (int i = 0; i < 4; ++i) out.insert(out.end(), palette[i], palette[i] + 3);
    for (const auto& idx : frames) {
        out.push_back(0x2C);
        le16(0);
        le16(0);
        le16(w);
        le16(h);
        out.push_back(0);  // no local table, not interlaced
        out.push_back(2);  // LZW minimum code size
        std::vector<uint8_t> data;
        uint32_t acc = 0;
        int bits = 0;
        auto putCode = [&](uint32_t code) {
            acc |= code << bits;
            bits += 3;
            while (bits >= 8) {
                data.push_back(static_cast<uint8_t>(acc & 0xFF));
                acc >>= 8;
                bits -= 8;
            }
        };
        for (uint8_t p : idx) {
            putCode(4);  // clear
            putCode(p);
        }
        putCode(5);  // end of information
        if (bits > 0) data.push_back(static_cast<uint8_t>(acc & 0xFF));
        for (size_t i = 0; i < data.size(); i += 255) {
            const size_t n = std::min<size_t>(255, data.size() - i);
            out.push_back(static_cast<uint8_t>(n));
            out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(i),
                       data.begin() + static_cast<std::ptrdiff_t>(i + n));
        }
        out.push_back(0);
    }
    out.push_back(0x3B);
    return out;
}

} // namespace

class TestImage : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    std::string tmpPath(const char* name) const { return (tmp_.path() + QLatin1Char('/') + QLatin1String(name)).toStdString(); }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        QVERIFY2(QFileInfo::exists(QString::fromStdString(referenceDir() + "/expected/gradient.safetensors")),
                 qPrintable(QStringLiteral("reference data missing under %1").arg(QString::fromStdString(referenceDir()))));
    }

    // --- the Hugging Face reference ---------------------------------------------------------------

    void referencePreprocess_data() {
        QTest::addColumn<QString>("caseName");
        QTest::addColumn<QString>("imageFile");
        QTest::addColumn<int>("resizedW");
        QTest::addColumn<int>("resizedH");
        QTest::newRow("red_square") << "red_square" << "red_square_336x336.png" << 336 << 336;
        QTest::newRow("gradient") << "gradient" << "gradient_500x300.png" << 560 << 336;
    }

    void referencePreprocess() {
        QFETCH(QString, caseName);
        QFETCH(QString, imageFile);
        QFETCH(int, resizedW);
        QFETCH(int, resizedH);
        const std::string ref = referenceDir();
        const auto cfg = kvsteer::ClipPreprocessConfig::fromJsonFile(ref + "/tiny-llava/preprocessor_config.json");
        const ImageU8 img = kvsteer::loadImage(ref + "/images/" + imageFile.toStdString());
        const kvsteer::PreprocessedImage pp = kvsteer::clipPreprocess(img, cfg);
        kvsteer::SafeTensorsFile st(ref + "/expected/" + caseName.toStdString() + ".safetensors");

        // Resize: bit-exact.
        QCOMPARE(pp.resized.width, resizedW);
        QCOMPARE(pp.resized.height, resizedH);
        at::Tensor rs = st.tensor("image_resized_u8").contiguous();
        QCOMPARE(rs.scalar_type(), at::kByte);
        QVERIFY((rs.sizes().vec() == std::vector<int64_t>{resizedH, resizedW, 3}));
        const uint8_t* r = rs.data_ptr<uint8_t>();
        size_t differing = 0;
        for (size_t i = 0; i < pp.resized.rgb.size(); ++i) differing += pp.resized.rgb[i] != r[i];
        QCOMPARE(differing, size_t(0));

        // Crop: exact.
        at::Tensor cr = st.tensor("image_cropped_u8").contiguous();
        QVERIFY((cr.sizes().vec() == std::vector<int64_t>{336, 336, 3}));
        QCOMPARE(pp.cropped.width, 336);
        QCOMPARE(pp.cropped.height, 336);
        QVERIFY(std::memcmp(pp.cropped.rgb.data(), cr.data_ptr<uint8_t>(), pp.cropped.rgb.size()) == 0);

        // pixel_values: bit-exact float32, CHW.
        at::Tensor pv = st.tensor("pixel_values").contiguous();
        QCOMPARE(pv.scalar_type(), at::kFloat);
        QVERIFY((pv.sizes().vec() == std::vector<int64_t>{1, 3, 336, 336}));
        QCOMPARE(pp.pixels.size(), size_t(3 * 336 * 336));
        const float* p = pv.data_ptr<float>();
        float maxDiff = 0.0f;
        for (size_t i = 0; i < pp.pixels.size(); ++i) maxDiff = std::max(maxDiff, std::fabs(pp.pixels[i] - p[i]));
        QCOMPARE(maxDiff, 0.0f);
        QVERIFY(std::memcmp(pp.pixels.data(), p, pp.pixels.size() * sizeof(float)) == 0);
    }

    void referenceConfig() {
        const auto cfg = kvsteer::ClipPreprocessConfig::fromJsonFile(referenceDir() + "/tiny-llava/preprocessor_config.json");
        QCOMPARE(cfg.shortestEdge, 336);
        QCOMPARE(cfg.cropWidth, 336);
        QCOMPARE(cfg.cropHeight, 336);
        QVERIFY(cfg.doResize && cfg.doCenterCrop && cfg.doRescale && cfg.doNormalize);
        QCOMPARE(cfg.rescaleFactor, 0.00392156862745098);
        QCOMPARE(cfg.mean[0], 0.48145466f);
        QCOMPARE(cfg.std[2], 0.27577711f);
    }

    // --- geometry ------------------------------------------------------------------------------

    void shortestEdgeSizes_data() {
        QTest::addColumn<int>("w");
        QTest::addColumn<int>("h");
        QTest::addColumn<int>("ew");
        QTest::addColumn<int>("eh");
        QTest::newRow("landscape 500x300") << 500 << 300 << 560 << 336;
        QTest::newRow("portrait 300x500") << 300 << 500 << 336 << 560;
        QTest::newRow("square 400x400") << 400 << 400 << 336 << 336;
        QTest::newRow("square 100x100") << 100 << 100 << 336 << 336;
        QTest::newRow("landscape 640x480") << 640 << 480 << 448 << 336;
        QTest::newRow("truncates 333x500") << 333 << 500 << 336 << 504;  // 504.50...
        QTest::newRow("truncates 7x3") << 7 << 3 << 784 << 336;
        QTest::newRow("short edge already 336") << 1000 << 336 << 1000 << 336;
        QTest::newRow("portrait 1x2") << 1 << 2 << 336 << 672;
    }

    void shortestEdgeSizes() {
        QFETCH(int, w);
        QFETCH(int, h);
        QFETCH(int, ew);
        QFETCH(int, eh);
        const kvsteer::ResizeSize s = kvsteer::shortestEdgeResizeSize(w, h, 336);
        QCOMPARE(s.width, ew);
        QCOMPARE(s.height, eh);
        const ImageU8 img = makeImage(w, h, [](int x, int y, uint8_t* p) {
            p[0] = static_cast<uint8_t>(x * 7 + y);
            p[1] = static_cast<uint8_t>(y * 3);
            p[2] = 99;
        });
        const kvsteer::PreprocessedImage pp = kvsteer::clipPreprocess(img, kvsteer::ClipPreprocessConfig{});
        QCOMPARE(pp.resized.width, ew);
        QCOMPARE(pp.resized.height, eh);
        QCOMPARE(pp.cropped.width, 336);
        QCOMPARE(pp.cropped.height, 336);
        QCOMPARE(pp.pixels.size(), size_t(3 * 336 * 336));
    }

    void resizeIdentityAndConstant() {
        const ImageU8 img = makeImage(336, 336, [](int x, int y, uint8_t* p) {
            p[0] = static_cast<uint8_t>(x ^ y);
            p[1] = static_cast<uint8_t>(x * y);
            p[2] = static_cast<uint8_t>(x + 3 * y);
        });
        QVERIFY(kvsteer::resizeBicubic(img, 336, 336).rgb == img.rgb);

        // Normalised weights keep a constant image constant, on every path (h only, v only, both).
        const ImageU8 flat = makeImage(37, 23, [](int, int, uint8_t* p) { p[0] = 255; p[1] = 0; p[2] = 131; });
        for (auto [w, h] : std::vector<std::pair<int, int>>{{80, 23}, {37, 5}, {3, 200}, {1, 1}, {500, 301}}) {
            const ImageU8 out = kvsteer::resizeBicubic(flat, w, h);
            QCOMPARE(out.width, w);
            QCOMPARE(out.height, h);
            for (size_t i = 0; i < out.rgb.size(); i += 3) {
                QCOMPARE(int(out.rgb[i]), 255);
                QCOMPARE(int(out.rgb[i + 1]), 0);
                QCOMPARE(int(out.rgb[i + 2]), 131);
            }
        }
        EXPECT_ERROR(kvsteer::resizeBicubic(flat, 0, 10), "resizeBicubic");
        EXPECT_ERROR(kvsteer::resizeBicubic(ImageU8{}, 10, 10), "empty");
    }

    void centerCropOffsetsAndPadding() {
        const ImageU8 img = makeImage(7, 6, [](int x, int y, uint8_t* p) {
            p[0] = static_cast<uint8_t>(x);
            p[1] = static_cast<uint8_t>(y);
            p[2] = 200;
        });
        // top = (6-3)//2 = 1, left = (7-4)//2 = 1
        ImageU8 c = kvsteer::centerCrop(img, 4, 3);
        QCOMPARE(c.width, 4);
        QCOMPARE(c.height, 3);
        QCOMPARE(int(c.at(0, 0, 0)), 1);
        QCOMPARE(int(c.at(0, 0, 1)), 1);
        QCOMPARE(int(c.at(2, 3, 0)), 4);
        QCOMPARE(int(c.at(2, 3, 1)), 3);

        // Smaller than the crop: zero padding, the image at (ceil(dh/2), ceil(dw/2)).
        const ImageU8 small = makeImage(2, 2, [](int x, int y, uint8_t* p) { p[0] = p[1] = p[2] = static_cast<uint8_t>(10 + x + 2 * y); });
        c = kvsteer::centerCrop(small, 5, 5);
        QCOMPARE(c.width, 5);
        QCOMPARE(c.height, 5);
        for (int y = 0; y < 5; ++y)
            for (int x = 0; x < 5; ++x) {
                const bool inside = y >= 2 && y < 4 && x >= 2 && x < 4;
                QCOMPARE(int(c.at(y, x, 1)), inside ? 10 + (x - 2) + 2 * (y - 2) : 0);
            }
        // Mixed: wider than the crop, shorter than it.
        c = kvsteer::centerCrop(img, 3, 9);  // left = (7-3)//2 = 2; pad top = ceil(3/2) = 2
        QCOMPARE(c.width, 3);
        QCOMPARE(c.height, 9);
        QCOMPARE(int(c.at(1, 0, 2)), 0);
        QCOMPARE(int(c.at(2, 0, 2)), 200);
        QCOMPARE(int(c.at(2, 0, 0)), 2);
        QCOMPARE(int(c.at(7, 2, 1)), 5);
        QCOMPARE(int(c.at(8, 2, 2)), 0);
    }

    void normalizeValues() {
        ImageU8 img(1, 1);
        img.rgb = {0, 128, 255};
        kvsteer::ClipPreprocessConfig cfg;
        cfg.doResize = false;
        cfg.doCenterCrop = false;
        const auto pp = kvsteer::clipPreprocess(img, cfg);
        QCOMPARE(pp.pixels.size(), size_t(3));
        const uint8_t u[3] = {0, 128, 255};
        for (int c = 0; c < 3; ++c) {
            const float x = static_cast<float>(static_cast<double>(u[c]) * (1.0 / 255.0));
            const float expect = (x - cfg.mean[c]) / cfg.std[c];
            QVERIFY(pp.pixels[c] == expect);
        }
    }

    // --- decoding ------------------------------------------------------------------------------

    void pngGreyAndAlpha() {
        const int w = 5, h = 4;
        std::vector<uint8_t> grey(w * h), ga(w * h * 2), rgba(w * h * 4);
        for (int i = 0; i < w * h; ++i) {
            grey[i] = static_cast<uint8_t>(i * 13);
            ga[i * 2] = static_cast<uint8_t>(255 - i * 11);
            ga[i * 2 + 1] = static_cast<uint8_t>(i * 9);  // alpha, must be dropped
            rgba[i * 4 + 0] = static_cast<uint8_t>(i);
            rgba[i * 4 + 1] = static_cast<uint8_t>(100 + i);
            rgba[i * 4 + 2] = static_cast<uint8_t>(250 - i);
            rgba[i * 4 + 3] = static_cast<uint8_t>(i % 2 ? 0 : 128);  // alpha, must be dropped
        }
        QVERIFY(stbi_write_png(tmpPath("grey.png").c_str(), w, h, 1, grey.data(), w));
        QVERIFY(stbi_write_png(tmpPath("ga.png").c_str(), w, h, 2, ga.data(), w * 2));
        QVERIFY(stbi_write_png(tmpPath("rgba.png").c_str(), w, h, 4, rgba.data(), w * 4));

        ImageU8 g = kvsteer::loadImage(tmpPath("grey.png"));
        QCOMPARE(g.width, w);
        QCOMPARE(g.height, h);
        QCOMPARE(g.rgb.size(), size_t(w * h * 3));
        for (int i = 0; i < w * h; ++i)
            for (int c = 0; c < 3; ++c) QCOMPARE(int(g.rgb[i * 3 + c]), int(grey[i]));

        ImageU8 a = kvsteer::loadImage(tmpPath("ga.png"));
        for (int i = 0; i < w * h; ++i)
            for (int c = 0; c < 3; ++c) QCOMPARE(int(a.rgb[i * 3 + c]), int(ga[i * 2]));

        ImageU8 r = kvsteer::loadImage(tmpPath("rgba.png"));
        QCOMPARE(r.width, w);
        QCOMPARE(r.height, h);
        for (int i = 0; i < w * h; ++i)
            for (int c = 0; c < 3; ++c) QCOMPARE(int(r.rgb[i * 3 + c]), int(rgba[i * 4 + c]));
        QCOMPARE(int(r.at(3, 4, 1)), 100 + 19);
    }

    void png16BitGreyClipsLikePillow() {
        // Pillow 9.4 opens it as mode "I"; convert("RGB") clips to 0..255.
        const std::vector<uint16_t> px = {0, 100, 255, 256, 1000, 65535};
        writeBytes(tmpPath("grey16.png"), png16Grey(3, 2, px));
        const ImageU8 img = kvsteer::loadImage(tmpPath("grey16.png"));
        QCOMPARE(img.width, 3);
        QCOMPARE(img.height, 2);
        const int expect[6] = {0, 100, 255, 255, 255, 255};
        for (int i = 0; i < 6; ++i)
            for (int c = 0; c < 3; ++c) QCOMPARE(int(img.rgb[i * 3 + c]), expect[i]);
    }

    void bmpJpegGif() {
        const int w = 16, h = 8;
        std::vector<uint8_t> rgb(w * h * 3);
        for (int i = 0; i < w * h; ++i) {
            rgb[i * 3] = static_cast<uint8_t>(i * 2);
            rgb[i * 3 + 1] = static_cast<uint8_t>(255 - i);
            rgb[i * 3 + 2] = static_cast<uint8_t>(i * 7);
        }
        QVERIFY(stbi_write_bmp(tmpPath("img.bmp").c_str(), w, h, 3, rgb.data()));
        ImageU8 b = kvsteer::loadImage(tmpPath("img.bmp"));
        QCOMPARE(b.width, w);
        QCOMPARE(b.height, h);
        QVERIFY(b.rgb == rgb);

        // JPEG is lossy (and decoders differ): a flat colour must come back within a few levels.
        std::vector<uint8_t> flat(w * h * 3);
        for (int i = 0; i < w * h; ++i) {
            flat[i * 3] = 200;
            flat[i * 3 + 1] = 100;
            flat[i * 3 + 2] = 50;
        }
        QVERIFY(stbi_write_jpg(tmpPath("img.jpg").c_str(), w, h, 3, flat.data(), 100));
        ImageU8 j = kvsteer::loadImage(tmpPath("img.jpg"));
        QCOMPARE(j.width, w);
        QCOMPARE(j.height, h);
        int maxDiff = 0;
        for (size_t i = 0; i < flat.size(); ++i) maxDiff = std::max(maxDiff, std::abs(int(j.rgb[i]) - int(flat[i])));
        QVERIFY2(maxDiff <= 3, qPrintable(QStringLiteral("JPEG max diff %1").arg(maxDiff)));

        // GIF: the first frame, palette expanded to RGB.
        const uint8_t pal[4][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 255}};
        writeBytes(tmpPath("img.gif"), gif4(3, 2, pal, {{0, 1, 2, 3, 2, 1}, {3, 3, 3, 3, 3, 3}}));
        ImageU8 g = kvsteer::loadImage(tmpPath("img.gif"));
        QCOMPARE(g.width, 3);
        QCOMPARE(g.height, 2);
        const int idx[6] = {0, 1, 2, 3, 2, 1};
        for (int i = 0; i < 6; ++i)
            for (int c = 0; c < 3; ++c) QCOMPARE(int(g.rgb[i * 3 + c]), int(pal[idx[i]][c]));

        // decodeImage on the same bytes gives the same pixels.
        const std::vector<uint8_t> bytes = readBytes(tmpPath("img.bmp"));
        QVERIFY(kvsteer::decodeImage(bytes.data(), bytes.size(), "mem.bmp").rgb == rgb);
    }

    // --- errors --------------------------------------------------------------------------------

    void errors() {
        const std::string missing = tmpPath("does-not-exist.png");
        EXPECT_ERROR(kvsteer::loadImage(missing), missing);
        EXPECT_ERROR(kvsteer::loadImage(tmp_.path().toStdString()), tmp_.path().toStdString());

        const std::string empty = tmpPath("empty.png");
        writeBytes(empty, {});
        EXPECT_ERROR(kvsteer::loadImage(empty), empty);

        const std::string text = tmpPath("notes.png");
        const std::string words = "this is not an image\n";
        writeBytes(text, std::vector<uint8_t>(words.begin(), words.end()));
        EXPECT_ERROR(kvsteer::loadImage(text), text);
        EXPECT_ERROR(kvsteer::loadImage(text), "expected PNG, JPEG, BMP or GIF");

        // A real PNG (noisy, so it does not compress to nothing), cut in half.
        std::vector<uint8_t> noisy(64 * 64 * 3);
        uint32_t s = 12345;
        for (auto& v : noisy) {
            s = s * 1664525u + 1013904223u;
            v = static_cast<uint8_t>(s >> 24);
        }
        const std::string full = tmpPath("full.png");
        QVERIFY(stbi_write_png(full.c_str(), 64, 64, 3, noisy.data(), 64 * 3));
        std::vector<uint8_t> bytes = readBytes(full);
        QVERIFY(bytes.size() > 1000);
        QVERIFY(kvsteer::loadImage(full).rgb == noisy);
        bytes.resize(bytes.size() / 2);
        const std::string truncated = tmpPath("truncated.png");
        writeBytes(truncated, bytes);
        EXPECT_ERROR(kvsteer::loadImage(truncated), truncated);
        bytes.resize(20);  // signature and part of IHDR
        writeBytes(truncated, bytes);
        EXPECT_ERROR(kvsteer::loadImage(truncated), truncated);

        // A PNG header claiming 100000 x 100000 pixels.
        std::vector<uint8_t> huge = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        std::vector<uint8_t> ihdr;
        putBE32(ihdr, 100000);
        putBE32(ihdr, 100000);
        ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
        pngChunk(huge, "IHDR", ihdr);
        pngChunk(huge, "IEND", {});
        const std::string hugePath = tmpPath("huge.png");
        writeBytes(hugePath, huge);
        EXPECT_ERROR(kvsteer::loadImage(hugePath), hugePath);

        EXPECT_ERROR(kvsteer::decodeImage(nullptr, 0, "nothing.jpg"), "nothing.jpg");

        // A JPEG whose Huffman table declares 16 * 255 symbols (stb_image 2.27 would write past
        // its tables): refused before decoding.
        std::vector<uint8_t> evil = {0xFF, 0xD8, 0xFF, 0xC4, 0x01, 0x13, 0x00};
        evil.insert(evil.end(), 16, 0xFF);
        evil.resize(evil.size() + 300, 0x11);
        evil.insert(evil.end(), {0xFF, 0xD9});
        EXPECT_ERROR(kvsteer::decodeImage(evil.data(), evil.size(), "evil.jpg"), "evil.jpg");

        // A truncated BMP (stb_image would silently fill the missing rows with zeros).
        std::vector<uint8_t> bmpPixels(32 * 32 * 3, 77);
        const std::string bmp = tmpPath("cut.bmp");
        QVERIFY(stbi_write_bmp(bmp.c_str(), 32, 32, 3, bmpPixels.data()));
        std::vector<uint8_t> bmpBytes = readBytes(bmp);
        bmpBytes.resize(bmpBytes.size() - 100);
        writeBytes(bmp, bmpBytes);
        EXPECT_ERROR(kvsteer::loadImage(bmp), bmp);

        // An absurd aspect ratio cannot blow up the resize.
        const ImageU8 thin(1, 100000);
        EXPECT_ERROR(kvsteer::clipPreprocess(thin, kvsteer::ClipPreprocessConfig{}), "clipPreprocess");
    }

    void configErrors() {
        const std::string missing = tmpPath("no_config.json");
        EXPECT_ERROR(kvsteer::ClipPreprocessConfig::fromJsonFile(missing), missing);

        const std::string bad = tmpPath("bad.json");
        auto check = [&](const std::string& json, const std::string& field) {
            writeBytes(bad, std::vector<uint8_t>(json.begin(), json.end()));
            return expectError([&] { (void)kvsteer::ClipPreprocessConfig::fromJsonFile(bad); }, field);
        };
        QString why;
        why = check("{ not json", bad);
        QVERIFY2(why.isEmpty(), qPrintable(why));
        why = check(R"({"image_mean": [0.5, 0.5]})", "image_mean");
        QVERIFY2(why.isEmpty(), qPrintable(why));
        why = check(R"({"image_std": [0.5, 0.0, 0.5]})", "image_std");
        QVERIFY2(why.isEmpty(), qPrintable(why));
        why = check(R"({"size": "big"})", "size");
        QVERIFY2(why.isEmpty(), qPrintable(why));
        why = check(R"({"size": {"shortest_edge": -3}})", "size.shortest_edge");
        QVERIFY2(why.isEmpty(), qPrintable(why));
        why = check(R"({"crop_size": {"height": 336}})", "crop_size");
        QVERIFY2(why.isEmpty(), qPrintable(why));
        why = check(R"({"do_resize": "yes"})", "do_resize");
        QVERIFY2(why.isEmpty(), qPrintable(why));
        why = check(R"({"rescale_factor": "1/255"})", "rescale_factor");
        QVERIFY2(why.isEmpty(), qPrintable(why));
        why = check(R"({"resample": 2})", "resample");
        QVERIFY2(why.isEmpty(), qPrintable(why));

        // Legacy integer sizes and missing keys.
        const std::string legacy = tmpPath("legacy.json");
        const std::string text = R"({"size": 224, "crop_size": 224, "image_mean": 0.5})";
        writeBytes(legacy, std::vector<uint8_t>(text.begin(), text.end()));
        const auto cfg = kvsteer::ClipPreprocessConfig::fromJsonFile(legacy);
        QCOMPARE(cfg.shortestEdge, 224);
        QCOMPARE(cfg.cropWidth, 224);
        QCOMPARE(cfg.cropHeight, 224);
        QCOMPARE(cfg.mean[1], 0.5f);
        QCOMPARE(cfg.std[1], 0.26130258f);
    }
};

QTEST_GUILESS_MAIN(TestImage)
#include "test_image.moc"
