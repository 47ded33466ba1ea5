// The bundled demo model: ShapeWorld's determinism and answer rules, the tokenizer and
// directory layout of resources/demo-model, the trainer (a short real run; descriptions grounded
// item by item), the trainer's forward equal to the inference path, and
// accuracy through the real inference path on fresh scenes with a bound chance cannot reach.
// (The steering test on this model belongs to the steering engine; see makeColorPair.)
#include <ATen/ATen.h>   // torch headers before Qt headers

#include "Error.h"
#include "demo/DemoEval.h"
#include "demo/DemoTrainer.h"
#include "demo/ShapeWorld.h"
#include "demo/TrainingBatch.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <set>

#include <QtTest>

#ifndef KVSTEER_DEMO_MODEL_DIR
#error "KVSTEER_DEMO_MODEL_DIR must be defined (resources/demo-model)"
#endif

using namespace kvsteer;
using namespace kvsteer::demo;

namespace {

Shape shapeAt(double cx, double cy, double size = 60, ShapeKind kind = ShapeKind::Circle) {
    Shape s;
    s.kind = kind;
    s.cx = cx;
    s.cy = cy;
    s.size = size;
    return s;
}

bool sameScene(const Scene& a, const Scene& b) {
    if (a.id != b.id || a.background != b.background || a.backgroundRgb != b.backgroundRgb || a.shapes.size() != b.shapes.size())
        return false;
    for (size_t i = 0; i < a.shapes.size(); ++i) {
        const Shape &x = a.shapes[i], &y = b.shapes[i];
        if (x.kind != y.kind || x.color != y.color || x.jitter != y.jitter || x.cx != y.cx || x.cy != y.cy || x.size != y.size) return false;
    }
    return true;
}

} // namespace

class TestDemoModel : public QObject {
    Q_OBJECT

    std::shared_ptr<Model> model_;

private slots:
    void initTestCase() {
        QVERIFY2(std::filesystem::exists(std::string(KVSTEER_DEMO_MODEL_DIR) + "/config.json"),
                 "resources/demo-model is missing: run scripts/train-demo-model.sh");
        LoadOptions o;
        o.threads = 1;
        model_ = loadModel(KVSTEER_DEMO_MODEL_DIR, o);
    }

    // ---- ShapeWorld -----------------------------------------------------------------------

    void scenesAreDeterministicAndValid() {
        int counts[4] = {};
        for (uint64_t i = 0; i < 300; ++i) {
            const uint64_t id = trainSceneId(7, i);
            const Scene a = generateScene(id), b = generateScene(id);
            QVERIFY(sameScene(a, b));
            QVERIFY(a.shapes.size() >= 1 && a.shapes.size() <= 3);
            counts[a.shapes.size()]++;
            for (size_t s = 0; s < a.shapes.size(); ++s) {
                const Shape& sh = a.shapes[s];
                QVERIFY(sh.size >= 50 && sh.size <= 120);
                QVERIFY(sh.left() >= 0 && sh.top() >= 0 && sh.right() <= kImageSize && sh.bottom() <= kImageSize);
                for (size_t t = s + 1; t < a.shapes.size(); ++t) {   // bounding boxes do not overlap
                    const Shape& o = a.shapes[t];
                    QVERIFY(sh.right() <= o.left() || o.right() <= sh.left() || sh.bottom() <= o.top() || o.bottom() <= sh.top());
                }
                for (int c = 0; c < 3; ++c) QVERIFY(std::abs(sh.jitter[c]) <= 20);
            }
        }
        QVERIFY(counts[1] > 50 && counts[2] > 50 && counts[3] > 50);
        // Rendering is a pure function of the scene.
        const Scene s = generateScene(evalSceneId(0, 3));
        const ImageU8 x = render(s), y = render(s);
        QCOMPARE(x.width, kImageSize);
        QCOMPARE(x.height, kImageSize);
        QVERIFY(x.rgb == y.rgb);
        QVERIFY(render(generateScene(evalSceneId(0, 4))).rgb != x.rgb);
        // The id ranges never meet.
        QVERIFY(trainSceneId(0x3FFFFFFF, 0xFFFFFFFF) < evalSceneId(0, 0));
        QVERIFY(evalSceneId(0x3FFFFFFF, 0xFFFFFFFF) < steerSceneId(0, 0));
    }

