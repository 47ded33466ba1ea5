#pragma once
// ShapeWorld — the synthetic world of the bundled demo model. Torch-free.
//
// A scene is 1–3 non-overlapping shapes (circle, square, triangle) in red, green, blue or yellow
// (each with a small random jitter), 50–120 px, on a plain white, light grey or black background,
// rendered anti-aliased to a 336×336 RGB image. Everything is a pure function of a 64-bit scene id
// (own splitmix64 generator, no std distributions), so a scene is identical on every platform.
//
// Scene ids (documented so training and evaluation never share a scene):
//   training   trainSceneId(seed, i) = seed·2^32 + i             ids in [0, 2^62)   (seed < 2^30)
//   evaluation evalSceneId(seed, i)  = 2^62 + seed·2^32 + i      ids in [2^62, 2^63) (seed < 2^30)
//   steering   steerSceneId(seed, i) = 2^63 + seed·2^32 + i      ids in [2^63, 2^64) (image pairs)
//
// Questions (answers are one or two lower-case words; see questionsFor()):
//   Color     "What color is the circle?"   -> "red"         only about a shape kind present once
//   Shape     "What shape is blue?"         -> "square"      only about a colour present once
//   Count     "How many shapes are there?"  -> "one" | "two" | "three"
//   Exists    "Is there a green triangle?"  -> "yes" | "no"
//   Position  "Where is the red circle?"    -> "left" | "right" | "top" | "bottom" | "center"
//             only about a colour+kind present once; by the shape's centre (its bounding-box
//             centre): the third of the image it falls in along x and y, thirds split at 112 and
//             224 px (a centre exactly on a split belongs to the later third); left/right win
//             over top/bottom; the middle cell is "center".
//   Describe  "Describe the image."         -> "a red circle and a blue square"
//             items in a fixed order: by kind (circle, square, triangle), then by colour (red,
//             green, blue, yellow) — not by position; 1: "a X", 2: "a X and a Y",
//             3: "a X, a Y and a Z".
#include "io/Image.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kvsteer::demo {

constexpr int kImageSize = 336;
constexpr int kGridSize = 24;   // 336 / 14: the visual-token grid of LLaVA-1.5

enum class ShapeKind { Circle = 0, Square = 1, Triangle = 2 };
enum class ColorName { Red = 0, Green = 1, Blue = 2, Yellow = 3 };
enum class BackgroundKind { White = 0, LightGrey = 1, Black = 2 };
enum class QuestionType { Color = 0, Shape = 1, Count = 2, Exists = 3, Position = 4, Describe = 5 };

constexpr int kNumKinds = 3, kNumColors = 4, kNumQuestionTypes = 6;

const char* kindName(ShapeKind k);           // "circle" | "square" | "triangle"
const char* colorName(ColorName c);          // "red" | "green" | "blue" | "yellow"
const char* questionTypeName(QuestionType t);// "color" | "shape" | "count" | "exists" | "position" | "describe"
const char* countWord(int n);                // 1..3 -> "one".."three"

// The deterministic generator every part of the demo uses (splitmix64).
class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next();
    double uniform();                        // [0, 1), 53 bits
    double uniform(double lo, double hi);    // [lo, hi)
    int below(int n);                        // 0 .. n-1
    bool chance(double p) { return uniform() < p; }

private:
    uint64_t state_;
};

uint64_t mixSeed(uint64_t a, uint64_t b);   // a well-mixed combination of two values

struct Shape {
    ShapeKind kind = ShapeKind::Circle;
    ColorName color = ColorName::Red;
    std::array<int, 3> jitter{0, 0, 0};   // per-channel offset from the colour's base RGB
    double cx = 0, cy = 0;                // centre of the bounding box, pixels (x right, y down)
    double size = 0;                      // side of the square bounding box, pixels

    std::array<uint8_t, 3> rgb() const;   // base colour + jitter, clamped
    double left() const { return cx - size / 2; }
    double right() const { return cx + size / 2; }
    double top() const { return cy - size / 2; }
    double bottom() const { return cy + size / 2; }
    // Whether the point (x, y) (pixel coordinates, continuous) is inside the shape. The triangle
    // is upright and isosceles: apex at the top centre, base along the bottom edge of the box.
    bool contains(double x, double y) const;
};

struct Scene {
    uint64_t id = 0;
    BackgroundKind background = BackgroundKind::White;
    std::array<uint8_t, 3> backgroundRgb{255, 255, 255};
    std::vector<Shape> shapes;
};

struct SceneOptions {
    int minShapes = 1, maxShapes = 3;   // 1..3
    double minSize = 50, maxSize = 120; // pixels
    double gap = 4;                     // minimum free pixels between two bounding boxes
    int colorJitter = 20;               // max |offset| per channel
};

