#include "analysis/HeatmapFiles.h"

#include "Error.h"
#include "io/Image.h"
#include "io/TextFile.h"

#include <ATen/ops/contiguous.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <cmath>
#include <sstream>

namespace kvsteer {

namespace {

const std::array<const char*, kHeatMetricCount> kMetricNames = {"key-norm", "value-norm", "key-delta", "value-delta", "value-cosine",
                                                                "attention"};

std::string lowercaseExtension(const std::string& path) {
    const size_t dot = path.find_last_of('.');
    std::string ext = dot == std::string::npos ? "" : path.substr(dot);
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return ext;
}

// NPY format 1.0: magic, version, a little-endian uint16 header length, then a Python dict
// literal padded with spaces and ended by '\n' so the data starts on a 64-byte boundary.
std::string npyBytes(const at::Tensor& maps) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
    for (int64_t d : maps.sizes()) header += std::to_string(d) + ", ";
    header += "), }";
    const size_t unpadded = 10 + header.size() + 1;
    header += std::string((64 - unpadded % 64) % 64, ' ') + "\n";
    std::string out = "\x93NUMPY";
    out += char(1);
    out += char(0);
    out += char(header.size() & 0xff);
    out += char(header.size() >> 8);
    out += header;
    out.append(reinterpret_cast<const char*>(maps.data_ptr<float>()), size_t(maps.numel()) * sizeof(float));
    return out;
}

std::string csvText(const at::Tensor& maps) {
    std::ostringstream out;
    out.precision(9);
    out << "layer,row,col,value\n";
    const float* v = maps.data_ptr<float>();
    for (int64_t l = 0; l < maps.size(0); ++l)
        for (int64_t r = 0; r < maps.size(1); ++r)
            for (int64_t c = 0; c < maps.size(2); ++c) out << l << ',' << r << ',' << c << ',' << *v++ << '\n';
    return out.str();
}

ImageU8 tiledImage(const at::Tensor& maps, int cellPixels) {
    const int layers = int(maps.size(0)), h = int(maps.size(1)), w = int(maps.size(2)), gap = 2;
    const int columns = std::min(layers, 8), rows = (layers + 7) / 8;
    ImageU8 img(columns * (w * cellPixels + gap) - gap, rows * (h * cellPixels + gap) - gap);
    std::fill(img.rgb.begin(), img.rgb.end(), uint8_t(64));   // the gaps: dark gray
    const float* data = maps.data_ptr<float>();
    for (int l = 0; l < layers; ++l) {
        const float* layer = data + size_t(l) * h * w;
        float top = 1e-30f;
        for (int i = 0; i < h * w; ++i) top = std::max(top, std::abs(layer[i]));
        const int x0 = (l % 8) * (w * cellPixels + gap), y0 = (l / 8) * (h * cellPixels + gap);
        for (int r = 0; r < h; ++r)
            for (int c = 0; c < w; ++c) {
                const auto shade = uint8_t(std::lround(255 * std::clamp(layer[r * w + c] / top, 0.0f, 1.0f)));
                for (int y = 0; y < cellPixels; ++y)
                    for (int x = 0; x < cellPixels; ++x)
                        for (int ch = 0; ch < 3; ++ch) img.at(y0 + r * cellPixels + y, x0 + c * cellPixels + x, ch) = shade;
            }
    }
    return img;
}

} // namespace

void saveHeatmaps(const std::string& path, const at::Tensor& maps, int cellPixels) {
    if (!maps.defined() || maps.dim() != 3 || maps.scalar_type() != at::kFloat)
        throw Error("heatmaps " + path + ": expected a float32 [layers, grid_h, grid_w] tensor");
    const at::Tensor m = maps.cpu().contiguous();
    requireHeatmapFormat(path);
    const std::string ext = lowercaseExtension(path);
    if (ext == ".npy") writeTextAtomically(path, npyBytes(m));
    else if (ext == ".csv") writeTextAtomically(path, csvText(m));
    else savePng(path, tiledImage(m, cellPixels));
}

void requireHeatmapFormat(const std::string& path) {
    const std::string ext = lowercaseExtension(path);
    if (ext != ".npy" && ext != ".csv" && ext != ".png") throw Error("heatmaps " + path + ": the extension must be .npy, .csv or .png");
}

std::string heatMetricName(HeatMetric metric) { return kMetricNames[size_t(metric)]; }

HeatMetric parseHeatMetric(const std::string& name) {
    std::string choices;
    for (size_t i = 0; i < kMetricNames.size(); ++i) {
        if (name == kMetricNames[i]) return HeatMetric(i);
        choices += (i ? ", " : "") + std::string(kMetricNames[i]);
    }
    throw Error("metric '" + name + "': expected one of " + choices);
}

} // namespace kvsteer