    void renderingShowsTheShapes() {
        Scene s;
        s.backgroundRgb = {255, 255, 255};
        Shape c = shapeAt(100, 100, 80, ShapeKind::Circle);
        c.color = ColorName::Red;
        Shape t = shapeAt(250, 250, 80, ShapeKind::Triangle);
        t.color = ColorName::Blue;
        s.shapes = {c, t};
        const ImageU8 img = render(s);
        QCOMPARE(int(img.at(100, 100, 0)), int(baseColor(ColorName::Red)[0]));            // circle centre
        QCOMPARE(int(img.at(100 - 39, 100 - 39, 0)), 255);                                 // bounding-box corner: outside the circle
        QCOMPARE(int(img.at(280, 250, 2)), int(baseColor(ColorName::Blue)[2]));            // triangle, near its base
        QCOMPARE(int(img.at(215, 215, 1)), 255);                                            // top-left of its box: outside
        QCOMPARE(int(img.at(5, 330, 1)), 255);                                              // background
    }

    void positionIsTheThirdOfTheCentre() {
        QCOMPARE(positionWord(shapeAt(50, 168)), std::string("left"));
        QCOMPARE(positionWord(shapeAt(300, 168)), std::string("right"));
        QCOMPARE(positionWord(shapeAt(168, 50)), std::string("top"));
        QCOMPARE(positionWord(shapeAt(168, 300)), std::string("bottom"));
        QCOMPARE(positionWord(shapeAt(168, 168)), std::string("center"));
        // Left/right win over top/bottom (corners).
        QCOMPARE(positionWord(shapeAt(50, 50)), std::string("left"));
        QCOMPARE(positionWord(shapeAt(50, 300)), std::string("left"));
        QCOMPARE(positionWord(shapeAt(300, 50)), std::string("right"));
        QCOMPARE(positionWord(shapeAt(300, 300)), std::string("right"));
        // Boundaries at 112 and 224: a centre on a boundary belongs to the later third.
        QCOMPARE(positionWord(shapeAt(111.9, 168)), std::string("left"));
        QCOMPARE(positionWord(shapeAt(112, 168)), std::string("center"));
        QCOMPARE(positionWord(shapeAt(223.9, 168)), std::string("center"));
        QCOMPARE(positionWord(shapeAt(224, 168)), std::string("right"));
        QCOMPARE(positionWord(shapeAt(168, 111.9)), std::string("top"));
        QCOMPARE(positionWord(shapeAt(168, 224)), std::string("bottom"));
    }

