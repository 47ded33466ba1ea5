#include "steer/Mask.h"

#include "Error.h"
#include "io/Image.h"
#include "io/SafeTensors.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

namespace kvsteer {

namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string gridText(int gh, int gw) { return std::to_string(gh) + "x" + std::to_string(gw); }
std::string shapeText(int64_t a, int64_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; }

int cellIndex(const std::string& digits, const std::string& spec) {
    try {
        return std::stoi(digits);
    } catch (const std::exception&) {   // more digits than an int holds
        throw Error("mask " + spec + ": '" + digits + "' is not a grid cell index");
    }
}

at::Tensor rectMask(const std::string& spec, int gh, int gw) {
    static const std::regex pattern(R"(rect:(\d+),(\d+),(\d+),(\d+))");
    std::smatch m;
    if (!std::regex_match(spec, m, pattern)) throw Error("mask '" + spec + "': expected rect:r0,c0,r1,c1 (grid cells, inclusive)");
    const int r0 = cellIndex(m[1], spec), c0 = cellIndex(m[2], spec), r1 = cellIndex(m[3], spec), c1 = cellIndex(m[4], spec);
    if (r0 > r1 || c0 > c1)
        throw Error("mask " + spec + ": expected r0 <= r1 and c0 <= c1 (the top-left cell, then the bottom-right cell, both inclusive)");
    if (r1 >= gh || c1 >= gw)
        throw Error("mask " + spec + " is outside the model's " + gridText(gh, gw) + " grid (rows 0-" + std::to_string(gh - 1) +
                    ", columns 0-" + std::to_string(gw - 1) + ")");
    at::Tensor mask = at::zeros({gh, gw});
    mask.narrow(0, r0, r1 - r0 + 1).narrow(1, c0, c1 - c0 + 1).fill_(1.0);
    return mask;
}

// "tokens:A-B,C,last": a 1 x N token strip with the named tokens at 1. Indices count the
// tokens the snapshot holds (0 = the first, BOS where the family has one); "last" is the last
// of them, where published cache steering puts its vectors.
at::Tensor tokenMask(const std::string& spec, int gh, int gw) {
    if (gh != 1)
        throw Error("mask " + spec + ": tokens: masks address a text prompt's token strip, but this prompt has an image (" +
                    gridText(gh, gw) + " grid); use rect:r0,c0,r1,c1");
    static const std::regex item(R"((\d+)(?:-(\d+))?|last)");
    at::Tensor mask = at::zeros({gh, gw});
    const std::string list = spec.substr(7);
    size_t begin = 0;
    do {
        const size_t comma = list.find(',', begin);
        const std::string part = list.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
        std::smatch m;
        if (!std::regex_match(part, m, item))
            throw Error("mask '" + spec + "': '" + part + "' is not a token: expected tokens:A-B, tokens:A,B,... or tokens:last");
        int a = gw - 1, b = gw - 1;
        if (part != "last") {
            a = cellIndex(m[1], spec);
            b = m[2].matched ? cellIndex(m[2], spec) : a;
        }
        if (a > b) throw Error("mask " + spec + ": '" + part + "' runs backwards (expected A <= B)");
        if (b >= gw)
            throw Error("mask " + spec + ": token " + std::to_string(b) + " is outside the prompt's " + std::to_string(gw) +
                        " cached tokens (0-" + std::to_string(gw - 1) + ")");
        mask.narrow(1, a, b - a + 1).fill_(1.0);
        begin = comma == std::string::npos ? std::string::npos : comma + 1;
    } while (begin != std::string::npos);
    return mask;
}

// [cells, pixels]: how much of pixel p (in pixels) lies inside cell i when `pixels` pixels are
// spread evenly over `cells` cells. Exact area weights, so any image size maps onto any grid:
// a pixel on a cell boundary is shared, and a grid finer than the image still gets a value.
at::Tensor coverage(int cells, int pixels) {
    at::Tensor w = at::zeros({cells, pixels}, at::kDouble);
    double* out = w.data_ptr<double>();
    for (int i = 0; i < cells; ++i) {
        const double a = double(i) * pixels / cells, b = double(i + 1) * pixels / cells;
        for (int p = int(std::floor(a)); p < std::min(pixels, int(std::ceil(b))); ++p)
            out[int64_t(i) * pixels + p] = std::min(b, p + 1.0) - std::max(a, double(p));
    }
    return w;
}

// The grayscale image (mean of R, G, B; white = 1) area-averaged onto the grid.
at::Tensor imageMask(const std::string& path, int gh, int gw) {
    if (!std::filesystem::exists(path))
        throw Error("mask " + path + ": neither a file nor a MASK form (rect:r0,c0,r1,c1 or tokens:A-B,C,last; or a grayscale "
                    "image, .npy or .safetensors file)");
    ImageU8 img = loadImage(path);
    const at::Tensor rgb = at::from_blob(img.rgb.data(), {img.height, img.width, 3}, at::kByte);
    // A mask is gray (white = 1). A colour image would be read as its brightness, which is
    // rarely what was painted: refused rather than guessed.
    const at::Tensor channels = rgb.to(at::kShort);
    if (!at::equal(channels.select(2, 0), channels.select(2, 1)) || !at::equal(channels.select(2, 1), channels.select(2, 2)))
        throw Error("mask " + path + ": a colour image; a mask image is grayscale (white = 1, black = 0): save it in gray");
    const at::Tensor gray = rgb.to(at::kDouble).mean(2) / 255.0;                   // [H, W]
    const double cellArea = (double(img.height) / gh) * (double(img.width) / gw);  // pixels per cell
    const at::Tensor sums = at::mm(at::mm(coverage(gh, img.height), gray), coverage(gw, img.width).t());
    return (sums / cellArea).to(at::kFloat);
}

// The shape tuple of a .npy header, as written there: "(16, 16)", "(256,)".
std::string npyShape(const std::string& header, const std::string& path) {
    static const std::regex pattern(R"('shape':\s*\(([^)]*)\))");
    std::smatch m;
    if (!std::regex_search(header, m, pattern)) throw Error("mask " + path + ": .npy header has no 'shape'");
    return "(" + std::string(m[1]) + ")";
}

at::Tensor npyMask(const std::string& path, int gh, int gw) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("mask " + path + ": cannot open");
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw Error("mask " + path + ": not a .npy file");
    const int major = static_cast<unsigned char>(bytes[6]);
    size_t headerLen = 0, offset = 0;
    if (major == 1) {
        headerLen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
        offset = 10;
    } else {
        if (bytes.size() < 12) throw Error("mask " + path + ": truncated .npy header");
        uint32_t len;
        std::memcpy(&len, bytes.data() + 8, 4);
        headerLen = len;
        offset = 12;
    }
    if (offset + headerLen > bytes.size()) throw Error("mask " + path + ": truncated .npy header");
    const std::string header = bytes.substr(offset, headerLen);
    const bool f4 = header.find("'<f4'") != std::string::npos, f8 = header.find("'<f8'") != std::string::npos;
    if (!f4 && !f8) throw Error("mask " + path + ": .npy dtype must be little-endian float32 or float64");
    if (header.find("'fortran_order': True") != std::string::npos) throw Error("mask " + path + ": Fortran-order arrays are not supported");
    const std::string expected = "(" + std::to_string(gh) + ", " + std::to_string(gw) + ")", got = npyShape(header, path);
    if (got != expected)
        throw Error("mask " + path + ": the array's shape is " + got + " but the model's grid is " + gridText(gh, gw) + " (expected shape " +
                    expected + ")");
    const size_t elem = f4 ? 4 : 8, data = offset + headerLen;
    if (bytes.size() - data < size_t(gh) * gw * elem) throw Error("mask " + path + ": truncated data");
    at::Tensor raw = at::from_blob(bytes.data() + data, {gh, gw}, f4 ? at::kFloat : at::kDouble);
    return raw.to(at::kFloat).clone();
}