// The scene with this id (see the id ranges above).
Scene generateScene(uint64_t sceneId, const SceneOptions& options = {});

uint64_t trainSceneId(uint64_t seed, uint64_t index);
uint64_t evalSceneId(uint64_t seed, uint64_t index);
uint64_t steerSceneId(uint64_t seed, uint64_t index);

// Anti-aliased (4×4 supersampling at shape edges) 336×336 RGB rendering.
ImageU8 render(const Scene& scene);

// Base RGB of a colour name (before jitter) and of a background.
std::array<uint8_t, 3> baseColor(ColorName c);

// The same scene with one shape's colour changed (same jitter offsets, same geometry/background).
Scene recolored(const Scene& scene, int shapeIndex, ColorName newColor);

// Position word of a shape ("left" | "right" | "top" | "bottom" | "center"); rules above.
std::string positionWord(const Shape& shape, int imageSize = kImageSize);
// The third of the image a coordinate falls in, 0 | 1 | 2 (a value on a split belongs to the later
// third): what positionWord reads a shape's centre with.
int imageThird(double v, int imageSize = kImageSize);
// The canonical description ("a red circle and a blue square").
std::string describe(const Scene& scene);

struct QA {
    QuestionType type = QuestionType::Color;
    std::string question;
    std::string answer;
    int shapeIndex = -1;   // the shape the question is about (-1: none / the whole scene / absent)
};

// Every question that may be asked about the scene with its one correct answer: one Color question
// per kind present once, one Shape question per colour present once, Count, Exists for all 12
// colour+kind combinations, one Position question per colour+kind present once, Describe.
std::vector<QA> allQuestions(const Scene& scene);

// One question of each applicable type, its target chosen with `rng` (Exists: yes or no with equal
// probability, a "no" is about an absent combination sharing a colour or kind with a present
// shape half the time). Types that do not apply (e.g. Color when every kind repeats) are absent.
std::vector<QA> sampleQuestions(const Scene& scene, Rng& rng);

// The question of one type for the scene, its target chosen with `rng`; false if the type does
// not apply to the scene.
bool sampleQuestion(const Scene& scene, QuestionType type, Rng& rng, QA& out);

// Cells of the 24×24 grid (14 px each) a shape's bounding box touches: rows [row0, row1),
// columns [col0, col1).
struct GridBox {
    int row0 = 0, row1 = 0, col0 = 0, col1 = 0;
};
GridBox gridBox(const Shape& shape, int grid = kGridSize, int imageSize = kImageSize);

// Fraction of each grid cell covered by the shape (row-major, grid×grid; 2×2 samples per pixel),
// and the mask of cells whose coverage is > threshold (default: any pixel of the cell).
std::vector<float> gridCoverage(const Shape& shape, int grid = kGridSize, int imageSize = kImageSize);
std::vector<float> gridMask(const Shape& shape, float threshold = 0.0f, int grid = kGridSize, int imageSize = kImageSize);

// Each grid cell's shape: the index of the one covering most of the cell (at least 5 % of it), or
// -1 for background (row-major, kGridSize²).
std::vector<int> cellOwners(const Scene& scene);

// A shape as a description names it: "a red circle".
std::string itemText(const Shape& shape);

// For the steering engine: the same scene with a shape of `kind` in colour `from` and in colour
// `to`. The scene has exactly one shape of that kind (so "What color is the circle?" has one
// answer) and, by default, no other shape in either colour. `mask` is the shape's 24×24 grid mask
// (1 over the cells it covers), `emptyMask` a mask of the same number of cells over background
// only (for the "same strength over empty background" control), empty if no such region exists.
struct ColorPair {
    uint64_t sceneId = 0;
    Scene sceneFrom, sceneTo;
    ImageU8 imageFrom, imageTo;
    int shapeIndex = -1;
    std::vector<float> mask;        // 24×24, row-major
    std::vector<float> emptyMask;   // 24×24, row-major; cells covered by no shape
};
struct ColorPairOptions {
    ShapeKind kind = ShapeKind::Circle;
    ColorName from = ColorName::Red;
    ColorName to = ColorName::Blue;
    bool otherShapesAvoidBothColors = true;
    int minShapes = 1, maxShapes = 3;
};
ColorPair makeColorPair(uint64_t sceneId, const ColorPairOptions& options = {});

// Text corpus for the tokenizer: question/answer lines of many scenes and the template pieces,
// one sentence per line (spm_train input).
std::vector<std::string> tokenizerCorpus(int scenes, uint64_t seed);

// The full LLaVA-1.5 prompt of a question (same as generate/Prompt's applyChatTemplate).
std::string promptFor(const std::string& question);

} // namespace kvsteer::demo
