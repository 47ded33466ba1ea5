#include "models/qwen2vl/Qwen2VlImageProcessor.h"

#include "Error.h"
#include "io/ConfigJson.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kvsteer {

using configjson::json;

namespace {

// ---------------------------------------------------------------------------------------------
// preprocessor_config.json

[[noreturn]] void fieldError(const std::string& file, const char* field, const std::string& expected, const json& got) {
    std::string shown = got.dump();
    if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
    throw Error(file + ": field \"" + field + "\": expected " + expected + ", got " + shown);
}

void readBool(const json& j, const std::string& file, const char* key, bool& out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_boolean()) fieldError(file, key, "true or false", *it);
    out = it->get<bool>();
}

// `shownAs`: the field's name in errors when it sits in a sub-object ("size.longest_edge").
template <typename Int>
void readPositive(const json& j, const std::string& file, const char* key, Int& out, int64_t most, const char* shownAs = nullptr) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    const std::string expected = "a positive integer (at most " + std::to_string(most) + ")";
    if (!shownAs) shownAs = key;
    if (!it->is_number_integer()) fieldError(file, shownAs, expected, *it);
    // nlohmann keeps non-negative integers unsigned: check each form in its own type.
    const bool outOfRange = it->is_number_unsigned()
                                ? it->get<uint64_t>() == 0 || it->get<uint64_t>() > static_cast<uint64_t>(most)
                                : it->get<int64_t>() <= 0 || it->get<int64_t>() > most;
    if (outOfRange) fieldError(file, shownAs, expected, *it);
    out = static_cast<Int>(it->get<int64_t>());
}

// The keys Qwen2VLImageProcessor shares with CLIPImageProcessor (rescale_factor, image_mean,
// image_std, resample, do_rescale, do_normalize, do_convert_rgb) go through the CLIP parser, so
// they are validated and reported exactly alike.
void readClipKeys(const json& j, const std::string& file, Qwen2VlImageProcessorConfig& cfg) {
    json shared = json::object();
    for (const char* key : {"rescale_factor", "image_mean", "image_std", "resample", "do_rescale", "do_normalize", "do_convert_rgb"})
        if (j.contains(key)) shared[key] = j[key];
    shared["do_resize"] = false;
    shared["do_center_crop"] = false;
    const ClipPreprocessConfig clip = ClipPreprocessConfig::fromJsonString(shared.dump(), file);
    cfg.doRescale = clip.doRescale;
    cfg.doNormalize = clip.doNormalize;
    cfg.rescaleFactor = clip.rescaleFactor;
    std::copy(clip.mean, clip.mean + 3, cfg.mean);
    std::copy(clip.std, clip.std + 3, cfg.std);
}

// ---------------------------------------------------------------------------------------------
// smart_resize

// Python's round() on a float: ties go to the even neighbour (12.5 -> 12, 7.5 -> 8).
double roundHalfToEven(double x) {
    double r = std::floor(x);
    const double frac = x - r;
    if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
    return r;
}

std::string sizeText(int width, int height) { return std::to_string(width) + "x" + std::to_string(height); }

} // namespace

Qwen2VlImageProcessorConfig Qwen2VlImageProcessorConfig::fromJsonString(const std::string& text, const std::string& file) {
    const json j = configjson::parseObject(text, file);
    Qwen2VlImageProcessorConfig cfg;
    readClipKeys(j, file, cfg);
    readBool(j, file, "do_resize", cfg.doResize);
    constexpr int64_t kMostPixels = int64_t(1) << 40;   // far above any image; keeps h * w products in int64
    // transformers 5 sizes the image by "size": {"shortest_edge", "longest_edge"} (min / max pixels;
    // the hub's Qwen3-VL files have only that); min_pixels / max_pixels, where given, win, as there.
    // (4.45's "size": {"min_pixels", "max_pixels"} repeats the top-level keys.)
    if (auto size = j.find("size"); size != j.end() && size->is_object()) {
        readPositive(*size, file, "shortest_edge", cfg.minPixels, kMostPixels, "size.shortest_edge");
        readPositive(*size, file, "longest_edge", cfg.maxPixels, kMostPixels, "size.longest_edge");
    }
    readPositive(j, file, "min_pixels", cfg.minPixels, kMostPixels);
    readPositive(j, file, "max_pixels", cfg.maxPixels, kMostPixels);
    readPositive(j, file, "patch_size", cfg.patchSize, 1 << 12);
    readPositive(j, file, "temporal_patch_size", cfg.temporalPatchSize, 1 << 12);
    readPositive(j, file, "merge_size", cfg.mergeSize, 1 << 12);
    if (cfg.minPixels > cfg.maxPixels)
        throw Error(file + ": field \"min_pixels\" (" + std::to_string(cfg.minPixels) + ") must not exceed \"max_pixels\" (" +
                    std::to_string(cfg.maxPixels) + ")");
    return cfg;
}

Qwen2VlImageProcessorConfig Qwen2VlImageProcessorConfig::fromJsonFile(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec) || ec) throw Error(path + ": file not found; expected a preprocessor_config.json");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open the file for reading; expected a preprocessor_config.json");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw Error(path + ": read error; expected a preprocessor_config.json");
    return fromJsonString(ss.str(), path);
}

