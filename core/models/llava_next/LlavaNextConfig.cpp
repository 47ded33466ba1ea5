#include "models/llava_next/LlavaNextConfig.h"

#include "Error.h"
#include "io/ConfigJson.h"
#include "models/llava/LlavaConfig.h"

#include <algorithm>

namespace kvsteer {

using namespace configjson;

namespace {

// LlavaNextConfig's default pinpoints (llava-v1.6's).
std::vector<Resolution> defaultPinpoints() { return {{336, 672}, {672, 336}, {672, 672}, {1008, 336}, {336, 1008}}; }

std::vector<Resolution> parsePinpoints(const json& j, const std::string& where) {
    const auto it = j.find("image_grid_pinpoints");
    if (it == j.end() || it->is_null()) return defaultPinpoints();
    const std::string expected = " (expected a non-empty list of [height, width] pairs of positive integers)";
    if (!it->is_array() || it->empty()) throw Error(where + ": image_grid_pinpoints is " + it->dump() + expected);
    std::vector<Resolution> out;
    for (const json& p : *it) {
        if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number_integer() || p[0].get<int64_t>() <= 0 ||
            p[1].get<int64_t>() <= 0 || p[0].get<int64_t>() > 100000 || p[1].get<int64_t>() > 100000)
            throw Error(where + ": image_grid_pinpoints entry " + p.dump() + " is not valid" + expected);
        out.push_back({p[0].get<int>(), p[1].get<int>()});
    }
    return out;
}

} // namespace

LlavaNextConfig parseLlavaNextConfig(const std::string& text, const std::string& where) {
    LlavaNextConfig c;
    c.model = parseLlavaConfig(text, where);
    if (c.model.modelType != "llava_next") throw Error(where + ": model_type '" + c.model.modelType + "' is not llava_next");
    const json j = parseObject(text, where);
    c.pinpoints = parsePinpoints(j, where);
    c.textModelType = "llama";
    readKey(subObject(j, "text_config", where), "model_type", c.textModelType, where);

    const VisionConfig& v = c.model.vision;
    for (const Resolution& r : c.pinpoints)
        if (r.height % v.imageSize != 0 || r.width % v.imageSize != 0)
            throw Error(where + ": image_grid_pinpoints entry [" + std::to_string(r.height) + ", " + std::to_string(r.width) +
                        "] is not a multiple of the vision tower's image_size " + std::to_string(v.imageSize));
    if (c.model.visionFeatureSelectStrategy != "default")
        throw Error(where + ": vision_feature_select_strategy '" + c.model.visionFeatureSelectStrategy +
                    "' is not supported for llava_next (expected \"default\", as every llava-v1.6 checkpoint has)");
    // The longest prompt an image can make: a picture that fills the largest pinpoint.
    for (const Resolution& r : c.pinpoints) {
        const AnyresGrid g = anyresGrid(r, c.pinpoints, v.imageSize, v.patchSize);
        c.model.maxImageTokens = std::max<int>(c.model.maxImageTokens, int(g.tokens()));
    }
    // The hash covers the pinpoints and the text family too: they change what the tokens are.
    json pins = json::array();
    for (const Resolution& r : c.pinpoints) pins.push_back({r.height, r.width});
    ModelConfig anonymous = c.model;
    anonymous.name.clear();
    c.model.configHash = semanticHash(anonymous.toJsonText() + json({{"model_type", "llava_next"}, {"image_grid_pinpoints", pins},
                                                                     {"text_model_type", c.textModelType}})
                                                                   .dump());
    return c;
}

} // namespace kvsteer
