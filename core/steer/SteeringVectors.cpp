#include "steer/SteeringVectors.h"

#include "Error.h"
#include "models/ModelRegistry.h"
#include "io/SafeTensors.h"

#include <nlohmann/json.hpp>

#include <sstream>

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

void recordModel(SteeringFileInfo& info, const Model& model) {
    info.modelName = model.config().name;
    info.configHash = model.config().configHash;
    info.modelType = model.config().modelType;
    info.family = model.familyName();
    info.grid = model.patchGrid();
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
        {"operator", info.op ? operatorName(*info.op) : std::string()},
        {"c_k", info.ck},
        {"c_v", info.cv},
        {"layers", info.layers},
        {"head_mask", info.headMask},
        {"recipe", info.recipe},
        {"recipe_inputs", info.recipeInputsJson.empty() ? json::object() : json::parse(info.recipeInputsJson)},
        {"prompt_template", info.promptTemplate},
        {"kvsteer_version", info.version.empty() ? std::string(KVSTEER_VERSION) : info.version},
    };
    if (!info.modelType.empty()) {   // the family and grid: what tells a file for another family apart
        meta["model_type"] = info.modelType;
        if (!info.family.empty()) meta["family"] = info.family;
        // A family whose grid follows each image (Qwen2-VL) records the grid of the mask it was made on.
        PatchGrid grid = info.grid;
        if (grid.cells() == 0 && vectors.mask.defined() && vectors.mask.dim() == 2)
            grid = {int(vectors.mask.size(0)), int(vectors.mask.size(1))};
        meta["grid"] = {grid.height, grid.width};
        if (!vectors.views.empty()) {
            meta["views"] = vectors.views;
            meta["view_tokens"] = vectors.viewTokens;
        }
    }
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

// "paligemma 'tiny-paligemma' (16x16 grid)": how a refusal names each side.
std::string describeModel(const std::string& family, const std::string& type, const std::string& name, const PatchGrid& grid) {
    return (family.empty() ? type : family + " (" + type + ")") + " '" + name + "' (" +
           (grid.cells() > 0 ? grid.text() + " grid" : std::string("no image grid")) + ")";
}

// The family and grid a file records (files older than these fields record neither): refused
// for any other family or grid before the config hash is compared, because naming the family
// says more than two hashes.
void checkFamily(const json& meta, SteeringFileInfo& info, const Model& model, const std::string& where) {
    if (!meta.contains("model_type")) return;
    info.modelType = field<std::string>(meta, "model_type", where);
    const auto grid = field<std::vector<int>>(meta, "grid", where);
    if (grid.size() != 2 || grid[0] < 0 || grid[1] < 0)
        throw Error(where + ": metadata field 'grid' must be [height, width] (two non-negative integers)");
    info.grid = {grid[0], grid[1]};
    const ModelConfig& c = model.config();
    // A model whose grid follows each image (patchGrid() empty) takes a file of any grid here; a
    // per-position file is then checked against the prompt's own grid when a plan is applied.
    const bool fixedGrid = model.patchGrid().cells() > 0;
    if (meta.contains("family")) info.family = field<std::string>(meta, "family", where);
    const bool otherFamily = !info.family.empty() && info.family != model.familyName();
    if (info.modelType != c.modelType || otherFamily || (fixedGrid && info.grid != model.patchGrid()))
        throw Error(where + ": made for " + describeModel(info.family, info.modelType, info.modelName, info.grid) + ", the loaded model is " +
                    describeModel(model.familyName(), c.modelType, c.name, model.patchGrid()));
}

// __metadata__["kvsteer"] of a vector file, parsed.
json steeringMetadata(const SafeTensorsFile& file, const std::string& where) {
    const auto it = file.metadata().find("kvsteer");
    if (it == file.metadata().end()) throw Error(where + ": no __metadata__ 'kvsteer' entry (not a kvsteer vector file?)");
    try {
        return json::parse(it->second);
    } catch (const std::exception& e) {
        throw Error(where + ": metadata 'kvsteer' is not valid JSON (" + e.what() + ")");
    }
}

