#include "study/StudyPlan.h"

#include "Error.h"
#include "eval/EvalDataset.h"
#include "io/NumberList.h"
#include "io/TextFile.h"
#include "models/Model.h"
#include "steer/LayerRange.h"
#include "steer/SteeringOperator.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace kvsteer {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

std::string shortNumber(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

// A plans entry's field as an axis: a single value is one setting, a list is the axis.
template <class T>
std::vector<T> axis(const json& entry, const char* field, const std::string& where, const char* expected) {
    if (!entry.contains(field)) return {};
    const json& v = entry[field];
    try {
        if (v.is_array()) {
            if (v.empty()) throw Error("");
            return v.get<std::vector<T>>();
        }
        return {v.get<T>()};
    } catch (const std::exception&) {
        throw Error(where + "." + field + ": expected " + expected + " or a non-empty list of them, got " + v.dump());
    }
}

// The layer axis item's layers and label; without one, the file's suggestion.
LayerRange layersOf(const std::string& item, const SteeringFileInfo& info, int numLayers) {
    if (!item.empty()) return parseLayerRange(item, numLayers);
    if (info.layers.empty()) return {"all", {}};
    std::string label;
    for (int l : info.layers) label += (label.empty() ? "" : ",") + std::to_string(l);
    return {label, info.layers};
}

// The items of a comma-separated list, blanks around them trimmed, empty ones skipped.
std::vector<std::string> listItems(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        const size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
        if (a != std::string::npos) out.push_back(item.substr(a, b - a + 1));
    }
    return out;
}

} // namespace

PlanGrid planGridFromLists(const std::string& vectors, const std::string& operators, const std::string& ck, const std::string& cv,
                           const std::string& layers) {
    PlanGrid g;
    g.vectors = listItems(vectors);
    for (const std::string& name : listItems(operators)) g.operators.push_back(parseOperator(name, "operators"));
    g.layers = listItems(layers);
    if (!listItems(ck).empty()) g.ck = parseNumberList(ck, "c_k");
    if (!listItems(cv).empty()) g.cv = parseNumberList(cv, "c_v");
    return g;
}

ordered_json StudyPlan::json() const {
    ordered_json j = {{"index", index},
                      {"label", label},
                      {"operator", operatorName(*options.op)},
                      {"ck", options.ck},
                      {"cv", options.cv},
                      {"layers", layersLabel},
                      {"layer_list", *options.layers},
                      {"heads", options.heads},
                      {"mode", options.propagate ? "propagate" : "edit-only"},
                      {"vectors", vectorsPath},
                      {"vectors_hash", vectorsHash}};
    if (options.op == SteeringOperator::Ablate) j["ablate_to"] = ablateTargetName(options.ablateTo);
    if (!hash.empty()) j["hash"] = hash;
    return j;
}

std::vector<PlanGrid> planGridsFromJson(const json& plans, const std::string& baseDir, const std::string& file) {
    if (!plans.is_array() || plans.empty()) throw Error(file + ": \"plans\" must be a non-empty list of plan objects");
    static const std::set<std::string> known{"vectors", "operator", "ck", "cv", "layers", "heads", "propagate", "ablate_to"};
    std::vector<PlanGrid> grids;
    for (size_t i = 0; i < plans.size(); ++i) {
        const std::string where = file + ": plans[" + std::to_string(i) + "]";
        const json& e = plans[i];
        if (!e.is_object()) throw Error(where + ": expected an object like {\"vectors\": \"v.safetensors\", \"cv\": [1, 2]}");
        for (auto it = e.begin(); it != e.end(); ++it)
            if (!known.count(it.key())) throw Error(where + "." + it.key() + ": unknown field (known: vectors, operator, ck, cv, layers, heads, propagate, ablate_to)");
        PlanGrid g;
        for (std::string v : axis<std::string>(e, "vectors", where, "a file path")) {
            if (fs::path(v).is_relative()) v = (fs::path(baseDir) / v).string();
            g.vectors.push_back(v);
        }
        for (const std::string& name : axis<std::string>(e, "operator", where, "an operator name"))
            g.operators.push_back(parseOperator(name, where + ".operator"));
        g.ck = axis<double>(e, "ck", where, "a number");
        g.cv = axis<double>(e, "cv", where, "a number");
        g.layers = axis<std::string>(e, "layers", where, "a layer choice (all, early, middle, late, A-B)");
        if (e.contains("heads")) g.heads = axis<int>(e, "heads", where, "a KV head index");
        if (e.contains("propagate")) {
            if (!e["propagate"].is_boolean()) throw Error(where + ".propagate: expected true or false");
            g.propagate = e["propagate"].get<bool>();
        }
        if (e.contains("ablate_to"))
            g.ablateTo = parseAblateTarget(axis<std::string>(e, "ablate_to", where, "mean or zero").front(), where + ".ablate_to");
        grids.push_back(g);
    }
    return grids;
}