at::Tensor safetensorsMask(const std::string& path, int gh, int gw) {
    const SafeTensorsFile file(path);
    std::string name;
    for (const char* candidate : {"mask", "steer.mask"})
        if (file.contains(candidate)) name = candidate;
    if (name.empty() && file.names().size() == 1) name = file.names().front();
    if (name.empty()) throw Error("mask " + path + ": expected a tensor named 'mask' or 'steer.mask'");
    at::Tensor t = file.tensor(name);
    if (t.sizes().vec() != std::vector<int64_t>{gh, gw})
        throw Error("mask " + path + ": tensor '" + name + "' is " + std::string(c10::str(t.sizes())) + " but the model's grid is " +
                    gridText(gh, gw) + " (expected " + shapeText(gh, gw) + ")");
    return t.to(at::kFloat).clone();
}

} // namespace

at::Tensor loadMask(const std::string& spec, int gh, int gw) {
    if (gh <= 0 || gw <= 0) throw Error("mask " + spec + ": the prompt has no grid (" + gridText(gh, gw) + "), so there is nothing to mask");
    if (spec.rfind("rect:", 0) == 0) return rectMask(spec, gh, gw);
    if (spec.rfind("tokens:", 0) == 0) return tokenMask(spec, gh, gw);
    if (endsWith(spec, ".npy")) return npyMask(spec, gh, gw);
    if (endsWith(spec, ".safetensors")) return safetensorsMask(spec, gh, gw);
    return imageMask(spec, gh, gw);
}

void saveMaskPng(const std::string& path, const at::Tensor& mask, int cellPixels) {
    const at::Tensor m = mask.to(at::kCPU).to(at::kFloat).clamp(0, 1).contiguous();
    const int gh = static_cast<int>(m.size(0)), gw = static_cast<int>(m.size(1));
    ImageU8 img;
    img.width = gw * cellPixels;
    img.height = gh * cellPixels;
    img.rgb.resize(size_t(img.width) * img.height * 3);
    const float* v = m.data_ptr<float>();
    for (int y = 0; y < img.height; ++y)
        for (int x = 0; x < img.width; ++x) {
            const uint8_t g = static_cast<uint8_t>(v[(y / cellPixels) * gw + x / cellPixels] * 255.0f + 0.5f);
            uint8_t* p = &img.rgb[(size_t(y) * img.width + x) * 3];
            p[0] = p[1] = p[2] = g;
        }
    savePng(path, img);
}

} // namespace kvsteer