// The steer.* tensors of `file`, each checked against `model`: float32, a layer of the model,
// [H_kv, D] or [H_kv, N, D] with N the grid's cells (the model's grid, or `fileGrid` for a family
// whose grid follows each image), steer.mask of the grid's shape, not both kinds mixed.
SteeringVectors readSteeringTensors(const SafeTensorsFile& file, const Model& model, const PatchGrid& fileGrid, const std::string& where,
                                    int64_t viewTokens = 0) {
    const ModelConfig& c = model.config();
    const int layers = c.text.numLayers;
    SteeringVectors v;
    v.keys.resize(layers);
    v.values.resize(layers);
    const int64_t hkv = c.text.numKvHeads, d = c.text.headDim;
    // The grid the file's tensors must fit: the model's, or (grid set by each image) the file's own.
    const bool dynamicGrid = model.hasVision() && model.patchGrid().cells() == 0;
    const PatchGrid grid = dynamicGrid ? fileGrid : model.patchGrid();
    // Per-position entries count the grid's cells, or (a picture in views) the span's tokens.
    const int64_t n = viewTokens > 0 ? viewTokens : grid.cells();
    const bool anyCount = dynamicGrid && n == 0;   // an older file for such a model: checked when applied
    auto check = [&](const std::string& name) {
        at::Tensor t = file.tensor(name);
        if (t.scalar_type() != at::kFloat) throw Error(where + ": tensor '" + name + "' must be float32");
        const auto s = t.sizes().vec();
        const bool perHead = s == std::vector<int64_t>{hkv, d};
        const bool perPos = s.size() == 3 && s[0] == hkv && s[2] == d && (anyCount || (s[1] == n && n > 0));
        if (s.size() == 3 && s[0] == hkv && s[2] == d && !perPos)   // per position, for another grid
            throw Error(where + ": tensor '" + name + "' holds " + std::to_string(s[1]) + " positions but the model's " +
                        (n > 0 ? grid.text() + " grid has " + std::to_string(n) + " cells" : std::string("has no image grid")) +
                        " (a per-position vector has one entry per grid cell)");
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
        if (m.scalar_type() != at::kFloat || m.dim() != 2 || (!anyCount && m.sizes().vec() != std::vector<int64_t>{grid.height, grid.width}))
            throw Error(where + ": steer.mask is " + std::string(c10::str(m.sizes())) + " but must be float32 [" +
                        std::to_string(grid.height) + ", " + std::to_string(grid.width) + "] (the model's " + grid.text() + " grid)");
        v.mask = m.clone();
    }
    const bool anyPerPos = v.perPosition();
    for (int l = 0; l < layers; ++l)
        for (const at::Tensor* t : {&v.keys[l], &v.values[l]})
            if (t->defined() && (t->dim() == 3) != anyPerPos)
                throw Error(where + ": mixes per-position and per-head entries (layer " + std::to_string(l) + ")");
    return v;
}

} // namespace

SteeringVectors loadSteeringFile(const std::string& path, const Model& model, SteeringFileInfo* infoOut) {
    const std::string where = "steering file " + path;
    const SafeTensorsFile file(path);
    const json meta = steeringMetadata(file, where);
    const ModelConfig& c = model.config();
    SteeringFileInfo info;
    info.modelName = field<std::string>(meta, "model", where);
    info.configHash = field<std::string>(meta, "config_hash", where);
    checkFamily(meta, info, model, where);
    if (info.configHash != c.configHash)
        throw Error(where + ": made for model '" + info.modelName + "' (config hash " + info.configHash + "), but the loaded model is '" +
                    c.name + "' (config hash " + c.configHash + ")");
    const int layers = field<int>(meta, "num_layers", where);
    if (layers != c.text.numLayers)
        throw Error(where + ": num_layers is " + std::to_string(layers) + " but the model has " + std::to_string(c.text.numLayers));
    if (const std::string op = field<std::string>(meta, "operator", where); !op.empty())
        info.op = parseOperator(op, where + ": metadata field 'operator'");
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

    const int64_t viewTokens = meta.contains("view_tokens") ? field<int64_t>(meta, "view_tokens", where) : 0;
    if (viewTokens < 0) throw Error(where + ": metadata field 'view_tokens' must be positive");
    SteeringVectors v = readSteeringTensors(file, model, info.grid, where, viewTokens);
    if (meta.contains("views")) v.views = field<std::string>(meta, "views", where);
    v.viewTokens = viewTokens;
    v.keySpace = parseKeySpace(field<std::string>(meta, "key_space", where));
    if (infoOut) *infoOut = info;
    return v;
}

SteeringVectors importRawSteering(const std::string& path, const Model& model, KeySpace keySpace) {
    const std::string where = "raw vectors " + path;
    const SafeTensorsFile file(path);
    SteeringVectors v = readSteeringTensors(file, model, PatchGrid{}, where);
    bool any = false;
    for (int l = 0; l < v.numLayers(); ++l) any = any || v.keys[l].defined() || v.values[l].defined();
    if (!any) throw Error(where + ": no steer.keys.<layer> or steer.values.<layer> tensor (docs/FORMAT.md names them)");
    v.keySpace = keySpace;
    return v;
}

std::string describeSteeringFile(const std::string& path) {
    const std::string where = "steering file " + path;
    const SafeTensorsFile file(path);
    const json meta = steeringMetadata(file, where);
    std::ostringstream o;
    auto show = [&](const char* label, const char* key) {
        if (meta.contains(key)) o << label << (meta[key].is_string() ? meta[key].get<std::string>() : meta[key].dump()) << "\n";
    };
    show("model        ", "model");
    show("family       ", "family");
    show("model_type   ", "model_type");
    show("grid         ", "grid");
    show("views        ", "views");
    show("view tokens  ", "view_tokens");
    show("config hash  ", "config_hash");
    show("layers       ", "num_layers");
    show("key space    ", "key_space");
    show("recipe       ", "recipe");
    show("suggests     operator ", "operator");
    show("             c_k ", "c_k");
    show("             c_v ", "c_v");
    if (meta.contains("layers")) o << "             layers " << (meta["layers"].empty() ? std::string("all") : meta["layers"].dump()) << "\n";
    show("written by   kvsteer ", "kvsteer_version");
    o << "tensors\n";
    for (const auto& name : file.names()) o << "  " << name << " " << json(file.info(name).shape).dump() << "\n";
    return o.str();
}

} // namespace kvsteer
