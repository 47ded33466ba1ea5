#include "demo/DemoPope.h"

#include "Error.h"
#include "demo/ShapeWorld.h"
#include "io/TextFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <set>

namespace kvsteer::demo {

namespace fs = std::filesystem;

namespace {

using Combo = std::pair<ColorName, ShapeKind>;

std::string question(const Combo& c) { return std::string("Is there a ") + colorName(c.first) + " " + kindName(c.second) + "?"; }

std::array<double, 4> boxOf(const Shape& s) {
    auto clamp = [](double v) { return std::clamp(v, 0.0, double(kImageSize)); };
    return {clamp(s.left()), clamp(s.top()), clamp(s.right()), clamp(s.bottom())};
}

// The present shape a negative is confusable with: the same colour or kind, else the first.
const Shape& confuser(const Scene& scene, const Combo& c) {
    for (const Shape& s : scene.shapes)
        if (s.color == c.first || s.kind == c.second) return s;
    return scene.shapes.front();
}

} // namespace

int writeDemoPope(const std::string& dir, const DemoPopeOptions& options) {
    if (options.images < 1) throw Error("demo-pope: needs at least one image");
    fs::create_directories(fs::path(dir) / "images");
    SceneOptions so;
    so.minShapes = so.maxShapes = 3;
    std::vector<Scene> scenes;
    std::map<Combo, int> frequency;   // how often each combination appears in the set
    for (int i = 0; i < options.images; ++i) {
        scenes.push_back(generateScene(evalSceneId(options.seed, uint64_t(i)), so));
        for (const Shape& s : scenes.back().shapes) ++frequency[{s.color, s.kind}];
    }
    std::string lines;
    int items = 0;
    for (size_t i = 0; i < scenes.size(); ++i) {
        const Scene& scene = scenes[i];
        const std::string image = "images/scene_" + std::to_string(i) + ".png";
        savePng((fs::path(dir) / image).string(), render(scene));
        std::set<Combo> present;
        for (const Shape& s : scene.shapes) present.insert({s.color, s.kind});
        std::vector<Combo> absent;
        for (int c = 0; c < kNumColors; ++c)
            for (int k = 0; k < kNumKinds; ++k)
                if (!present.count({ColorName(c), ShapeKind(k)})) absent.push_back({ColorName(c), ShapeKind(k)});
        Rng rng(mixSeed(options.seed, scene.id));
        auto add = [&](const Combo& c, bool yes, const Shape& boxShape, const char* category) {
            const nlohmann::ordered_json item = {{"id", "s" + std::to_string(i) + "-" + std::to_string(items)},
                                                 {"image", image},
                                                 {"question", question(c)},
                                                 {"answer", yes ? "yes" : "no"},
                                                 {"box", boxOf(boxShape)},
                                                 {"category", category}};
            lines += item.dump() + "\n";
            ++items;
        };
        std::set<Combo> asked;
        for (const Shape& s : scene.shapes)
            if (asked.insert({s.color, s.kind}).second) add({s.color, s.kind}, true, s, "positive");
        // One negative per positive, cycling random -> popular -> adversarial, never asked twice.
        const size_t positives = asked.size();
        for (size_t n = 0; n < positives; ++n) {
            std::vector<Combo> pool;
            for (const Combo& c : absent)
                if (!asked.count(c)) pool.push_back(c);
            if (pool.empty()) break;
            const int kind = int(n % 3);
            Combo pick = pool[size_t(rng.below(int(pool.size())))];
            if (kind == 1) {
                pick = *std::max_element(pool.begin(), pool.end(), [&](const Combo& a, const Combo& b) { return frequency[a] < frequency[b]; });
            } else if (kind == 2) {
                std::vector<Combo> near;
                for (const Combo& c : pool)
                    for (const Shape& s : scene.shapes)
                        if (s.color == c.first || s.kind == c.second) {
                            near.push_back(c);
                            break;
                        }
                if (!near.empty()) pick = near[size_t(rng.below(int(near.size())))];
            }
            asked.insert(pick);
            add(pick, false, confuser(scene, pick), kind == 0 ? "random" : kind == 1 ? "popular" : "adversarial");
        }
    }
    writeTextAtomically((fs::path(dir) / "pope.jsonl").string(), lines);
    return items;
}

} // namespace kvsteer::demo
