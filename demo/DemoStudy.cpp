#include "demo/DemoStudy.h"

#include "Error.h"
#include "io/TextFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <iterator>

namespace kvsteer::demo {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr uint64_t kStudySeedBase = 1ull << 29;   // eval and steer seeds 2^29 + seed
const char* kColourQuestion = "What color is the circle?";

bool isCircle(const Shape& s) { return s.kind == ShapeKind::Circle; }
bool sameCombo(const Shape& a, const Shape& b) { return a.kind == b.kind && a.color == b.color; }

std::string existsQuestion(ColorName c, ShapeKind k) { return std::string("Is there a ") + colorName(c) + " " + kindName(k) + "?"; }

std::array<double, 4> boxOf(const Shape& s) {
    auto clamp = [](double v) { return std::clamp(v, 0.0, double(kImageSize)); };
    return {clamp(s.left()), clamp(s.top()), clamp(s.right()), clamp(s.bottom())};
}

// ---------------------------------------------------------------------------------------------
// The sets: each turns a scene (shape 0 the red circle) into its questions.

struct Ask {
    std::string question;
    Json answer;
    std::string category;
    std::string target;   // "" = none
    Json objects;         // null = none
};

std::vector<Ask> colourAsks(const Scene&, Rng&) { return {{kColourQuestion, "red", "circle colour", "blue", {}}}; }

std::vector<Ask> blueCircleAsks(const Scene&, Rng&) {
    return {{existsQuestion(ColorName::Blue, ShapeKind::Circle), "no", "blue circle", "yes", {}}};
}

std::vector<Ask> redCircleAsks(const Scene&, Rng&) {
    return {{existsQuestion(ColorName::Red, ShapeKind::Circle), "yes", "red circle (shown)", "", {}}};
}

// One "yes" per other shape, and as many "no"s about absent combinations (never a circle in red
// or blue: those are the target sets' questions), drawn without repetition.
std::vector<Ask> othersExistAsks(const Scene& scene, Rng& rng) {
    std::vector<Ask> out;
    for (size_t i = 1; i < scene.shapes.size(); ++i)
        out.push_back({existsQuestion(scene.shapes[i].color, scene.shapes[i].kind), "yes", "other shape present", "", {}});
    std::vector<Shape> absent;
    for (int c = 0; c < kNumColors; ++c)
        for (int k = 0; k < kNumKinds; ++k) {
            Shape s;
            s.color = ColorName(c);
            s.kind = ShapeKind(k);
            const bool present = std::any_of(scene.shapes.begin(), scene.shapes.end(), [&](const Shape& x) { return sameCombo(x, s); });
            if (!present && !(isCircle(s) && (s.color == ColorName::Red || s.color == ColorName::Blue))) absent.push_back(s);
        }
    for (size_t n = 1; n < scene.shapes.size() && !absent.empty(); ++n) {
        const size_t pick = size_t(rng.below(int(absent.size())));
        out.push_back({existsQuestion(absent[pick].color, absent[pick].kind), "no", "other shape absent", "", {}});
        absent.erase(absent.begin() + std::ptrdiff_t(pick));
    }
    return out;
}

// "What color is the <kind>?" for each other shape whose kind is present once.
std::vector<Ask> othersColourAsks(const Scene& scene, Rng&) {
    std::vector<Ask> out;
    for (size_t i = 1; i < scene.shapes.size(); ++i) {
        const Shape& s = scene.shapes[i];
        const auto sameKind = std::count_if(scene.shapes.begin(), scene.shapes.end(), [&](const Shape& x) { return x.kind == s.kind; });
        if (sameKind == 1)
            out.push_back({std::string("What color is the ") + kindName(s.kind) + "?", colorName(s.color), "other shape colour", "", {}});
    }
    return out;
}

std::vector<Ask> countAsks(const Scene& scene, Rng&) {
    return {{"How many shapes are there?", countWord(int(scene.shapes.size())), "shape count", "", {}}};
}

// The trained description; "objects" the kinds present (CHAIR's ground truth), in kind order.
std::vector<Ask> captionAsks(const Scene& scene, Rng&) {
    Json objects = Json::array();
    for (int k = 0; k < kNumKinds; ++k)
        if (std::any_of(scene.shapes.begin(), scene.shapes.end(), [&](const Shape& s) { return s.kind == ShapeKind(k); }))
            objects.push_back(kindName(ShapeKind(k)));
    return {{"Describe the image.", describe(scene), "caption", "", objects}};
}

struct SetSpec {
    const char* name;
    const char* role;
    const char* metric;
    const char* synonyms;   // nullptr = none
    std::vector<Ask> (*asks)(const Scene&, Rng&);
};

const SetSpec kSets[] = {
    {"colour", "target", "contains", nullptr, colourAsks},
    {"blue_circle", "target", "pope", nullptr, blueCircleAsks},
    {"others_exist", "preserve", "pope", nullptr, othersExistAsks},
    {"others_colour", "preserve", "contains", nullptr, othersColourAsks},
    {"count", "preserve", "exact", nullptr, countAsks},
    {"red_circle", "preserve", "pope", nullptr, redCircleAsks},
    {"caption", "preserve", "chair", "shapes", captionAsks},
};

// ---------------------------------------------------------------------------------------------
// Writing

std::string sceneImage(size_t i) { return "images/scene_" + std::to_string(i) + ".png"; }

// One set's JSONL over all scenes; every item boxed on the scene's red circle (shape 0).
int writeSet(const fs::path& dir, const SetSpec& set, size_t setIndex, const std::vector<Scene>& scenes) {
    std::string lines;
    int items = 0;
    for (size_t i = 0; i < scenes.size(); ++i) {
        Rng rng(mixSeed(scenes[i].id, 0x57D0 + setIndex));
        int n = 0;
        for (const Ask& a : set.asks(scenes[i], rng)) {
            Json item = {{"id", std::string(set.name) + "-" + std::to_string(i) + "-" + std::to_string(n++)},
                         {"image", sceneImage(i)},
                         {"question", a.question},
                         {"answer", a.answer},
                         {"box", boxOf(scenes[i].shapes.front())},
                         {"category", a.category}};
            if (!a.target.empty()) item["target"] = a.target;
            if (!a.objects.is_null()) item["objects"] = a.objects;
            lines += item.dump() + "\n";
            ++items;
        }
    }
    writeTextAtomically((dir / (std::string(set.name) + ".jsonl")).string(), lines);
    return items;
}

void writeSuite(const fs::path& dir) {
    Json datasets = Json::array();
    for (const SetSpec& set : kSets) {
        Json d = {{"name", set.name}, {"data", std::string(set.name) + ".jsonl"}, {"role", set.role}, {"metric", set.metric}};
        if (set.synonyms) d["synonyms"] = set.synonyms;
        datasets.push_back(d);
    }
    const Json suite = {{"name", "demo-study"}, {"datasets", datasets}};
    writeTextAtomically((dir / "suite.json").string(), suite.dump(2) + "\n");
}

// The circle's cells as an inclusive MASK rect (gridBox's ends are exclusive).
std::string circleRect(const Shape& circle) {
    const GridBox b = gridBox(circle);
    return "rect:" + std::to_string(b.row0) + "," + std::to_string(b.col0) + "," + std::to_string(b.row1 - 1) + "," +
           std::to_string(b.col1 - 1);
}

// Red/blue circle pairs with the circle's cells as each line's mask: the image-pairs recipe's input.
void writePairs(const fs::path& dir, const DemoStudyOptions& options) {
    fs::create_directories(dir);
    std::string lines;
    for (int i = 0; i < options.pairs; ++i) {
        const ColorPair pair = makeColorPair(steerSceneId(kStudySeedBase + options.seed, uint64_t(i)));
        const std::string a = "blue_" + std::to_string(i) + ".png", b = "red_" + std::to_string(i) + ".png";
        savePng((dir / a).string(), pair.imageTo);
        savePng((dir / b).string(), pair.imageFrom);
        const Json line = {{"image_a", a},
                           {"image_b", b},
                           {"prompt", kColourQuestion},
                           {"mask", circleRect(pair.sceneFrom.shapes[size_t(pair.shapeIndex)])}};
        lines += line.dump() + "\n";
    }
    writeTextAtomically((dir / "pairs.jsonl").string(), lines);
}

} // namespace

