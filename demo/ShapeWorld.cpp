#include "demo/ShapeWorld.h"

#include "Error.h"

#include <algorithm>
#include <cmath>
#include <functional>


namespace kvsteer::demo {

const char* kindName(ShapeKind k) {
    switch (k) {
    case ShapeKind::Circle: return "circle";
    case ShapeKind::Square: return "square";
    case ShapeKind::Triangle: return "triangle";
    }
    return "?";
}

const char* colorName(ColorName c) {
    switch (c) {
    case ColorName::Red: return "red";
    case ColorName::Green: return "green";
    case ColorName::Blue: return "blue";
    case ColorName::Yellow: return "yellow";
    }
    return "?";
}

const char* questionTypeName(QuestionType t) {
    switch (t) {
    case QuestionType::Color: return "color";
    case QuestionType::Shape: return "shape";
    case QuestionType::Count: return "count";
    case QuestionType::Exists: return "exists";
    case QuestionType::Position: return "position";
    case QuestionType::Describe: return "describe";
    }
    return "?";
}

const char* countWord(int n) {
    static const char* words[] = {"zero", "one", "two", "three", "four", "five"};
    return n >= 0 && n <= 5 ? words[n] : "many";
}

// ---------------------------------------------------------------------------------------------
// Random numbers

uint64_t Rng::next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

int Rng::below(int n) {
    if (n <= 0) return 0;
    return static_cast<int>(next() % static_cast<uint64_t>(n));   // bias < 2^-60: irrelevant here
}

uint64_t mixSeed(uint64_t a, uint64_t b) {
    Rng r(a ^ (b * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull));
    r.next();
    return r.next();
}

uint64_t trainSceneId(uint64_t seed, uint64_t index) { return ((seed & 0x3FFFFFFFull) << 32) + (index & 0xFFFFFFFFull); }
uint64_t evalSceneId(uint64_t seed, uint64_t index) { return (1ull << 62) + trainSceneId(seed, index); }
uint64_t steerSceneId(uint64_t seed, uint64_t index) { return (1ull << 63) + trainSceneId(seed, index); }

// ---------------------------------------------------------------------------------------------
// Geometry and colours

std::array<uint8_t, 3> baseColor(ColorName c) {
    switch (c) {
    case ColorName::Red: return {220, 35, 35};
    case ColorName::Green: return {40, 175, 55};
    case ColorName::Blue: return {40, 75, 220};
    case ColorName::Yellow: return {235, 210, 40};
    }
    return {0, 0, 0};
}

std::array<uint8_t, 3> Shape::rgb() const {
    const auto base = baseColor(color);
    std::array<uint8_t, 3> out{};
    for (int i = 0; i < 3; ++i) out[i] = static_cast<uint8_t>(std::clamp(int(base[i]) + jitter[i], 0, 255));
    return out;
}

bool Shape::contains(double x, double y) const {
    const double h = size / 2;
    switch (kind) {
    case ShapeKind::Circle: {
        const double dx = x - cx, dy = y - cy;
        return dx * dx + dy * dy <= h * h;
    }
    case ShapeKind::Square: return x >= cx - h && x <= cx + h && y >= cy - h && y <= cy + h;
    case ShapeKind::Triangle: {
        // Apex (cx, cy - h), base corners (cx - h, cy + h) and (cx + h, cy + h).
        if (y > cy + h || y < cy - h) return false;
        const double t = (y - (cy - h)) / size;   // 0 at the apex, 1 at the base
        return std::abs(x - cx) <= t * h;
    }
    }
    return false;
}

namespace {

bool boxesClear(const Shape& a, const Shape& b, double gap) {
    return a.right() + gap <= b.left() || b.right() + gap <= a.left() || a.bottom() + gap <= b.top() ||
           b.bottom() + gap <= a.top();
}

} // namespace

Scene generateScene(uint64_t sceneId, const SceneOptions& o) {
    Rng rng(mixSeed(sceneId, 0x5EED5EED));
    Scene s;
    s.id = sceneId;
    s.background = static_cast<BackgroundKind>(rng.below(3));
    switch (s.background) {
    case BackgroundKind::White: s.backgroundRgb = {255, 255, 255}; break;
    case BackgroundKind::LightGrey: {
        const auto g = static_cast<uint8_t>(195 + rng.below(31));
        s.backgroundRgb = {g, g, g};
        break;
    }
    case BackgroundKind::Black: {
        const auto g = static_cast<uint8_t>(rng.below(16));
        s.backgroundRgb = {g, g, g};
        break;
    }
    }
    const int lo = std::clamp(o.minShapes, 1, 3), hi = std::clamp(o.maxShapes, lo, 3);
    const int count = lo + rng.below(hi - lo + 1);
    for (int i = 0; i < count; ++i) {
        Shape sh;
        sh.kind = static_cast<ShapeKind>(rng.below(kNumKinds));
        sh.color = static_cast<ColorName>(rng.below(kNumColors));
        for (int c = 0; c < 3; ++c) sh.jitter[c] = rng.below(2 * o.colorJitter + 1) - o.colorJitter;
        bool placed = false;
        for (int attempt = 0; attempt < 2000 && !placed; ++attempt) {
            sh.size = rng.uniform(o.minSize, o.maxSize);
            sh.cx = rng.uniform(sh.size / 2, kImageSize - sh.size / 2);
            sh.cy = rng.uniform(sh.size / 2, kImageSize - sh.size / 2);
            placed = std::all_of(s.shapes.begin(), s.shapes.end(), [&](const Shape& other) { return boxesClear(sh, other, o.gap); });
        }
        if (placed) s.shapes.push_back(sh);   // (never fails for 3 shapes of ≤ 120 px in 336 px, but stay total)
    }
    return s;
}

ImageU8 render(const Scene& scene) {
    ImageU8 img(kImageSize, kImageSize);
    for (int y = 0; y < kImageSize; ++y)
        for (int x = 0; x < kImageSize; ++x)
            for (int c = 0; c < 3; ++c) img.at(y, x, c) = scene.backgroundRgb[c];
    constexpr int kSub = 4;
    for (const Shape& sh : scene.shapes) {
        const auto rgb = sh.rgb();
        const int x0 = std::max(0, int(std::floor(sh.left())) - 1), x1 = std::min(kImageSize, int(std::ceil(sh.right())) + 1);
        const int y0 = std::max(0, int(std::floor(sh.top())) - 1), y1 = std::min(kImageSize, int(std::ceil(sh.bottom())) + 1);
        for (int y = y0; y < y1; ++y)
            for (int x = x0; x < x1; ++x) {
                int hits = 0;
                for (int sy = 0; sy < kSub; ++sy)
                    for (int sx = 0; sx < kSub; ++sx)
                        hits += sh.contains(x + (sx + 0.5) / kSub, y + (sy + 0.5) / kSub) ? 1 : 0;
                if (hits == 0) continue;
                const double a = double(hits) / (kSub * kSub);
                for (int c = 0; c < 3; ++c)
                    img.at(y, x, c) = static_cast<uint8_t>(std::lround(scene.backgroundRgb[c] * (1 - a) + rgb[c] * a));
            }
    }
    return img;
}

Scene recolored(const Scene& scene, int shapeIndex, ColorName newColor) {
    if (shapeIndex < 0 || shapeIndex >= static_cast<int>(scene.shapes.size()))
        throw Error("recolored: shape index " + std::to_string(shapeIndex) + " is out of range");
    Scene out = scene;
    out.shapes[shapeIndex].color = newColor;
    return out;
}

int imageThird(double v, int imageSize) {
    const double third = imageSize / 3.0;
    return v < third ? 0 : (v < 2 * third ? 1 : 2);
}

std::string positionWord(const Shape& shape, int imageSize) {
    const int col = imageThird(shape.cx, imageSize), row = imageThird(shape.cy, imageSize);
    if (col == 0) return "left";
    if (col == 2) return "right";
    if (row == 0) return "top";
    if (row == 2) return "bottom";
    return "center";
}

std::string itemText(const Shape& s) { return std::string("a ") + colorName(s.color) + " " + kindName(s.kind); }

namespace {

int countKind(const Scene& s, ShapeKind k) {
    return static_cast<int>(std::count_if(s.shapes.begin(), s.shapes.end(), [&](const Shape& x) { return x.kind == k; }));
}
int countColor(const Scene& s, ColorName c) {
    return static_cast<int>(std::count_if(s.shapes.begin(), s.shapes.end(), [&](const Shape& x) { return x.color == c; }));
}
int countCombo(const Scene& s, ColorName c, ShapeKind k) {
    return static_cast<int>(
        std::count_if(s.shapes.begin(), s.shapes.end(), [&](const Shape& x) { return x.color == c && x.kind == k; }));
}
int indexOf(const Scene& s, const std::function<bool(const Shape&)>& pred) {
    for (size_t i = 0; i < s.shapes.size(); ++i)
        if (pred(s.shapes[i])) return static_cast<int>(i);
    return -1;
}

QA colorQuestion(const Scene& s, ShapeKind k) {
    const int i = indexOf(s, [&](const Shape& x) { return x.kind == k; });
    return {QuestionType::Color, std::string("What color is the ") + kindName(k) + "?", colorName(s.shapes[i].color), i};
}
QA shapeQuestion(const Scene& s, ColorName c) {
    const int i = indexOf(s, [&](const Shape& x) { return x.color == c; });
    return {QuestionType::Shape, std::string("What shape is ") + colorName(c) + "?", kindName(s.shapes[i].kind), i};
}
QA countQuestion(const Scene& s) {
    return {QuestionType::Count, "How many shapes are there?", countWord(static_cast<int>(s.shapes.size())), -1};
}
QA existsQuestion(const Scene& s, ColorName c, ShapeKind k) {
    const int i = indexOf(s, [&](const Shape& x) { return x.color == c && x.kind == k; });
    return {QuestionType::Exists, std::string("Is there a ") + colorName(c) + " " + kindName(k) + "?", i >= 0 ? "yes" : "no", i};
}
QA positionQuestion(const Scene& s, int i) {
    const Shape& sh = s.shapes[i];
    return {QuestionType::Position, std::string("Where is the ") + colorName(sh.color) + " " + kindName(sh.kind) + "?",
            positionWord(sh), i};
}
QA describeQuestion(const Scene& s) { return {QuestionType::Describe, "Describe the image.", describe(s), -1}; }

} // namespace

std::string describe(const Scene& scene) {
    std::vector<const Shape*> items;
    for (const Shape& s : scene.shapes) items.push_back(&s);
    std::stable_sort(items.begin(), items.end(), [](const Shape* a, const Shape* b) {
        if (a->kind != b->kind) return int(a->kind) < int(b->kind);
        return int(a->color) < int(b->color);
    });
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
        out += itemText(*items[i]);
    }
    return out;
}

