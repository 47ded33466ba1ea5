#include "steer/StudioSession.h"

#include "Error.h"
#include "io/Base64.h"
#include "io/TextFile.h"

#include <ATen/ops/from_blob.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace kvsteer {

namespace {

using json = nlohmann::json;

constexpr int kNewestVersion = 1;   // SessionFile::kVersion

json parseSession(const std::string& path) {
    const std::string where = "session " + path;
    json root;
    try {
        root = json::parse(readTextFile(path));
    } catch (const json::exception& e) {
        throw Error(where + ": not a kvsteer session (" + e.what() + ")");
    }
    if (!root.is_object() || root.value("format", "") != "kvsteer-session")
        throw Error(where + ": not a kvsteer session (no \"format\": \"kvsteer-session\")");
    const int version = root.value("version", 0);
    if (version < 1 || version > kNewestVersion)
        throw Error(where + ": session version " + std::to_string(version) + "; this kvsteer reads versions 1 to " +
                    std::to_string(kNewestVersion));
    return root;
}

// root[object][key] as T, or `fallback` when absent; a value of the wrong type names the field.
template <class T>
T fieldOr(const json& root, const char* object, const char* key, const T& fallback, const std::string& where) {
    const json& o = root.contains(object) ? root.at(object) : json::object();
    if (!o.contains(key)) return fallback;
    try {
        return o.at(key).get<T>();
    } catch (const json::exception&) {
        throw Error(where + ": field " + object + "." + key + " has the wrong type");
    }
}

at::Tensor strengthMap(const json& root, const std::string& where) {
    const int rows = fieldOr<int>(root, "strength", "rows", 0, where), cols = fieldOr<int>(root, "strength", "cols", 0, where);
    const std::vector<float> values = fieldOr<std::vector<float>>(root, "strength", "values", {}, where);
    if (rows <= 0 || cols <= 0 || rows > 1024 || cols > 1024 || values.size() != size_t(rows) * size_t(cols))
        throw Error(where + ": field strength is malformed (" + std::to_string(rows) + "x" + std::to_string(cols) + " with " +
                    std::to_string(values.size()) + " values)");
    return at::from_blob(const_cast<float*>(values.data()), {rows, cols}, at::TensorOptions().dtype(at::kFloat)).clone();
}

} // namespace

StudioSession readStudioSession(const std::string& path, int numLayers) {
    const std::string where = "session " + path;
    const json root = parseSession(path);
    StudioSession s;
    s.path = path;
    s.modelDirectory = fieldOr<std::string>(root, "model", "directory", "", where);
    s.modelName = fieldOr<std::string>(root, "model", "name", "", where);
    s.modelConfigHash = fieldOr<std::string>(root, "model", "config_hash", "", where);

    PlanOptions& p = s.plan;
    p.op = parseOperator(fieldOr<std::string>(root, "plan", "operator", "add", where), where + ": plan.operator");
    p.ablateTo = parseAblateTarget(fieldOr<std::string>(root, "plan", "ablate_to", "mean", where), where + ": plan.ablate_to");
    p.propagate = fieldOr<std::string>(root, "plan", "mode", "edit-only", where) == "propagate";
    p.ck = {fieldOr<double>(root, "plan", "ck", 1.0, where)};
    p.cv = {fieldOr<double>(root, "plan", "cv", 1.0, where)};
    // One per layer when the studio ran lists (written only then): those ran, not the one value.
    const std::vector<double> ckByLayer = fieldOr<std::vector<double>>(root, "plan", "ck_by_layer", {}, where);
    const std::vector<double> cvByLayer = fieldOr<std::vector<double>>(root, "plan", "cv_by_layer", {}, where);
    if (!ckByLayer.empty()) p.ck = ckByLayer;
    if (!cvByLayer.empty()) p.cv = cvByLayer;
    const int from = std::clamp(fieldOr<int>(root, "plan", "layer_from", 0, where), 0, numLayers - 1);
    const int to = fieldOr<int>(root, "plan", "layer_to", -1, where);
    const int last = to < 0 ? numLayers - 1 : std::clamp(to, 0, numLayers - 1);
    p.layers = std::vector<int>();
    for (int l = from; l <= last; ++l) p.layers->push_back(l);
    p.heads = fieldOr<std::vector<int>>(root, "plan", "heads", {}, where);

    s.strength = strengthMap(root, where);
    const std::string blob = fieldOr<std::string>(root, "vectors", "safetensors", "", where);
    const std::optional<std::string> bytes = decodeBase64(blob);
    if (!bytes) throw Error(where + ": field vectors.safetensors is not base64");
    s.vectorsBytes = *bytes;
    return s;
}

std::string studioSessionModelDirectory(const std::string& path) {
    return fieldOr<std::string>(parseSession(path), "model", "directory", "", "session " + path);
}

} // namespace kvsteer