    void answersFollowTheRules() {
        const std::set<std::string> colors{"red", "green", "blue", "yellow"}, kinds{"circle", "square", "triangle"},
            places{"left", "right", "top", "bottom", "center"};
        for (uint64_t i = 0; i < 400; ++i) {
            const Scene s = generateScene(trainSceneId(3, i));
            auto countKind = [&](const std::string& k) {
                return std::count_if(s.shapes.begin(), s.shapes.end(), [&](const Shape& x) { return kindName(x.kind) == k; });
            };
            auto countColor = [&](const std::string& c) {
                return std::count_if(s.shapes.begin(), s.shapes.end(), [&](const Shape& x) { return colorName(x.color) == c; });
            };
            int exists = 0, yes = 0;
            for (const QA& qa : allQuestions(s)) {
                QVERIFY(!qa.answer.empty());
                QCOMPARE(qa.answer, normalizeAnswer(qa.answer));   // lower case, trimmed
                switch (qa.type) {
                case QuestionType::Color: {
                    const std::string kind = qa.question.substr(18, qa.question.size() - 19);   // "What color is the X?"
                    QCOMPARE(countKind(kind), 1L);
                    QVERIFY(colors.count(qa.answer));
                    QCOMPARE(std::string(colorName(s.shapes[size_t(qa.shapeIndex)].color)), qa.answer);
                    break;
                }
                case QuestionType::Shape: {
                    const std::string color = qa.question.substr(14, qa.question.size() - 15);   // "What shape is X?"
                    QCOMPARE(countColor(color), 1L);
                    QVERIFY(kinds.count(qa.answer));
                    break;
                }
                case QuestionType::Count:
                    QCOMPARE(qa.answer, std::string(countWord(int(s.shapes.size()))));
                    break;
                case QuestionType::Exists:
                    ++exists;
                    yes += qa.answer == "yes";
                    QVERIFY(qa.answer == "yes" || qa.answer == "no");
                    break;
                case QuestionType::Position: QVERIFY(places.count(qa.answer)); break;
                case QuestionType::Describe: break;
                }
            }
            QCOMPARE(exists, 12);
            QVERIFY(yes >= 1 && yes <= int(s.shapes.size()));
        }
        // Describe: by kind (circle, square, triangle), then colour (red, green, blue, yellow).
        Scene s;
        Shape a = shapeAt(300, 300, 60, ShapeKind::Triangle), b = shapeAt(50, 50, 60, ShapeKind::Circle), c = shapeAt(168, 168, 60, ShapeKind::Circle);
        a.color = ColorName::Green;
        b.color = ColorName::Yellow;
        c.color = ColorName::Red;
        s.shapes = {a};
        QCOMPARE(describe(s), std::string("a green triangle"));
        s.shapes = {a, b};
        QCOMPARE(describe(s), std::string("a yellow circle and a green triangle"));
        s.shapes = {a, b, c};
        QCOMPARE(describe(s), std::string("a red circle, a yellow circle and a green triangle"));
    }

    void colorPairsForSteering() {
        for (uint64_t i = 0; i < 20; ++i) {
            const ColorPair p = makeColorPair(steerSceneId(0, i));
            const Shape& circle = p.sceneFrom.shapes[size_t(p.shapeIndex)];
            QCOMPARE(circle.kind, ShapeKind::Circle);
            QCOMPARE(circle.color, ColorName::Red);
            QCOMPARE(p.sceneTo.shapes[size_t(p.shapeIndex)].color, ColorName::Blue);
            int circles = 0;
            for (size_t s = 0; s < p.sceneFrom.shapes.size(); ++s) {
                circles += p.sceneFrom.shapes[s].kind == ShapeKind::Circle;
                if (int(s) != p.shapeIndex) {
                    QVERIFY(p.sceneFrom.shapes[s].color != ColorName::Red && p.sceneFrom.shapes[s].color != ColorName::Blue);
                }
            }
            QCOMPARE(circles, 1);
            // The images differ only inside the circle's cells, and the mask covers the circle.
            QCOMPARE(int(p.mask.size()), kGridSize * kGridSize);
            int changedOutside = 0, changedInside = 0;
            for (int y = 0; y < kImageSize; ++y)
                for (int x = 0; x < kImageSize; ++x) {
                    const bool differs = p.imageFrom.at(y, x, 0) != p.imageTo.at(y, x, 0) || p.imageFrom.at(y, x, 2) != p.imageTo.at(y, x, 2);
                    const bool inMask = p.mask[size_t(y / 14) * kGridSize + size_t(x / 14)] > 0;
                    (inMask ? changedInside : changedOutside) += differs;
                }
            QVERIFY2(changedOutside <= 8, qPrintable(QString("%1 pixels changed outside the mask").arg(changedOutside)));   // a few anti-aliased edge pixels
            QVERIFY(changedInside > 1500);   // a circle of >= 50 px
            const GridBox box = gridBox(circle);
            for (int r = 0; r < kGridSize; ++r)
                for (int c = 0; c < kGridSize; ++c)
                    if (p.mask[size_t(r) * kGridSize + c] > 0) {
                        QVERIFY(r >= box.row0 && r < box.row1 && c >= box.col0 && c < box.col1);
                    }
            // The control mask: as many cells, none touching a shape.
            if (!p.emptyMask.empty()) {
                const float inMask = std::accumulate(p.mask.begin(), p.mask.end(), 0.0f);
                QCOMPARE(std::accumulate(p.emptyMask.begin(), p.emptyMask.end(), 0.0f), inMask);
                for (const Shape& sh : p.sceneFrom.shapes) {
                    const GridBox b = gridBox(sh);
                    for (int r = b.row0; r < b.row1; ++r)
                        for (int c = b.col0; c < b.col1; ++c) QCOMPARE(p.emptyMask[size_t(r) * kGridSize + c], 0.0f);
                }
            }
        }
    }