std::vector<QA> allQuestions(const Scene& s) {
    std::vector<QA> out;
    for (int k = 0; k < kNumKinds; ++k)
        if (countKind(s, ShapeKind(k)) == 1) out.push_back(colorQuestion(s, ShapeKind(k)));
    for (int c = 0; c < kNumColors; ++c)
        if (countColor(s, ColorName(c)) == 1) out.push_back(shapeQuestion(s, ColorName(c)));
    out.push_back(countQuestion(s));
    for (int c = 0; c < kNumColors; ++c)
        for (int k = 0; k < kNumKinds; ++k) out.push_back(existsQuestion(s, ColorName(c), ShapeKind(k)));
    for (size_t i = 0; i < s.shapes.size(); ++i)
        if (countCombo(s, s.shapes[i].color, s.shapes[i].kind) == 1) out.push_back(positionQuestion(s, static_cast<int>(i)));
    out.push_back(describeQuestion(s));
    return out;
}

bool sampleQuestion(const Scene& s, QuestionType type, Rng& rng, QA& out) {
    switch (type) {
    case QuestionType::Color: {
        std::vector<int> kinds;
        for (int k = 0; k < kNumKinds; ++k)
            if (countKind(s, ShapeKind(k)) == 1) kinds.push_back(k);
        if (kinds.empty()) return false;
        out = colorQuestion(s, ShapeKind(kinds[rng.below(static_cast<int>(kinds.size()))]));
        return true;
    }
    case QuestionType::Shape: {
        std::vector<int> colors;
        for (int c = 0; c < kNumColors; ++c)
            if (countColor(s, ColorName(c)) == 1) colors.push_back(c);
        if (colors.empty()) return false;
        out = shapeQuestion(s, ColorName(colors[rng.below(static_cast<int>(colors.size()))]));
        return true;
    }
    case QuestionType::Count: out = countQuestion(s); return true;
    case QuestionType::Exists: {
        if (!s.shapes.empty() && rng.chance(0.5)) {
            const Shape& sh = s.shapes[rng.below(static_cast<int>(s.shapes.size()))];
            out = existsQuestion(s, sh.color, sh.kind);
            return true;
        }
        std::vector<std::pair<int, int>> absent, near;
        for (int c = 0; c < kNumColors; ++c)
            for (int k = 0; k < kNumKinds; ++k) {
                if (countCombo(s, ColorName(c), ShapeKind(k)) > 0) continue;
                absent.push_back({c, k});
                if (countColor(s, ColorName(c)) > 0 || countKind(s, ShapeKind(k)) > 0) near.push_back({c, k});
            }
        const auto& pool = !near.empty() && rng.chance(0.5) ? near : absent;
        const auto [c, k] = pool[rng.below(static_cast<int>(pool.size()))];
        out = existsQuestion(s, ColorName(c), ShapeKind(k));
        return true;
    }
    case QuestionType::Position: {
        std::vector<int> unique;
        for (size_t i = 0; i < s.shapes.size(); ++i)
            if (countCombo(s, s.shapes[i].color, s.shapes[i].kind) == 1) unique.push_back(static_cast<int>(i));
        if (unique.empty()) return false;
        out = positionQuestion(s, unique[rng.below(static_cast<int>(unique.size()))]);
        return true;
    }
    case QuestionType::Describe: out = describeQuestion(s); return true;
    }
    return false;
}