ResizeSize smartResize(int height, int width, int factor, int64_t minPixels, int64_t maxPixels) {
    if (factor <= 0 || minPixels <= 0 || maxPixels <= 0)
        throw Error("smart_resize: factor, min_pixels and max_pixels must be positive");
    if (height < factor || width < factor)
        throw Error("smart_resize: image " + sizeText(width, height) + " is too small; both sides must be at least " +
                    std::to_string(factor) + " pixels (patch_size * merge_size)");
    if (static_cast<double>(std::max(height, width)) / std::min(height, width) > 200.0)
        throw Error("smart_resize: image " + sizeText(width, height) + " has an aspect ratio above 200");
    // Every step in float64 and in Python's order, so the floor/ceil land where transformers' do.
    int64_t h = static_cast<int64_t>(roundHalfToEven(static_cast<double>(height) / factor)) * factor;
    int64_t w = static_cast<int64_t>(roundHalfToEven(static_cast<double>(width) / factor)) * factor;
    const double area = static_cast<double>(static_cast<int64_t>(height) * width);
    if (h * w > maxPixels) {
        const double beta = std::sqrt(area / static_cast<double>(maxPixels));
        h = static_cast<int64_t>(std::floor(height / beta / factor)) * factor;
        w = static_cast<int64_t>(std::floor(width / beta / factor)) * factor;
    } else if (h * w < minPixels) {
        const double beta = std::sqrt(static_cast<double>(minPixels) / area);
        h = static_cast<int64_t>(std::ceil(height * beta / factor)) * factor;
        w = static_cast<int64_t>(std::ceil(width * beta / factor)) * factor;
    }
    if (h <= 0 || w <= 0 || h * w > kMaxImagePixels)
        throw Error("smart_resize: image " + sizeText(width, height) + " would resize to " + std::to_string(w) + "x" +
                    std::to_string(h) + " (min_pixels " + std::to_string(minPixels) + ", max_pixels " + std::to_string(maxPixels) +
                    "); expected a non-empty image of at most " + std::to_string(kMaxImagePixels) + " pixels");
    return {static_cast<int>(w), static_cast<int>(h)};
}

ImageU8 qwen2VlResize(const ImageU8& img, const Qwen2VlImageProcessorConfig& cfg) {
    requireRgbImage(img, "qwen2VlResize");
    if (!cfg.doResize) {
        // transformers would fail in its patch reshape: say so up front.
        if (img.width % cfg.factor() != 0 || img.height % cfg.factor() != 0)
            throw Error("qwen2VlResize: do_resize is false but the image is " + sizeText(img.width, img.height) +
                        "; both sides must be multiples of " + std::to_string(cfg.factor()));
        return img;
    }
    const ResizeSize size = smartResize(img.height, img.width, cfg.factor(), cfg.minPixels, cfg.maxPixels);
    return resizeBicubic(img, size.width, size.height);
}

at::Tensor flattenPatches(const std::vector<float>& chw, int height, int width, const Qwen2VlImageProcessorConfig& cfg) {
    const int64_t P = cfg.patchSize, T = cfg.temporalPatchSize, plane = static_cast<int64_t>(height) * width;
    const GridThw grid{1, height / P, width / P};
    if (height % cfg.factor() != 0 || width % cfg.factor() != 0 || static_cast<int64_t>(chw.size()) != 3 * plane)
        throw Error("flattenPatches: expected 3 x " + std::to_string(height) + " x " + std::to_string(width) +
                    " floats with sides multiples of " + std::to_string(cfg.factor()));
    const at::Tensor positions = patchPositions(grid, cfg.mergeSize);   // [N, 2]
    const int64_t* pos = positions.data_ptr<int64_t>();
    at::Tensor out = at::empty({grid.patches(), cfg.patchDim()}, at::kFloat);   // [N, C*T*P*P]
    float* dst = out.data_ptr<float>();
    for (int64_t n = 0; n < grid.patches(); ++n) {
        const int64_t top = pos[2 * n] * P, left = pos[2 * n + 1] * P;
        for (int64_t c = 0; c < 3; ++c)
            for (int64_t f = 0; f < T; ++f)   // an image is T identical frames
                for (int64_t y = 0; y < P; ++y) {
                    const float* src = chw.data() + c * plane + (top + y) * width + left;
                    std::copy(src, src + P, dst);
                    dst += P;
                }
    }
    return out;
}

PreprocessedImage qwen2VlResizeAndNormalize(const ImageU8& img, const Qwen2VlImageProcessorConfig& cfg) {
    // Rescale and normalise are CLIP's, bit for bit: reuse its pipeline without resize or crop.
    ClipPreprocessConfig clip;
    clip.doResize = clip.doCenterCrop = false;
    clip.doRescale = cfg.doRescale;
    clip.doNormalize = cfg.doNormalize;
    clip.rescaleFactor = cfg.rescaleFactor;
    std::copy(cfg.mean, cfg.mean + 3, clip.mean);
    std::copy(cfg.std, cfg.std + 3, clip.std);

    return clipPreprocess(qwen2VlResize(img, cfg), clip);
}

Qwen2VlImage qwen2VlPreprocess(const ImageU8& img, const Qwen2VlImageProcessorConfig& cfg) {
    Qwen2VlImage out;
    out.image = qwen2VlResizeAndNormalize(img, cfg);
    const ImageU8& r = out.image.resized;
    out.pixelValues = flattenPatches(out.image.pixels, r.height, r.width, cfg);
    out.grid = {1, r.height / cfg.patchSize, r.width / cfg.patchSize};
    out.positions = patchPositions(out.grid, cfg.mergeSize);
    return out;
}

} // namespace kvsteer