    // ---- The bundled model ---------------------------------------------------------------

    void bundledModelIsALlavaDirectory() {
        const ModelConfig& c = model_->config();
        QCOMPARE(c.modelType, std::string("llava"));
        QCOMPARE(c.name, std::string("kvsteer/shapes-demo"));
        QCOMPARE(c.visionFeatureLayer, -2);
        QCOMPARE(c.visionFeatureSelectStrategy, std::string("default"));
        QCOMPARE(c.vision.imageSize, 336);
        QCOMPARE(c.vision.patchSize, 14);
        QCOMPARE(c.imageSeqLength(), 576);
        QVERIFY(c.text.numKvHeads < c.text.numHeads);   // GQA
        QVERIFY(!c.text.tieWordEmbeddings);
        const Tokenizer& tok = model_->tokenizer();
        QCOMPARE(tok.imageTokenId(), c.imageTokenIndex);
        QCOMPARE(tok.imageTokenId(), tok.sentencePieceSize());   // added right after the SentencePiece vocabulary
        QCOMPARE(tok.padId(), tok.sentencePieceSize() + 1);
        QCOMPARE(tok.bosId(), int64_t(1));
        QCOMPARE(tok.eosId(), int64_t(2));
        QCOMPARE(tok.unkId(), int64_t(0));
        QVERIFY(tok.legacy());
        for (const char* f : {"tokenizer.model", "added_tokens.json", "tokenizer_config.json", "special_tokens_map.json",
                              "preprocessor_config.json", "generation_config.json", "model.safetensors"})
            QVERIFY2(std::filesystem::exists(std::string(KVSTEER_DEMO_MODEL_DIR) + "/" + f), f);
        QVERIFY(std::filesystem::file_size(std::string(KVSTEER_DEMO_MODEL_DIR) + "/model.safetensors") <= 20u * 1024 * 1024);

        // The prompt tokenizes into whole words; any text tokenizes (byte fallback).
        const Prompt p = buildPrompt(*model_, "What color is the circle?", false, &dummyImage());
        QCOMPARE(int(std::count(p.ids.begin(), p.ids.end(), c.imageTokenIndex)), 576);
        QVERIFY(p.ids.size() <= 576 + 16);
        std::vector<int64_t> ids = tok.encode("Ünïcode ✓ 42", false);
        QVERIFY(std::find(ids.begin(), ids.end(), tok.unkId()) == ids.end());
        QCOMPARE(tok.decode(ids), std::string("Ünïcode ✓ 42"));
    }

    void trainerLearnsToAnswerAndWhereToLook() {
        // A short run of the real trainer, both stages (a few dozen steps, small batches): it
        // writes a llava-hf directory that the loader reads and that reproduces the trainer's
        // logits (trainDemoModel checks that itself and throws otherwise), the answer loss falls,
        // and the grounded attention head moves onto the cells of the shape each question is about.
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string root = dir.path().toStdString();
        std::filesystem::create_directories(root + "/tokenizer");
        std::filesystem::copy_file(std::string(KVSTEER_DEMO_MODEL_DIR) + "/tokenizer.model", root + "/tokenizer/tokenizer.model");
        DemoTrainOptions o;
        o.outDir = root + "/model";
        o.tokenizerDir = root + "/tokenizer";
        o.steps = 80;
        o.imagesPerStep = 2;
        o.visionPretrainSteps = 10;
        o.visionLrScale = 0;
        o.validateEvery = 0;
        o.log = [](const std::string&) {};
        const DemoTrainResult r = trainDemoModel(o);
        const QString numbers = QString("loss %1 -> %2, grounding mass %3 -> %4")
                                    .arg(r.firstLoss).arg(r.finalLoss).arg(r.firstGroundingMass).arg(r.groundingMass);
        qInfo().noquote() << numbers;
        QCOMPARE(r.steps, int64_t(80));
        QVERIFY2(r.finalLoss < 0.7 * r.firstLoss, qPrintable(numbers));
        QVERIFY2(r.groundingMass > r.firstGroundingMass + 0.2, qPrintable(numbers));
        const auto trained = loadModel(o.outDir);
        QCOMPARE(trained->config().name, std::string("kvsteer/shapes-demo"));
    }

