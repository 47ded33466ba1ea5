// kvsteer image loading and CLIP preprocessing (see Image.h).
//
// The resampler is an independent implementation of the algorithm Pillow 9.4 uses for
// Image.resize(..., BICUBIC) on 8-bit images (libImaging/Resample.c): per output pixel, filter
// weights are computed in double, normalised to sum 1, rounded to 22-bit fixed point, and applied
// in two passes (horizontal into an 8-bit intermediate holding only the rows the vertical pass
// needs, then vertical), each result rounded (+2^21) and clipped to 0..255.
#include "io/Image.h"

#include "Error.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

// stb_image: private to this translation unit (static functions), so nothing else in the program
// can clash with it, restricted to the formats we promise.
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wcast-qual"
#pragma GCC diagnostic ignored "-Wuseless-cast"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace kvsteer {

namespace {

const char* const kExpectedFormats = "expected PNG, JPEG, BMP or GIF";

std::string imagePrefix(const std::string& name) { return "image " + name + ": "; }

// Python's floor division for ints.
long long floorDiv2(long long v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// A guess at the container, for clearer error messages.
std::string sniffFormat(const uint8_t* d, size_t n) {
    if (n >= 8 && std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return "PNG";
    if (n >= 2 && d[0] == 0xFF && d[1] == 0xD8) return "JPEG";
    if (n >= 2 && d[0] == 'B' && d[1] == 'M') return "BMP";
    if (n >= 6 && (std::memcmp(d, "GIF87a", 6) == 0 || std::memcmp(d, "GIF89a", 6) == 0)) return "GIF";
    if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return "WebP";
    if (n >= 4 && (std::memcmp(d, "II*\0", 4) == 0 || std::memcmp(d, "MM\0*", 4) == 0)) return "TIFF";
    return "";
}

// stb_image 2.27 does not check that a JPEG Huffman table (DHT) declares at most 256 symbols and
// then writes past its tables. Walk the marker segments first and refuse such files. Returns an
// empty string when the file is fine as far as this check goes, otherwise the reason.
std::string jpegHuffmanProblem(const uint8_t* d, size_t n) {
    size_t i = 2;  // after SOI
    while (i + 1 < n) {
        if (d[i] != 0xFF) {  // entropy-coded data: skip to the next marker
            ++i;
            continue;
        }
        const uint8_t m = d[i + 1];
        if (m == 0xFF) {  // fill byte
            ++i;
            continue;
        }
        if (m == 0x00 || (m >= 0xD0 && m <= 0xD9) || m == 0x01) {  // stuffed 0, RSTn, SOI, EOI, TEM
            i += 2;
            continue;
        }
        if (i + 3 >= n) return "";  // truncated; stb reports it
        const size_t len = (size_t(d[i + 2]) << 8) | d[i + 3];
        if (len < 2) return "";  // stb reports it
        if (m == 0xC4) {
            // Mirror stb: read tables while the remaining length is positive (bytes past the end
            // of the file read as 0, as stb's reader does).
            auto byteAt = [&](size_t k) -> size_t { return k < n ? d[k] : 0; };
            long long remaining = static_cast<long long>(len) - 2;
            size_t p = i + 4;
            while (remaining > 0 && p < n) {
                size_t count = 0;
                for (size_t k = 0; k < 16; ++k) count += byteAt(p + 1 + k);
                if (count > 256)
                    return "a Huffman table declares " + std::to_string(count) + " symbols (at most 256)";
                remaining -= 17 + static_cast<long long>(count);
                p += 17 + count;
            }
        }
        i += 2 + len;
    }
    return "";
}

// stb_image fills a truncated BMP with zeros (and so turns a few bytes claiming huge dimensions
// into a huge image); Pillow refuses truncated files. The BMPs stb decodes are uncompressed, so
// the pixel data must be offset + rowStride * height bytes. Returns the reason, or "".
std::string bmpTruncation(const uint8_t* d, size_t n) {
    auto le16 = [&](size_t o) -> uint32_t { return o + 2 <= n ? uint32_t(d[o]) | uint32_t(d[o + 1]) << 8 : 0; };
    auto le32 = [&](size_t o) -> uint32_t { return o + 4 <= n ? le16(o) | le16(o + 2) << 16 : 0; };
    if (n < 26) return "";  // stb reports it
    const uint32_t offset = le32(10);
    const uint32_t headerSize = le32(14);
    long long w = 0, h = 0;
    uint32_t bpp = 0;
    if (headerSize == 12) {
        w = static_cast<int16_t>(le16(18));
        h = static_cast<int16_t>(le16(20));
        bpp = le16(24);
    } else {
        w = static_cast<int32_t>(le32(18));
        h = static_cast<int32_t>(le32(22));
        bpp = le16(28);
        const uint32_t compression = le32(30);
        if (compression != 0 && compression != 3 && compression != 6) return "";  // stb rejects RLE etc.
    }
    if (w <= 0 || h == 0 || bpp == 0 || bpp > 32) return "";  // stb reports it
    if (h < 0) h = -h;
    const long long stride = ((w * bpp + 31) / 32) * 4;
    const long long need = static_cast<long long>(offset) + stride * h;
    if (static_cast<long long>(n) < need)
        return "the file is truncated (" + std::to_string(n) + " bytes; the header needs " + std::to_string(need) + ")";
    return "";
}

// ---------------------------------------------------------------------------------------------
// Resampling (Pillow's bicubic convolution, fixed point, 8 bits per channel)

constexpr int kPrecisionBits = 32 - 8 - 2;  // 22
constexpr double kBicubicSupport = 2.0;

// Products through a volatile so that the compiler can never fuse them into an FMA (which would
// round differently from Pillow's separately rounded multiply and add).
inline double mulNoFma(double a, double b) {
    volatile double p = a * b;
    return p;
}

// Keys' cubic convolution kernel with a = -0.5.
double bicubicFilter(double x) {
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) {
        const double t = mulNoFma(a + 2.0, x) - (a + 3.0);
        return mulNoFma(mulNoFma(t, x), x) + 1.0;
    }
    if (x < 2.0) {
        const double t1 = mulNoFma(x - 5.0, x) + 8.0;
        const double t2 = mulNoFma(t1, x) - 4.0;
        return mulNoFma(t2, a);
    }
    return 0.0;
}

// Fixed-point coefficients for one axis: output i reads `count[i]` input samples starting at
// `first[i]` with weights kk[i * ksize + j].
struct AxisCoeffs {
    int ksize = 0;
    std::vector<int> first;
    std::vector<int> count;
    std::vector<int32_t> kk;
};

AxisCoeffs computeCoeffs(int inSize, int outSize) {
    // Box is the whole input: in0 = 0, in1 = inSize.
    const double scale = static_cast<double>(inSize) / outSize;
    const double filterScale = scale < 1.0 ? 1.0 : scale;
    const double support = kBicubicSupport * filterScale;
    AxisCoeffs c;
    c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
    c.first.resize(outSize);
    c.count.resize(outSize);
    c.kk.assign(static_cast<size_t>(outSize) * c.ksize, 0);
    std::vector<double> w(c.ksize);
    const double ss = 1.0 / filterScale;
    for (int xx = 0; xx < outSize; ++xx) {
        const double center = mulNoFma(xx + 0.5, scale);
        int xmin = static_cast<int>(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int xmax = static_cast<int>(center + support + 0.5);
        if (xmax > inSize) xmax = inSize;
        xmax -= xmin;
        if (xmax > c.ksize) xmax = c.ksize;  // cannot happen; keeps indexing safe
        double sum = 0.0;
        for (int x = 0; x < xmax; ++x) {
            const double v = bicubicFilter(mulNoFma(x + xmin - center + 0.5, ss));
            w[x] = v;
            sum += v;
        }
        for (int x = 0; x < xmax; ++x) {
            if (sum != 0.0) w[x] /= sum;
        }
        int32_t* k = &c.kk[static_cast<size_t>(xx) * c.ksize];
        for (int x = 0; x < xmax; ++x) {
            const double scaled = w[x] * static_cast<double>(1 << kPrecisionBits);
            k[x] = static_cast<int32_t>(w[x] < 0 ? scaled - 0.5 : scaled + 0.5);
        }
        c.first[xx] = xmin;
        c.count[xx] = xmax;
    }
    return c;
}

inline uint8_t clip8(int64_t v) {
    if (v >= (int64_t(1) << kPrecisionBits << 8)) return 255;
    if (v <= 0) return 0;
    return static_cast<uint8_t>(v >> kPrecisionBits);
}

// Horizontal pass over input rows [rowBegin, rowBegin + out.height).
void resampleHorizontal(const ImageU8& in, ImageU8& out, int rowBegin, const AxisCoeffs& c) {
    const int64_t half = int64_t(1) << (kPrecisionBits - 1);
    for (int yy = 0; yy < out.height; ++yy) {
        const uint8_t* row = &in.rgb[static_cast<size_t>(yy + rowBegin) * in.width * 3];
        uint8_t* dst = &out.rgb[static_cast<size_t>(yy) * out.width * 3];
        for (int xx = 0; xx < out.width; ++xx) {
            const int32_t* k = &c.kk[static_cast<size_t>(xx) * c.ksize];
            const uint8_t* src = row + static_cast<size_t>(c.first[xx]) * 3;
            int64_t s0 = half, s1 = half, s2 = half;
            for (int x = 0; x < c.count[xx]; ++x) {
                s0 += int64_t(src[x * 3 + 0]) * k[x];
                s1 += int64_t(src[x * 3 + 1]) * k[x];
                s2 += int64_t(src[x * 3 + 2]) * k[x];
            }
            dst[xx * 3 + 0] = clip8(s0);
            dst[xx * 3 + 1] = clip8(s1);
            dst[xx * 3 + 2] = clip8(s2);
        }
    }
}

// Vertical pass; input rows are offset by -rowShift relative to the coefficients' indices.
void resampleVertical(const ImageU8& in, ImageU8& out, int rowShift, const AxisCoeffs& c) {
    const int64_t half = int64_t(1) << (kPrecisionBits - 1);
    const size_t stride = static_cast<size_t>(in.width) * 3;
    for (int yy = 0; yy < out.height; ++yy) {
        const int32_t* k = &c.kk[static_cast<size_t>(yy) * c.ksize];
        const int ymin = c.first[yy] - rowShift;
        const int n = c.count[yy];
        uint8_t* dst = &out.rgb[static_cast<size_t>(yy) * out.width * 3];
        for (int xx = 0; xx < out.width; ++xx) {
            const uint8_t* src = &in.rgb[static_cast<size_t>(ymin) * stride + static_cast<size_t>(xx) * 3];
            int64_t s0 = half, s1 = half, s2 = half;
            for (int y = 0; y < n; ++y) {
                const uint8_t* p = src + static_cast<size_t>(y) * stride;
                s0 += int64_t(p[0]) * k[y];
                s1 += int64_t(p[1]) * k[y];
                s2 += int64_t(p[2]) * k[y];
            }
            dst[xx * 3 + 0] = clip8(s0);
            dst[xx * 3 + 1] = clip8(s1);
            dst[xx * 3 + 2] = clip8(s2);
        }
    }
}

void checkImage(const ImageU8& img, const char* what) {
    if (img.width <= 0 || img.height <= 0)
        throw Error(std::string(what) + ": empty image (" + std::to_string(img.width) + "x" +
                    std::to_string(img.height) + "); expected a non-empty RGB image");
    if (img.rgb.size() != static_cast<size_t>(img.width) * img.height * 3)
        throw Error(std::string(what) + ": pixel buffer holds " + std::to_string(img.rgb.size()) +
                    " bytes; expected width*height*3 = " +
                    std::to_string(static_cast<size_t>(img.width) * img.height * 3));
}

// ---------------------------------------------------------------------------------------------
// JSON helpers for preprocessor_config.json

using nlohmann::json;

[[noreturn]] void fieldError(const std::string& file, const std::string& field, const std::string& expected,
                             const json& got) {
    std::string shown = got.dump();
    if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
    throw Error(file + ": field \"" + field + "\": expected " + expected + ", got " + shown);
}

bool getBool(const json& j, const std::string& file, const char* key, bool def) {
    auto it = j.find(key);
    if (it == j.end()) return def;
    if (!it->is_boolean()) fieldError(file, key, "true or false", *it);
    return it->get<bool>();
}

int positiveInt(const json& v, const std::string& file, const std::string& field) {
    if (!v.is_number_integer()) fieldError(file, field, "a positive integer", v);
    const long long n = v.is_number_unsigned() ? static_cast<long long>(std::min<uint64_t>(v.get<uint64_t>(), 1u << 30))
                                               : v.get<long long>();
    if (n <= 0 || n > (1 << 20)) fieldError(file, field, "a positive integer (at most 1048576)", v);
    return static_cast<int>(n);
}

double finiteNumber(const json& v, const std::string& file, const std::string& field) {
    if (!v.is_number()) fieldError(file, field, "a number", v);
    const double d = v.get<double>();
    if (!std::isfinite(d)) fieldError(file, field, "a finite number", v);
    return d;
}

void getTriple(const json& j, const std::string& file, const char* key, float out[3], bool nonZero) {
    auto it = j.find(key);
    if (it == j.end()) return;
    const std::string what = nonZero ? "a non-zero number or a list of 3 non-zero numbers"
                                     : "a number or a list of 3 numbers";
    double v[3];
    if (it->is_number()) {
        v[0] = v[1] = v[2] = finiteNumber(*it, file, key);
    } else if (it->is_array() && it->size() == 3) {
        for (int c = 0; c < 3; ++c) {
            const json& e = (*it)[static_cast<size_t>(c)];
            if (!e.is_number()) fieldError(file, key, what, *it);
            v[c] = finiteNumber(e, file, std::string(key) + "[" + std::to_string(c) + "]");
        }
    } else {
        fieldError(file, key, what, *it);
    }
    for (int c = 0; c < 3; ++c) {
        if (nonZero && static_cast<float>(v[c]) == 0.0f) fieldError(file, key, what, *it);
        out[c] = static_cast<float>(v[c]);
    }
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Decoding

ImageU8 decodeImage(const uint8_t* data, size_t size, const std::string& nameForErrors) {
    const std::string pre = imagePrefix(nameForErrors);
    if (data == nullptr || size == 0)
        throw Error(pre + "file is empty (0 bytes); " + kExpectedFormats);
    if (size > static_cast<size_t>(std::numeric_limits<int>::max()))
        throw Error(pre + "file is too large (" + std::to_string(size) + " bytes); expected at most 2 GiB");
    const int len = static_cast<int>(size);
    const std::string fmt = sniffFormat(data, size);
    if (fmt == "WebP" || fmt == "TIFF")
        throw Error(pre + fmt + " images are not supported; " + kExpectedFormats);
    if (fmt == "JPEG") {
        const std::string why = jpegHuffmanProblem(data, size);
        if (!why.empty()) throw Error(pre + "cannot decode: corrupt JPEG (" + why + "); " + kExpectedFormats);
    }
    if (fmt == "BMP") {
        const std::string why = bmpTruncation(data, size);
        if (!why.empty()) throw Error(pre + "cannot decode: damaged BMP (" + why + "); " + kExpectedFormats);
    }

    int w = 0, h = 0, comp = 0;
    if (!stbi_info_from_memory(data, len, &w, &h, &comp)) {
        const char* why = stbi_failure_reason();
        throw Error(pre + "cannot decode (stb_image: " + (why ? why : "unknown error") + ")" +
                    (fmt.empty() ? "" : "; the file looks like a damaged " + fmt) + "; " + kExpectedFormats);
    }
    if (w <= 0 || h <= 0)
        throw Error(pre + "image has no pixels (" + std::to_string(w) + "x" + std::to_string(h) + "); " +
                    kExpectedFormats);
    if (static_cast<long long>(w) * h > kMaxImagePixels)
        throw Error(pre + "image is too large (" + std::to_string(w) + "x" + std::to_string(h) +
                    " pixels); expected at most " + std::to_string(kMaxImagePixels) + " pixels");

    ImageU8 img;
    int x = 0, y = 0, n = 0;
    // Pillow opens a 16-bit greyscale PNG as mode "I", and convert("RGB") clips it to 0..255
    // (instead of keeping the high byte, as it does for 16-bit RGB/RGBA/LA).
    if (fmt == "PNG" && comp == 1 && stbi_is_16_bit_from_memory(data, len)) {
        std::unique_ptr<stbi_us, void (*)(void*)> px(stbi_load_16_from_memory(data, len, &x, &y, &n, 3),
                                                     stbi_image_free);
        if (!px) {
            const char* why = stbi_failure_reason();
            throw Error(pre + "cannot decode (stb_image: " + (why ? why : "unknown error") + "); the file looks like a damaged PNG; " + kExpectedFormats);
        }
        img.width = x;
        img.height = y;
        img.rgb.resize(static_cast<size_t>(x) * y * 3);
        for (size_t i = 0; i < img.rgb.size(); ++i) img.rgb[i] = static_cast<uint8_t>(std::min<int>(px.get()[i], 255));
        return img;
    }

    std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load_from_memory(data, len, &x, &y, &n, 3), stbi_image_free);
    if (!px) {
        const char* why = stbi_failure_reason();
        throw Error(pre + "cannot decode (stb_image: " + (why ? why : "unknown error") + ")" +
                    (fmt.empty() ? "" : "; the file looks like a damaged " + fmt) + "; " + kExpectedFormats);
    }
    if (x <= 0 || y <= 0)
        throw Error(pre + "decoded image has no pixels; " + kExpectedFormats);
    img.width = x;
    img.height = y;
    img.rgb.assign(px.get(), px.get() + static_cast<size_t>(x) * y * 3);
    return img;
}

ImageU8 loadImage(const std::string& path) {
    namespace fs = std::filesystem;
    const std::string pre = imagePrefix(path);
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
        throw Error(pre + "cannot access the file (" + ec.message() + "); expected a readable image file");
    if (ec || !fs::exists(st))
        throw Error(pre + "file not found; expected an image file (PNG, JPEG, BMP or GIF)");
    if (fs::is_directory(st))
        throw Error(pre + "is a directory; expected an image file (PNG, JPEG, BMP or GIF)");
    if (!fs::is_regular_file(st))
        throw Error(pre + "is not a regular file; expected an image file (PNG, JPEG, BMP or GIF)");
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw Error(pre + "cannot open the file for reading (" + std::strerror(errno) + "); expected a readable image file");
    std::vector<uint8_t> bytes;
    const uintmax_t fileSize = fs::file_size(path, ec);
    if (!ec && fileSize > static_cast<uintmax_t>(std::numeric_limits<int>::max()))
        throw Error(pre + "file is too large (" + std::to_string(fileSize) + " bytes); expected at most 2 GiB");
    if (!ec && fileSize > 0) bytes.reserve(static_cast<size_t>(fileSize));
    char buf[1 << 16];
    while (f) {
        f.read(buf, sizeof buf);
        const std::streamsize got = f.gcount();
        if (got > 0) bytes.insert(bytes.end(), buf, buf + got);
        if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
            throw Error(pre + "file is too large; expected at most 2 GiB");
    }
    if (f.bad()) throw Error(pre + "read error; expected a readable image file");
    return decodeImage(bytes.data(), bytes.size(), path);
}

// ---------------------------------------------------------------------------------------------
// Geometry

ImageU8 resizeBicubic(const ImageU8& img, int newWidth, int newHeight) {
    checkImage(img, "resizeBicubic");
    if (newWidth <= 0 || newHeight <= 0)
        throw Error("resizeBicubic: target size " + std::to_string(newWidth) + "x" + std::to_string(newHeight) +
                    " is invalid; expected a width and height > 0");
    if (static_cast<long long>(newWidth) * newHeight > kMaxImagePixels)
        throw Error("resizeBicubic: target size " + std::to_string(newWidth) + "x" + std::to_string(newHeight) +
                    " is too large; expected at most " + std::to_string(kMaxImagePixels) + " pixels");
    const bool needH = newWidth != img.width;
    const bool needV = newHeight != img.height;
    if (!needH && !needV) return img;  // Pillow: same size -> copy

    const AxisCoeffs ch = computeCoeffs(img.width, newWidth);
    const AxisCoeffs cv = computeCoeffs(img.height, newHeight);

    // Rows of the input the vertical pass reads.
    const int rowFirst = cv.first[0];
    const int rowLast = cv.first[newHeight - 1] + cv.count[newHeight - 1];

    if (needH) {
        if (static_cast<long long>(newWidth) * (rowLast - rowFirst) > kMaxImagePixels)
            throw Error("resizeBicubic: resizing " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                        " to " + std::to_string(newWidth) + "x" + std::to_string(newHeight) +
                        " needs a too large intermediate image; expected at most " +
                        std::to_string(kMaxImagePixels) + " pixels");
        ImageU8 tmp(newWidth, rowLast - rowFirst);
        resampleHorizontal(img, tmp, rowFirst, ch);
        if (!needV) return tmp;  // rowFirst == 0 and all rows when the height is unchanged
        ImageU8 out(newWidth, newHeight);
        resampleVertical(tmp, out, rowFirst, cv);
        return out;
    }
    ImageU8 out(img.width, newHeight);
    resampleVertical(img, out, 0, cv);
    return out;
}

ImageU8 centerCrop(const ImageU8& img, int cropWidth, int cropHeight) {
    checkImage(img, "centerCrop");
    if (cropWidth <= 0 || cropHeight <= 0)
        throw Error("centerCrop: crop size " + std::to_string(cropWidth) + "x" + std::to_string(cropHeight) +
                    " is invalid; expected a width and height > 0");
    const long long H = img.height, W = img.width;
    long long top = floorDiv2(H - cropHeight), left = floorDiv2(W - cropWidth);
    long long bottom = top + cropHeight, right = left + cropWidth;
    // transformers pads a too-small image with zeros, centred (pad before = ceil(diff / 2)).
    const long long newH = std::max<long long>(cropHeight, H), newW = std::max<long long>(cropWidth, W);
    const long long topPad = (newH - H + 1) / 2, leftPad = (newW - W + 1) / 2;
    top += topPad;
    bottom += topPad;
    left += leftPad;
    right += leftPad;
    const long long y0 = std::max<long long>(0, top), y1 = std::min(newH, bottom);
    const long long x0 = std::max<long long>(0, left), x1 = std::min(newW, right);
    ImageU8 out(static_cast<int>(x1 - x0), static_cast<int>(y1 - y0));
    for (long long y = y0; y < y1; ++y) {
        const long long sy = y - topPad;
        if (sy < 0 || sy >= H) continue;
        for (long long x = x0; x < x1; ++x) {
            const long long sx = x - leftPad;
            if (sx < 0 || sx >= W) continue;
            const size_t s = (static_cast<size_t>(sy) * img.width + static_cast<size_t>(sx)) * 3;
            const size_t d = (static_cast<size_t>(y - y0) * out.width + static_cast<size_t>(x - x0)) * 3;
            out.rgb[d] = img.rgb[s];
            out.rgb[d + 1] = img.rgb[s + 1];
            out.rgb[d + 2] = img.rgb[s + 2];
        }
    }
    return out;
}

ResizeSize shortestEdgeResizeSize(int width, int height, int shortestEdge) {
    if (width <= 0 || height <= 0 || shortestEdge <= 0)
        throw Error("shortest-edge resize: invalid sizes (image " + std::to_string(width) + "x" +
                    std::to_string(height) + ", shortest edge " + std::to_string(shortestEdge) +
                    "); expected positive values");
    const bool portrait = width <= height;
    const long long shortSide = portrait ? width : height;
    const long long longSide = portrait ? height : width;
    if (shortSide == shortestEdge) return {width, height};
    // Python: int(size * long / short) -- true division of ints, then truncation.
    const double q = static_cast<double>(static_cast<long long>(shortestEdge) * longSide) / static_cast<double>(shortSide);
    if (!(q < static_cast<double>(std::numeric_limits<int>::max())))
        throw Error("shortest-edge resize: image " + std::to_string(width) + "x" + std::to_string(height) +
                    " has an absurd aspect ratio; the long edge would be " + std::to_string(q) + " pixels");
    const int newLong = static_cast<int>(q);
    if (newLong <= 0)
        throw Error("shortest-edge resize: image " + std::to_string(width) + "x" + std::to_string(height) +
                    " would resize to an empty image");
    return portrait ? ResizeSize{shortestEdge, newLong} : ResizeSize{newLong, shortestEdge};
}

// ---------------------------------------------------------------------------------------------
// Config

ClipPreprocessConfig ClipPreprocessConfig::fromJsonString(const std::string& text, const std::string& file) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw Error(file + ": not valid JSON (" + e.what() + "); expected a preprocessor_config.json object");
    }
    if (!j.is_object()) throw Error(file + ": expected a JSON object (preprocessor_config.json)");

    ClipPreprocessConfig cfg;
    cfg.doResize = getBool(j, file, "do_resize", cfg.doResize);
    cfg.doCenterCrop = getBool(j, file, "do_center_crop", cfg.doCenterCrop);
    cfg.doRescale = getBool(j, file, "do_rescale", cfg.doRescale);
    cfg.doNormalize = getBool(j, file, "do_normalize", cfg.doNormalize);
    if (j.contains("do_convert_rgb")) (void)getBool(j, file, "do_convert_rgb", true);  // images are always RGB

    if (auto it = j.find("size"); it != j.end()) {
        const json& s = *it;
        if (s.is_number_integer()) {
            cfg.shortestEdge = positiveInt(s, file, "size");
        } else if (s.is_object() && s.contains("shortest_edge")) {
            cfg.shortestEdge = positiveInt(s["shortest_edge"], file, "size.shortest_edge");
            cfg.resizeWidth = cfg.resizeHeight = 0;
        } else if (s.is_object() && s.contains("height") && s.contains("width")) {
            cfg.shortestEdge = 0;
            cfg.resizeHeight = positiveInt(s["height"], file, "size.height");
            cfg.resizeWidth = positiveInt(s["width"], file, "size.width");
        } else {
            fieldError(file, "size", "{\"shortest_edge\": N} or {\"height\": H, \"width\": W}", s);
        }
    }
    if (auto it = j.find("crop_size"); it != j.end()) {
        const json& s = *it;
        if (s.is_number_integer()) {
            cfg.cropHeight = cfg.cropWidth = positiveInt(s, file, "crop_size");
        } else if (s.is_object() && s.contains("height") && s.contains("width")) {
            cfg.cropHeight = positiveInt(s["height"], file, "crop_size.height");
            cfg.cropWidth = positiveInt(s["width"], file, "crop_size.width");
        } else {
            fieldError(file, "crop_size", "{\"height\": H, \"width\": W}", s);
        }
    }
    if (auto it = j.find("rescale_factor"); it != j.end()) {
        cfg.rescaleFactor = finiteNumber(*it, file, "rescale_factor");
    }
    if (auto it = j.find("resample"); it != j.end()) {
        if (!it->is_number_integer() || it->get<long long>() != 3)
            fieldError(file, "resample", "3 (PIL BICUBIC, the only filter implemented)", *it);
    }
    getTriple(j, file, "image_mean", cfg.mean, false);
    getTriple(j, file, "image_std", cfg.std, true);
    return cfg;
}

ClipPreprocessConfig ClipPreprocessConfig::fromJsonFile(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec) || ec)
        throw Error(path + ": file not found; expected a preprocessor_config.json");
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(path + ": cannot open the file for reading; expected a preprocessor_config.json");
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) throw Error(path + ": read error; expected a preprocessor_config.json");
    return fromJsonString(ss.str(), path);
}

