#include "steer/SteeringVectors.h"

#include "Error.h"
#include "models/ModelRegistry.h"
#include "io/SafeTensors.h"

#include <nlohmann/json.hpp>

namespace kvsteer {

using nlohmann::json;

std::string keySpaceName(KeySpace space) { return space == KeySpace::PreRope ? "pre-rope" : "post-rope"; }

KeySpace parseKeySpace(const std::string& name) {
    if (name == "post-rope" || name == "post") return KeySpace::PostRope;
    if (name == "pre-rope" || name == "pre") return KeySpace::PreRope;
    throw Error("key space '" + name + "' is not known (expected post-rope or pre-rope)");
}

bool SteeringVectors::perPosition() const {
    for (const auto& k : keys)
        if (k.defined()) return k.dim() == 3;
    for (const auto& v : values)
        if (v.defined()) return v.dim() == 3;
    return false;
}

bool SteeringVectors::hasLayer(int layer) const {
    return layer >= 0 && layer < numLayers() && (keys[layer].defined() || values[layer].defined());
}

void saveSteeringFile(const std::string& path, const SteeringVectors& vectors, const SteeringFileInfo& info) {
    std::vector<NamedTensor> tensors;
    auto f32 = [](const at::Tensor& t) { return t.to(at::kCPU).to(at::kFloat).contiguous(); };
    for (int l = 0; l < vectors.numLayers(); ++l) {
        if (vectors.keys[l].defined()) tensors.push_back({"steer.keys." + std::to_string(l), f32(vectors.keys[l])});
        if (l < static_cast<int>(vectors.values.size()) && vectors.values[l].defined())
            tensors.push_back({"steer.values." + std::to_string(l), f32(vectors.values[l])});
    }
    if (vectors.mask.defined()) tensors.push_back({"steer.mask", f32(vectors.mask)});
    json meta = {
        {"format", "kvsteer-vectors/1"},
        {"model", info.modelName},
        {"config_hash", info.configHash},
        {"num_layers", vectors.numLayers()},
        {"key_space", keySpaceName(vectors.keySpace)},
        {"operator", info.operatorName},
        {"c_k", info.ck},
        {"c_v", info.cv},
        {"layers", info.layers},
        {"head_mask", info.headMask},
        {"recipe", info.recipe},
        {"recipe_inputs", info.recipeInputsJson.empty() ? json::object() : json::parse(info.recipeInputsJson)},
        {"prompt_template", info.promptTemplate},
        {"kvsteer_version", info.version.empty() ? std::string(KVSTEER_VERSION) : info.version},
    };
    writeSafeTensors(path, tensors, {{"kvsteer", meta.dump()}});
}

namespace {

template <typename T>
T field(const json& meta, const char* key, const std::string& where) {
    if (!meta.contains(key)) throw Error(where + ": metadata field '" + key + "' is missing");
    try {
        return meta.at(key).get<T>();
    } catch (const std::exception&) {
        throw Error(where + ": metadata field '" + key + "' has the wrong type");
    }
}

} // namespace

SteeringVectors loadSteeringFile(const std::string& path, const Model& model, SteeringFileInfo* infoOut) {
    const std::string where = "steering file " + path;
    const SafeTensorsFile file(path);
    auto it = file.metadata().find("kvsteer");
    if (it == file.metadata().end()) throw Error(where + ": no __metadata__ 'kvsteer' entry (not a kvsteer vector file?)");
    json meta;
    try {
        meta = json::parse(it->second);
    } catch (const std::exception& e) {
        throw Error(where + ": metadata 'kvsteer' is not valid JSON (" + e.what() + ")");
    }
    const ModelConfig& c = model.config();
    SteeringFileInfo info;
    info.modelName = field<std::string>(meta, "model", where);
    info.configHash = field<std::string>(meta, "config_hash", where);
    if (info.configHash != c.configHash)
        throw Error(where + ": made for model '" + info.modelName + "' (config hash " + info.configHash + "), but the loaded model is '" +
                    c.name + "' (config hash " + c.configHash + ")");
    const int layers = field<int>(meta, "num_layers", where);
    if (layers != c.text.numLayers)
        throw Error(where + ": num_layers is " + std::to_string(layers) + " but the model has " + std::to_string(c.text.numLayers));
    info.operatorName = field<std::string>(meta, "operator", where);
    info.ck = field<std::vector<double>>(meta, "c_k", where);
    info.cv = field<std::vector<double>>(meta, "c_v", where);
    info.layers = field<std::vector<int>>(meta, "layers", where);
    info.headMask = field<std::vector<std::vector<int>>>(meta, "head_mask", where);
    info.recipe = field<std::string>(meta, "recipe", where);
    info.recipeInputsJson = meta.contains("recipe_inputs") ? meta["recipe_inputs"].dump() : "{}";
    info.promptTemplate = field<std::string>(meta, "prompt_template", where);
    info.version = field<std::string>(meta, "kvsteer_version", where);
    for (int l : info.layers)
        if (l < 0 || l >= layers) throw Error(where + ": layer " + std::to_string(l) + " in 'layers' is out of range");

    SteeringVectors v;
    v.keySpace = parseKeySpace(field<std::string>(meta, "key_space", where));
    v.keys.resize(layers);
    v.values.resize(layers);
    const int64_t hkv = c.text.numKvHeads, d = c.text.headDim;
    const int grid = c.hasVision ? c.vision.gridSize() : 0;
    const int64_t n = int64_t(grid) * grid;
    auto check = [&](const std::string& name) {
        at::Tensor t = file.tensor(name);
        if (t.scalar_type() != at::kFloat) throw Error(where + ": tensor '" + name + "' must be float32");
        const auto s = t.sizes().vec();
        const bool perHead = s == std::vector<int64_t>{hkv, d};
        const bool perPos = s == std::vector<int64_t>{hkv, n, d};
        if (!perHead && !perPos)
            throw Error(where + ": tensor '" + name + "' has shape " + std::string(c10::str(t.sizes())) + "; expected [" +
                        std::to_string(hkv) + ", " + std::to_string(d) + "] or [" + std::to_string(hkv) + ", " + std::to_string(n) +
                        ", " + std::to_string(d) + "] for this model");
        return t.clone();   // own the memory: the file mapping goes away
    };
    for (const auto& name : file.names()) {
        for (const char* prefix : {"steer.keys.", "steer.values."}) {
            const std::string p = prefix;
            if (name.rfind(p, 0) != 0) continue;
            int layer = -1;
            try {
                size_t used = 0;
                layer = std::stoi(name.substr(p.size()), &used);
                if (used != name.size() - p.size()) layer = -1;
            } catch (const std::exception&) {
            }
            if (layer < 0 || layer >= layers) throw Error(where + ": tensor '" + name + "' names a layer outside 0.." + std::to_string(layers - 1));
            (p == "steer.keys." ? v.keys : v.values)[layer] = check(name);
        }
    }
    if (file.contains("steer.mask")) {
        at::Tensor m = file.tensor("steer.mask");
        if (m.scalar_type() != at::kFloat || m.sizes().vec() != std::vector<int64_t>{grid, grid})
            throw Error(where + ": steer.mask must be float32 [" + std::to_string(grid) + ", " + std::to_string(grid) + "]");
        v.mask = m.clone();
    }
    const bool anyPerPos = v.perPosition();
    for (int l = 0; l < layers; ++l)
        for (const at::Tensor* t : {&v.keys[l], &v.values[l]})
            if (t->defined() && (t->dim() == 3) != anyPerPos)
                throw Error(where + ": mixes per-position and per-head entries (layer " + std::to_string(l) + ")");
    if (infoOut) *infoOut = info;
    return v;
}

} // namespace kvsteer