Scene studyScene(uint64_t seed, uint64_t index) {
    SceneOptions so;
    so.minShapes = 2;
    so.maxShapes = 3;
    Scene s = generateScene(evalSceneId(kStudySeedBase + seed, index), so);
    Rng rng(mixSeed(s.id, 0x57D7));
    s.shapes[0].kind = ShapeKind::Circle;
    s.shapes[0].color = ColorName::Red;
    // The others: no circle (a square or a triangle instead), each its own colour + kind.
    for (size_t i = 1; i < s.shapes.size(); ++i) {
        Shape& sh = s.shapes[i];
        if (isCircle(sh)) sh.kind = rng.chance(0.5) ? ShapeKind::Square : ShapeKind::Triangle;
        while (std::any_of(s.shapes.begin(), s.shapes.begin() + std::ptrdiff_t(i), [&](const Shape& x) { return sameCombo(x, sh); }))
            sh.color = ColorName(rng.below(kNumColors));
    }
    return s;
}

DemoStudyCounts writeDemoStudy(const std::string& dir, const DemoStudyOptions& options) {
    if (options.images < 1) throw Error("demo-study: needs at least one image");
    if (options.pairs < 0) throw Error("demo-study: the number of pairs cannot be negative");
    if (options.seed >= kStudySeedBase - 1) throw Error("demo-study: the seed must be below 2^29 - 1");
    const fs::path root(dir);
    fs::create_directories(root / "images");
    DemoStudyCounts counts;
    std::vector<Scene> scenes;
    for (int i = 0; i < options.images; ++i) {
        scenes.push_back(studyScene(options.seed, uint64_t(i)));
        savePng((root / sceneImage(size_t(i))).string(), render(scenes.back()));
    }
    counts.images = options.images;
    for (size_t k = 0; k < std::size(kSets); ++k) counts.datasets.push_back({kSets[k].name, writeSet(root, kSets[k], k, scenes)});
    writeSuite(root);
    if (options.pairs > 0) writePairs(root / "pairs", options);
    counts.pairs = options.pairs;
    return counts;
}

} // namespace kvsteer::demo
