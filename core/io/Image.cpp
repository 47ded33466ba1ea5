// Image loading: stb_image decoding of PNG, JPEG, BMP and GIF into 8-bit RGB, with pre-checks
// for inputs that stb mishandles (a corrupt JPEG Huffman table, a truncated BMP) so that every
// bad file is a kvsteer::Error naming it. Resizing is in ImageResize.cpp, the CLIP pipeline in
// ClipPreprocess.cpp, PNG writing in ImageWrite.cpp.
#include "io/Image.h"

#include "Error.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

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


// Where a JPEG's data after its SOI marker starts, or 0 if it has none. stb_image skips any run of
// 0xFF fill bytes before a marker, SOI included (FF FF FF D8 is a JPEG to it), so the pre-checks
// below must see such a file as a JPEG too.
size_t jpegAfterSoi(const uint8_t* d, size_t n) {
    size_t i = 0;
    while (i < n && d[i] == 0xFF) ++i;
    return i >= 1 && i < n && d[i] == 0xD8 ? i + 1 : 0;
}

// A guess at the container, for clearer error messages.
std::string sniffFormat(const uint8_t* d, size_t n) {
    if (n >= 8 && std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return "PNG";
    if (jpegAfterSoi(d, n) != 0) return "JPEG";
    if (n >= 2 && d[0] == 'B' && d[1] == 'M') return "BMP";
    if (n >= 6 && (std::memcmp(d, "GIF87a", 6) == 0 || std::memcmp(d, "GIF89a", 6) == 0)) return "GIF";
    if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return "WebP";
    if (n >= 4 && (std::memcmp(d, "II*\0", 4) == 0 || std::memcmp(d, "MM\0*", 4) == 0)) return "TIFF";
    return "";
}

// stb_image 2.27 does not check that a JPEG Huffman table (DHT) declares at most 256 symbols and
// then writes past its tables; nor that a scan (SOS) uses only tables a DHT defined before it, and
// then decodes with uninitialised tables (UBSan: an index far out of bounds in
// stbi__jpeg_huff_decode). Walk the marker segments first and refuse such files. Returns an empty
// string when the file is fine as far as this check goes, otherwise the reason.
std::string jpegHuffmanProblem(const uint8_t* d, size_t n) {
    auto byteAt = [&](size_t k) -> size_t { return k < n ? d[k] : 0; };   // past the end reads 0, as in stb
    bool defined[2][4] = {};   // [DC 0 / AC 1][table id]
    bool progressive = false;
    size_t i = jpegAfterSoi(d, n);
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
        if (m == 0xC2) progressive = true;
        if (m == 0xC4) {
            // Mirror stb: read tables while the remaining length is positive.
            long long remaining = static_cast<long long>(len) - 2;
            size_t p = i + 4;
            while (remaining > 0 && p < n) {
                size_t count = 0;
                for (size_t k = 0; k < 16; ++k) count += byteAt(p + 1 + k);
                if (count > 256)
                    return "a Huffman table declares " + std::to_string(count) + " symbols (at most 256)";
                const size_t tc = byteAt(p) >> 4, th = byteAt(p) & 15;
                if (tc <= 1 && th <= 3) defined[tc][th] = true;   // stb refuses other ids itself
                remaining -= 17 + static_cast<long long>(count);
                p += 17 + count;
            }
        }
        if (m == 0xDA) {
            // The tables each component of the scan decodes with: a baseline scan uses its DC and
            // AC tables, a progressive one the DC table in a first DC scan and the AC table in an
            // AC scan (stb's own order of reading: Ns, then (id, Td<<4 | Ta) per component, then
            // Ss, Se, Ah<<4 | Al).
            const size_t ns = byteAt(i + 4);
            const size_t ss = byteAt(i + 5 + 2 * ns), ah = byteAt(i + 7 + 2 * ns) >> 4;
            for (size_t c = 0; c < ns && c < 4; ++c) {
                const size_t q = byteAt(i + 6 + 2 * c), dc = q >> 4, ac = q & 15;
                if (dc > 3 || ac > 3) continue;   // stb refuses these itself
                const bool needDc = !progressive || (ss == 0 && ah == 0), needAc = !progressive || ss > 0;
                if ((needDc && !defined[0][dc]) || (needAc && !defined[1][ac]))
                    return "a scan uses a Huffman table no DHT segment defined before it";
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
        // stb reads the compression as a signed int and refuses only 1, 2 (RLE) and 4 and up: 0, 3
        // and every value with the top bit set decode as plain pixels, so those must be complete.
        const int32_t compression = static_cast<int32_t>(le32(30));
        if (compression == 1 || compression == 2 || compression >= 4) return "";  // stb refuses it
    }
    if (w <= 0 || h == 0 || bpp == 0) return "";  // stb reports it
    if (h < 0) h = -h;
    // The bytes stb reads a row: 16 and 24 bits and the palette depths padded to 4 bytes; every
    // other depth from 17 bits up (40 included: stb refuses none of them) as one unpadded 32-bit
    // word a pixel.
    const long long stride = bpp <= 16 || bpp == 24 ? ((w * bpp + 31) / 32) * 4 : 4 * w;
    // stride * h can pass 2^63 (both come from the header): count the rows the file holds instead.
    const long long size = static_cast<long long>(n), start = static_cast<long long>(offset);
    const long long rows = size > start ? (size - start) / stride : 0;
    if (rows < h)
        return "the file is truncated (" + std::to_string(n) + " bytes; the header needs " + std::to_string(h) +
               " rows of " + std::to_string(stride) + " bytes after offset " + std::to_string(offset) + ")";
    return "";
}

// stb_image grows its compressed-data buffer to an IDAT chunk's declared length before reading the
// chunk, so a few bytes declaring a 2 GB chunk cost 2 GB; Pillow refuses truncated files. Every
// chunk up to IEND must lie inside the file. Returns the reason, or "".
std::string pngTruncation(const uint8_t* d, size_t n) {
    size_t i = 8;  // after the signature
    while (i + 8 <= n) {
        const uint64_t len = uint64_t(d[i]) << 24 | uint64_t(d[i + 1]) << 16 | uint64_t(d[i + 2]) << 8 | d[i + 3];
        if (i + 12 + len > n)   // length, type, data, CRC
            return "the file is truncated (" + std::to_string(n) + " bytes; the chunk '" +
                   std::string(reinterpret_cast<const char*>(d + i + 4), 4) + "' at byte " + std::to_string(i) +
                   " declares " + std::to_string(len) + " bytes of data)";
        if (std::memcmp(d + i + 4, "IEND", 4) == 0) return "";
        i += 12 + len;
    }
    return "";  // stb reports a missing IEND or a cut chunk header
}

// A GIF's canvas is held to a quarter of the pixel cap: stb_image allocates the whole canvas about
// three times over (RGBA frame, RGBA background, per-pixel history: 9 bytes a pixel) before it
// reads a single frame, so a GIF of a few bytes claiming the full cap took 2.3 GB and 10 s.
constexpr long long kMaxGifPixels = kMaxImagePixels / 4;

// Files too small for the picture they declare. A JPEG: stb decodes entropy-coded data that ends
// early as zeros, so a few hundred bytes declaring a 64272x244 frame cost seconds; every 8x8 block
// costs at least one bit (Huffman codes are 1 to 16 bits long). A GIF: its LZW codes are at least
// one bit and paint at most 4096 pixels each, so a file under canvas / 32768 bytes cannot paint
// its canvas (a 42-byte GIF declaring 9216x1836 cost seconds of canvas filling); the canvas is
// also held to the GIF cap above. Returns the reason, or "".
std::string sizeProblem(const std::string& fmt, size_t n, int w, int h) {
    const long long bytes = static_cast<long long>(n), pixels = static_cast<long long>(w) * h;
    if (fmt == "JPEG") {
        const long long blocks = ((w + 7LL) / 8) * ((h + 7LL) / 8);
        if (bytes < blocks / 8)
            return "the file is truncated (" + std::to_string(n) + " bytes cannot hold the " + std::to_string(blocks) +
                   " blocks of a " + std::to_string(w) + "x" + std::to_string(h) + " JPEG)";
    }
    if (fmt == "GIF") {
        if (pixels > kMaxGifPixels)
            return "its canvas is too large (" + std::to_string(w) + "x" + std::to_string(h) + " pixels; at most " +
                   std::to_string(kMaxGifPixels) + " for a GIF)";
        constexpr long long kMaxGifPixelsPerByte = 4096LL * 8;
        if (pixels > kMaxGifPixelsPerByte * bytes)
            return "the file is truncated (" + std::to_string(n) + " bytes cannot paint the " + std::to_string(w) + "x" +
                   std::to_string(h) + " canvas of a GIF)";
    }
    return "";
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
    if (fmt == "PNG") {
        const std::string why = pngTruncation(data, size);
        if (!why.empty()) throw Error(pre + "cannot decode: damaged PNG (" + why + "); " + kExpectedFormats);
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

    if (const std::string why = sizeProblem(fmt, size, w, h); !why.empty())
        throw Error(pre + "cannot decode: " + why + "; " + kExpectedFormats);

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

void requireRgbImage(const ImageU8& img, const char* what) {
    if (img.width <= 0 || img.height <= 0)
        throw Error(std::string(what) + ": empty image (" + std::to_string(img.width) + "x" +
                    std::to_string(img.height) + "); expected a non-empty RGB image");
    if (img.rgb.size() != static_cast<size_t>(img.width) * img.height * 3)
        throw Error(std::string(what) + ": pixel buffer holds " + std::to_string(img.rgb.size()) +
                    " bytes; expected width*height*3 = " +
                    std::to_string(static_cast<size_t>(img.width) * img.height * 3));
}

} // namespace kvsteer