std::vector<StudyPlan> expandPlans(const std::vector<PlanGrid>& grids, const Model& model) {
    const int numLayers = model.config().text.numLayers;
    // Each vector file read, loaded and hashed once, whichever plans use it.
    struct VectorFile {
        std::shared_ptr<const SteeringVectors> vectors;
        SteeringFileInfo info;
        std::string hash;
    };
    std::map<std::string, VectorFile> files;
    std::vector<StudyPlan> plans;
    std::map<std::string, int> seen;   // resolved settings -> the plan that has them
    for (const PlanGrid& g : grids) {
        const std::vector<std::string> vectorsAxis = g.vectors.empty() ? std::vector<std::string>{""} : g.vectors;
        // An empty axis is one plan that takes the vector file's operator.
        const std::vector<std::optional<SteeringOperator>> opAxis =
            g.operators.empty() ? std::vector<std::optional<SteeringOperator>>{std::nullopt}
                                : std::vector<std::optional<SteeringOperator>>(g.operators.begin(), g.operators.end());
        const std::vector<std::string> layerAxis = g.layers.empty() ? std::vector<std::string>{""} : g.layers;
        const std::vector<double> ckAxis = g.ck.empty() ? std::vector<double>{std::nan("")} : g.ck;
        const std::vector<double> cvAxis = g.cv.empty() ? std::vector<double>{std::nan("")} : g.cv;
        for (const std::string& path : vectorsAxis) {
            if (!path.empty() && !files.count(path)) {
                VectorFile& file = files[path];
                file.vectors = std::make_shared<const SteeringVectors>(loadSteeringFile(path, model, &file.info));
                file.hash = hexHash(stableHash(readTextFile(path)));
            }
            for (const std::optional<SteeringOperator>& op : opAxis)
                for (const std::string& layers : layerAxis)
                    for (double ck : ckAxis)
                        for (double cv : cvAxis) {
                            StudyPlan p;
                            p.index = int(plans.size());
                            p.vectorsPath = path;
                            if (!path.empty()) {
                                const VectorFile& file = files.at(path);
                                p.vectors = file.vectors;
                                p.vectorsInfo = file.info;
                                p.vectorsHash = file.hash;
                            }
                            PlanOptions chosen;
                            chosen.op = op;
                            if (!std::isnan(ck)) chosen.ck = {ck};
                            if (!std::isnan(cv)) chosen.cv = {cv};
                            const std::string where = "plan " + std::to_string(p.index);
                            LayerRange range;
                            try {
                                range = layersOf(layers, p.vectorsInfo, numLayers);
                            } catch (const Error& e) {
                                throw Error(where + ": " + e.what());
                            }
                            chosen.layers = range.layers;
                            chosen.heads = g.heads;
                            chosen.propagate = g.propagate;
                            chosen.ablateTo = g.ablateTo;
                            p.options = resolvePlanOptions(chosen, p.vectorsInfo);
                            p.layersLabel = range.label;
                            try {
                                checkPlanChoices(p.options, p.vectors.get(), model);
                            } catch (const Error& e) {
                                throw Error(where + " (" + p.json().dump() + "): " + e.what());
                            }
                            const std::string name = path.empty() ? "no vectors" : fs::path(path).stem().string();
                            p.label = name + " " + operatorName(*p.options.op) + " c_k " + shortNumber(p.options.ck.front()) + " c_v " +
                                      shortNumber(p.options.cv.front()) + " " + p.layersLabel + (p.options.propagate ? " propagate" : "");
                            ordered_json settings = p.json();
                            settings.erase("index");
                            settings.erase("label");
                            p.hash = hexHash(stableHash(settings.dump()));
                            const auto [it, fresh] = seen.emplace(p.hash, p.index);
                            if (!fresh) throw Error(where + " (" + p.label + ") is plan " + std::to_string(it->second) + " again: the grid lists a setting twice");
                            plans.push_back(std::move(p));
                        }
        }
    }
    if (plans.empty()) throw Error("study: the grid holds no plan");
    return plans;
}

} // namespace kvsteer