    void descriptionsAreGroundedItemByItem() {
        // The grounding loss reads each word of a description from the shape it names (the
        // trainer's data, with the bundled tokenizer): the answer tokens of item k decode to
        // exactly "a red circle", the others (separators, EOS) to ", " / " and " / nothing; item
        // k's cells are exactly the cells of the shapes it names; and the packed batch puts each
        // answer row's grounding on those cells.
        const Tokenizer& tok = model_->tokenizer();
        training::SegmentCache segments(tok);
        const ClipPreprocessConfig pre;
        const training::Parameters noWeights;   // makeBatch reads only the RoPE tables
        const training::Net net(model_->config(), noWeights);
        int scenes = 0, threeItems = 0;
        for (uint64_t i = 0; scenes < 12 || threeItems < 3; ++i) {
            const Scene scene = generateScene(evalSceneId(3, i));
            if (scene.shapes.size() < 2) continue;
            ++scenes;
            threeItems += scene.shapes.size() == 3;
            QA qa;
            for (const QA& q : allQuestions(scene))
                if (q.type == QuestionType::Describe) qa = q;
            QCOMPARE(qa.type, QuestionType::Describe);
            const QString answer = QString::fromStdString(qa.answer);
            // The items, "a red circle, a blue square and a green triangle" -> {"a red circle", ...}.
            std::vector<std::string> itemText;
            {
                std::string rest = qa.answer;
                for (size_t at; (at = rest.find(" and ")) != std::string::npos;) rest.replace(at, 5, ", ");
                for (size_t at; (at = rest.find(", ")) != std::string::npos; rest.erase(0, at + 2)) itemText.push_back(rest.substr(0, at));
                itemText.push_back(rest);
            }
            QCOMPARE(itemText.size(), scene.shapes.size());

            const training::Example e = training::makeExample(scene, {qa}, segments, pre);
            const training::Segment& seg = *e.segments[0];
            const training::Grounding& g = e.grounding[0];
            const std::vector<int64_t> answerIds(seg.tokens.begin() + seg.answerStart, seg.tokens.end() - 1);
            QCOMPARE(seg.answerItem.size(), answerIds.size() + 1);
            QCOMPARE(seg.answerItem.back(), -1);   // EOS
            for (size_t k = 0; k < itemText.size(); ++k) {
                std::vector<int64_t> ids;
                size_t first = answerIds.size(), last = 0;
                for (size_t t = 0; t < answerIds.size(); ++t)
                    if (seg.answerItem[t] == int(k)) ids.push_back(answerIds[t]), first = std::min(first, t), last = t;
                QVERIFY2(!ids.empty() && last + 1 - first == ids.size(), qPrintable(answer));   // contiguous
                std::string text = tok.decode(ids);
                text.erase(0, text.find_first_not_of(' '));
                QVERIFY2(text == itemText[k], qPrintable(answer + " / item " + QString::number(k) + ": " + QString::fromStdString(text)));
            }
            for (size_t t = 0; t < answerIds.size(); ++t)
                if (seg.answerItem[t] < 0) {
                    const std::string piece = tok.decode({answerIds[t]});
                    QVERIFY2(piece.find_first_not_of(" ,and") == std::string::npos, qPrintable(answer + ": " + QString::fromStdString(piece)));
                }

            // Item k's cells: every cell owned by a shape the item names, nothing else.
            const std::vector<int> owner = cellOwners(scene);
            QCOMPARE(g.itemCells.size(), itemText.size());
            for (size_t k = 0; k < itemText.size(); ++k) {
                std::vector<int64_t> expected;
                for (size_t c = 0; c < owner.size(); ++c)
                    if (owner[c] >= 0 && demo::itemText(scene.shapes[size_t(owner[c])]) == itemText[k]) expected.push_back(int64_t(c));
                QVERIFY(!expected.empty());
                QCOMPARE(g.itemCells[k], expected);
            }

            // The batch: one grounding row per answer row (all have cells here), in order; row j
            // predicts answer token j (or EOS) and is grounded on its item's cells or on every shape.
            const training::Batch bt = training::makeBatch({e}, segments.prefixBeforeImage(), model_->config().imageSeqLength(), net);
            QCOMPARE(bt.groundingMask.size(0), int64_t(seg.answerItem.size()));
            QCOMPARE(bt.groundedRows.size(0), int64_t(seg.answerItem.size()));
            for (size_t j = 0; j < seg.answerItem.size(); ++j) {
                const std::vector<int64_t>& cells = seg.answerItem[j] >= 0 ? g.itemCells[size_t(seg.answerItem[j])] : g.cells;
                const at::Tensor row = bt.groundingMask[int64_t(j)];
                QCOMPARE(row.sum().item<double>(), double(cells.size()));
                for (int64_t c : cells) QCOMPARE(row[c].item<float>(), 1.0f);
            }
        }
    }