std::vector<QA> sampleQuestions(const Scene& scene, Rng& rng) {
    std::vector<QA> out;
    for (int t = 0; t < kNumQuestionTypes; ++t) {
        QA qa;
        if (sampleQuestion(scene, QuestionType(t), rng, qa)) out.push_back(qa);
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Grid cells

GridBox gridBox(const Shape& shape, int grid, int imageSize) {
    const double cell = double(imageSize) / grid;
    GridBox b;
    b.col0 = std::clamp(int(std::floor(shape.left() / cell)), 0, grid);
    b.row0 = std::clamp(int(std::floor(shape.top() / cell)), 0, grid);
    b.col1 = std::clamp(int(std::ceil(shape.right() / cell)), 0, grid);
    b.row1 = std::clamp(int(std::ceil(shape.bottom() / cell)), 0, grid);
    return b;
}

std::vector<float> gridCoverage(const Shape& shape, int grid, int imageSize) {
    std::vector<float> out(static_cast<size_t>(grid) * grid, 0.0f);
    const double cell = double(imageSize) / grid;
    const GridBox b = gridBox(shape, grid, imageSize);
    const int samples = std::max(1, int(std::lround(cell * 2)));   // 2 per pixel per axis
    for (int r = b.row0; r < b.row1; ++r)
        for (int c = b.col0; c < b.col1; ++c) {
            int hits = 0;
            for (int sy = 0; sy < samples; ++sy)
                for (int sx = 0; sx < samples; ++sx)
                    hits += shape.contains((c + (sx + 0.5) / samples) * cell, (r + (sy + 0.5) / samples) * cell) ? 1 : 0;
            out[static_cast<size_t>(r) * grid + c] = float(hits) / float(samples * samples);
        }
    return out;
}

std::vector<float> gridMask(const Shape& shape, float threshold, int grid, int imageSize) {
    std::vector<float> m = gridCoverage(shape, grid, imageSize);
    for (float& v : m) v = v > threshold ? 1.0f : 0.0f;
    return m;
}

std::vector<int> cellOwners(const Scene& scene) {
    const int cells = kGridSize * kGridSize;
    std::vector<float> best(cells, 0.05f);
    std::vector<int> owner(cells, -1);
    for (size_t k = 0; k < scene.shapes.size(); ++k) {
        const std::vector<float> cov = gridCoverage(scene.shapes[k]);
        for (int c = 0; c < cells; ++c)
            if (cov[c] >= best[c]) best[c] = cov[c], owner[c] = int(k);
    }
    return owner;
}

// ---------------------------------------------------------------------------------------------
// Steering pairs

ColorPair makeColorPair(uint64_t sceneId, const ColorPairOptions& o) {
    if (o.from == o.to) throw Error("makeColorPair: 'from' and 'to' colours are the same");
    SceneOptions so;
    so.minShapes = o.minShapes;
    so.maxShapes = o.maxShapes;
    Scene s = generateScene(sceneId, so);
    Rng rng(mixSeed(sceneId, 0xC0102));
    // Shape 0 becomes the target; the others avoid its kind (and, optionally, both colours).
    s.shapes[0].kind = o.kind;
    s.shapes[0].color = o.from;
    for (size_t i = 1; i < s.shapes.size(); ++i) {
        Shape& sh = s.shapes[i];
        if (sh.kind == o.kind) {
            std::vector<int> kinds;
            for (int k = 0; k < kNumKinds; ++k)
                if (ShapeKind(k) != o.kind) kinds.push_back(k);
            sh.kind = ShapeKind(kinds[rng.below(static_cast<int>(kinds.size()))]);
        }
        if (o.otherShapesAvoidBothColors && (sh.color == o.from || sh.color == o.to)) {
            std::vector<int> colors;
            for (int c = 0; c < kNumColors; ++c)
                if (ColorName(c) != o.from && ColorName(c) != o.to) colors.push_back(c);
            sh.color = ColorName(colors[rng.below(static_cast<int>(colors.size()))]);
        }
    }
    ColorPair p;
    p.sceneId = sceneId;
    p.shapeIndex = 0;
    p.sceneFrom = s;
    p.sceneTo = recolored(s, 0, o.to);
    p.imageFrom = render(p.sceneFrom);
    p.imageTo = render(p.sceneTo);
    p.mask = gridMask(s.shapes[0]);

    // The control region: the target's mask translated to where it touches no shape (cells at
    // least one cell away from every shape's bounding box), scanning positions in a fixed order.
    const int g = kGridSize;
    std::vector<char> occupied(static_cast<size_t>(g) * g, 0);
    for (const Shape& sh : s.shapes) {
        const GridBox b = gridBox(sh);
        for (int r = std::max(0, b.row0 - 1); r < std::min(g, b.row1 + 1); ++r)
            for (int c = std::max(0, b.col0 - 1); c < std::min(g, b.col1 + 1); ++c) occupied[size_t(r) * g + c] = 1;
    }
    const GridBox tb = gridBox(s.shapes[0]);
    const int h = tb.row1 - tb.row0, w = tb.col1 - tb.col0;
    for (int r0 = 0; r0 + h <= g && p.emptyMask.empty(); ++r0)
        for (int c0 = 0; c0 + w <= g && p.emptyMask.empty(); ++c0) {
            bool ok = true;
            for (int r = 0; r < h && ok; ++r)
                for (int c = 0; c < w && ok; ++c)
                    if (p.mask[size_t(tb.row0 + r) * g + tb.col0 + c] > 0 && occupied[size_t(r0 + r) * g + c0 + c]) ok = false;
            if (!ok) continue;
            p.emptyMask.assign(size_t(g) * g, 0.0f);
            for (int r = 0; r < h; ++r)
                for (int c = 0; c < w; ++c)
                    p.emptyMask[size_t(r0 + r) * g + c0 + c] = p.mask[size_t(tb.row0 + r) * g + tb.col0 + c];
        }
    return p;
}

// ---------------------------------------------------------------------------------------------
// Text

std::string promptFor(const std::string& question) { return "USER: <image>\n" + question + " ASSISTANT:"; }

std::vector<std::string> tokenizerCorpus(int scenes, uint64_t seed) {
    std::vector<std::string> lines;
    lines.push_back("USER:");
    lines.push_back("ASSISTANT:");
    for (int i = 0; i < scenes; ++i) {
        const Scene s = generateScene(trainSceneId(seed, static_cast<uint64_t>(i)));
        Rng rng(mixSeed(s.id, 0xC0 + 0x4B));
        for (const QA& qa : sampleQuestions(s, rng)) {
            // In the prompt the question follows "<image>\n", so its first word has no "▁" before
            // it. spm_train reads one sentence per line and cannot see "\n"; a tab stands in for
            // it so that BPE learns "What", "Describe", ... as well as "▁What".
            lines.push_back("USER: \t" + qa.question + " ASSISTANT: " + qa.answer);
            lines.push_back(qa.question + " ASSISTANT: " + qa.answer);
        }
    }
    return lines;
}

} // namespace kvsteer::demo
