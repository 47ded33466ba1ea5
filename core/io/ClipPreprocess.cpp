// CLIP preprocessing: preprocessor_config.json (strictly validated, transformers' defaults) and
// the pipeline resize -> center crop -> rescale -> normalise, exactly as transformers'
// CLIPImageProcessor does it on 8-bit images.
#include "io/Image.h"

#include "Error.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace kvsteer {

namespace {

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
    // Images are always RGB; null is transformers' "unset" (SiglipImageProcessor saves it so).
    if (j.contains("do_convert_rgb") && !j["do_convert_rgb"].is_null()) (void)getBool(j, file, "do_convert_rgb", true);

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
    requireRgbImage(img, "clipPreprocess");
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
