#include "steer/Mask.h"

#include "Error.h"
#include "io/Image.h"
#include "io/SafeTensors.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/zeros.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace kvsteer {

namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

at::Tensor rectMask(const std::string& spec, int gh, int gw) {
    static const std::regex pattern(R"(rect:(\d+),(\d+),(\d+),(\d+))");
    std::smatch m;
    if (!std::regex_match(spec, m, pattern)) throw Error("mask '" + spec + "': expected rect:r0,c0,r1,c1 (grid cells, inclusive)");
    const int r0 = std::stoi(m[1]), c0 = std::stoi(m[2]), r1 = std::stoi(m[3]), c1 = std::stoi(m[4]);
    if (r0 > r1 || c0 > c1 || r1 >= gh || c1 >= gw)
        throw Error("mask '" + spec + "': rectangle must satisfy r0 <= r1 < " + std::to_string(gh) + " and c0 <= c1 < " + std::to_string(gw));
    at::Tensor mask = at::zeros({gh, gw});
    mask.narrow(0, r0, r1 - r0 + 1).narrow(1, c0, c1 - c0 + 1).fill_(1.0);
    return mask;
}

// Area-average a grayscale version of the image onto the grid: cell (r, c) covers rows
// [r*H/gh, (r+1)*H/gh) and columns likewise.
at::Tensor imageMask(const std::string& path, int gh, int gw) {
    const ImageU8 img = loadImage(path);
    at::Tensor mask = at::zeros({gh, gw});
    float* out = mask.data_ptr<float>();
    for (int r = 0; r < gh; ++r)
        for (int c = 0; c < gw; ++c) {
            const int y0 = int(int64_t(r) * img.height / gh), y1 = std::max(y0 + 1, int(int64_t(r + 1) * img.height / gh));
            const int x0 = int(int64_t(c) * img.width / gw), x1 = std::max(x0 + 1, int(int64_t(c + 1) * img.width / gw));
            double sum = 0;
            for (int y = y0; y < y1; ++y)
                for (int x = x0; x < x1; ++x)
                    for (int ch = 0; ch < 3; ++ch) sum += img.at(y, x, ch);
            out[r * gw + c] = static_cast<float>(sum / (3.0 * 255.0 * (y1 - y0) * (x1 - x0)));
        }
    return mask;
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
    const std::string shape = "(" + std::to_string(gh) + ", " + std::to_string(gw) + ")";
    if (header.find(shape) == std::string::npos) throw Error("mask " + path + ": expected shape " + shape);
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
        throw Error("mask " + path + ": tensor '" + name + "' must be [" + std::to_string(gh) + ", " + std::to_string(gw) + "]");
    return t.to(at::kFloat).clone();
}

} // namespace

at::Tensor loadMask(const std::string& spec, int gh, int gw) {
    if (spec.rfind("rect:", 0) == 0) return rectMask(spec, gh, gw);
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