    void trainingForwardMatchesInference() {
        // The trainer's packed batch (all questions of an image in one sequence) scores exactly
        // what the real loader and decoder score one question at a time.
        QVERIFY(trainingForwardParity(KVSTEER_DEMO_MODEL_DIR, 1, 5) < 1e-4);
    }

    void answersFreshScenes() {
        // 60 scenes never used in training (eval seed 1), every applicable question type, greedy
        // decoding through Model + buildPrompt + Session. Chance is far below: ~25-50% per type
        // and 1/8 or less for descriptions.
        DemoEvalOptions o;
        o.scenes = 60;
        o.seed = 1;
        const DemoEvalResult r = evaluateDemo(model_, o);
        for (int t = 0; t < kNumQuestionTypes; ++t)
            std::printf("  %-9s %3d / %3d\n", questionTypeName(QuestionType(t)), r.correct[t], r.total[t]);
        std::printf("  overall   %.1f%% of %d questions, %.0f s\n", 100 * r.overall(), r.questions(), r.seconds);
        QVERIFY(r.questions() >= 60 * 4);
        // Bounds a little under what the shipped model scores here (97.1 % overall; colour, shape
        // and exists all right, count 57/60, position 53/58, describe 58/60); overall is the
        // issue's 95 %. A model blind to the image scores at most ~30 % overall and <= 40 % on
        // colour and count (answer priors).
        QVERIFY2(r.overall() >= 0.95, qPrintable(QString("overall accuracy %1").arg(r.overall())));
        const std::pair<QuestionType, double> bounds[] = {{QuestionType::Color, 0.95},  {QuestionType::Shape, 0.95},
                                                          {QuestionType::Count, 0.9},   {QuestionType::Exists, 0.95},
                                                          {QuestionType::Position, 0.85}, {QuestionType::Describe, 0.9}};
        for (const auto& [type, bound] : bounds)
            QVERIFY2(r.accuracy(type) >= bound, qPrintable(QString("%1: %2 < %3").arg(questionTypeName(type)).arg(r.accuracy(type)).arg(bound)));
    }

private:
    static const ImageU8& dummyImage() {
        static const ImageU8 img = render(generateScene(evalSceneId(0, 0)));
        return img;
    }
};

QTEST_GUILESS_MAIN(TestDemoModel)
#include "test_demo_model.moc"