// ---------------------------------------------------------------------------------------------
// Pipeline

PreprocessedImage clipPreprocess(const ImageU8& img, const ClipPreprocessConfig& cfg) {
    checkImage(img, "clipPreprocess");
    PreprocessedImage out;
    if (cfg.doResize) {
        ResizeSize target;
        if (cfg.shortestEdge > 0) {
            target = shortestEdgeResizeSize(img.width, img.height, cfg.shortestEdge);
        } else if (cfg.resizeWidth > 0 && cfg.resizeHeight > 0) {
            target = {cfg.resizeWidth, cfg.resizeHeight};
        } else {
            throw Error("clipPreprocess: config has no resize size; expected shortestEdge > 0 or resizeWidth/resizeHeight > 0");
        }
        if (static_cast<long long>(target.width) * target.height > kMaxImagePixels)
            throw Error("clipPreprocess: a " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                        " image would resize to " + std::to_string(target.width) + "x" +
                        std::to_string(target.height) + "; expected at most " + std::to_string(kMaxImagePixels) +
                        " pixels (aspect ratio too extreme)");
        out.resized = resizeBicubic(img, target.width, target.height);
    } else {
        out.resized = img;
    }
    out.cropped = cfg.doCenterCrop ? centerCrop(out.resized, cfg.cropWidth, cfg.cropHeight) : out.resized;

    const ImageU8& c = out.cropped;
    const size_t plane = static_cast<size_t>(c.width) * c.height;
    out.pixels.resize(plane * 3);
    for (int ch = 0; ch < 3; ++ch) {
        const float m = cfg.mean[ch];
        const float s = cfg.std[ch];
        float* dst = &out.pixels[plane * ch];
        for (size_t i = 0; i < plane; ++i) {
            const uint8_t u = c.rgb[i * 3 + ch];
            // transformers: rescale in float64 then cast to float32; normalize in float32.
            float x = cfg.doRescale ? static_cast<float>(static_cast<double>(u) * cfg.rescaleFactor) : static_cast<float>(u);
            if (cfg.doNormalize) x = (x - m) / s;
            dst[i] = x;
        }
    }
    return out;
}

} // namespace kvsteer
