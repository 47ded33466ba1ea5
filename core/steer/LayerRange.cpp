#include "steer/LayerRange.h"

#include "Error.h"

#include <cmath>
#include <set>
#include <sstream>

namespace kvsteer {

namespace {

std::string expected(int numLayers) { return "expected all, early, middle, late, A or A-B within 0-" + std::to_string(numLayers - 1); }

int parseLayerIndex(const std::string& text, int numLayers, const std::string& item) {
    try {
        size_t used = 0;
        const int v = std::stoi(text, &used);
        if (used == text.size() && v >= 0 && v < numLayers) return v;
    } catch (const std::exception&) {
    }
    throw Error("layers '" + item + "': " + expected(numLayers));
}

std::vector<int> range(int a, int b) {
    std::vector<int> r;
    for (int i = a; i <= b; ++i) r.push_back(i);
    return r;
}

std::vector<std::string> items(const std::string& text, int numLayers) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    for (std::string item; std::getline(ss, item, ',');) {
        const auto first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
        if (first != std::string::npos) out.push_back(item.substr(first, last - first + 1));
    }
    if (out.empty()) throw Error("layers '" + text + "': " + expected(numLayers));
    return out;
}

} // namespace

LayerRange parseLayerRange(const std::string& item, int numLayers) {
    if (numLayers < 1) throw Error("layers: the model has no layers");
    if (item == "all") return {"all", {}};
    const char* thirds[] = {"early", "middle", "late"};
    for (int t = 0; t < 3; ++t)
        if (item == thirds[t]) {
            const int a = int(std::lround(t * numLayers / 3.0)), b = int(std::lround((t + 1) * numLayers / 3.0)) - 1;
            if (a > b) throw Error("layers '" + item + "': the model's " + std::to_string(numLayers) + " layers have no " + item + " third");
            return {item, range(a, b)};
        }
    const auto dash = item.find('-');
    const int a = parseLayerIndex(item.substr(0, dash), numLayers, item);
    const int b = dash == std::string::npos ? a : parseLayerIndex(item.substr(dash + 1), numLayers, item);
    if (a > b) throw Error("layers '" + item + "': the range is reversed");
    return {item, range(a, b)};
}

std::vector<LayerRange> parseLayerRanges(const std::string& text, int numLayers) {
    std::vector<LayerRange> out;
    for (const std::string& item : items(text, numLayers)) out.push_back(parseLayerRange(item, numLayers));
    return out;
}

std::vector<int> parseLayerSet(const std::string& text, int numLayers) {
    std::set<int> all;
    for (const LayerRange& r : parseLayerRanges(text, numLayers)) {
        const std::vector<int> layers = r.layers.empty() ? range(0, numLayers - 1) : r.layers;
        all.insert(layers.begin(), layers.end());
    }
    return {all.begin(), all.end()};
}

std::vector<LayerRange> defaultLayerRanges(int numLayers) {
    std::vector<LayerRange> out{parseLayerRange("all", numLayers)};
    if (numLayers >= 3)
        for (const char* t : {"early", "middle", "late"}) out.push_back(parseLayerRange(t, numLayers));
    return out;
}

} // namespace kvsteer
