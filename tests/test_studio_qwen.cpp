// The studio on the Qwen families, driven as a person would (offscreen, real models, no mocks):
//   - tiny-qwen2vl: the gradient image (500×300) lays out on its own non-square 10×18 grid; the
//     canvas and the heatmaps take it, and Run's unsteered answer is the reference's 20 greedy ids;
//   - tiny-qwen2 (text only): the canvas is the prompt's token strip, one chip per token the cache
//     holds (the core's own count), the image actions refuse with a reason; "Last Token" is one
//     click; editing the question keeps the last token painted; text-pair vectors computed in the
//     Steering panel change the answer; ‖ΔV‖ is drawn over the tokens and is non-zero exactly on
//     the painted one; the brush paints the chip under the pointer;
//   - tiny-llama3 loads (its template refuses an image) and runs on its token strip;
//   - back on tiny-qwen2vl, the image set aside by the text model returns, and Run answers about it;
//   - tiny-qwen25vl opens that image on its 10x18 grid and answers with the reference's ids;
//   - tiny-qwen3vl opens it on its own grid (8x14, 32-pixel cells), answers with the reference's ids,
//     paints a region, computes painted-region vectors, runs steered (the answer changes) and
//     shows ‖ΔV‖ on its grid, non-zero exactly on the painted cells in every layer.
//
// torch (through the core) before any Qt header.
#include "TestSupport.h"
#include "generate/Session.h"
#include "io/Image.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"

#include "StudioTestSupport.h"
#include "widgets/HeatmapPanel.h"
#include "widgets/SteeringPanel.h"
#include "widgets/StreamView.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QUndoStack>

using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;

namespace {

QString qwen2VlDir() { return QString::fromStdString(referenceQwen2VlDir()); }
QString qwen2Dir() { return QString::fromStdString(referenceDir() + "/tiny-qwen2"); }

// The reference case `name` of expected-qwen2vl (or another expected-* folder): its question and 20 greedy ids.
QJsonObject referenceCase(const QString& name, const char* folder = "expected-qwen2vl") {
    QFile f(QString::fromStdString(referenceDir() + "/" + folder + "/summary.json"));
    if (!f.open(QIODevice::ReadOnly)) return {};
    for (const QJsonValue& c : QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("cases")).toArray())
        if (c.toObject().value(QStringLiteral("name")).toString() == name) return c.toObject();
    return {};
}

QVector<qint64> ids(const QVector<StreamToken>& tokens) {
    QVector<qint64> out;
    for (const StreamToken& t : tokens) out << t.id;
    return out;
}

} // namespace

class TestStudioQwen : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    std::unique_ptr<MainWindow> w_;

    bool runAndWait(int maxTokens, RunFinished* finished = nullptr) { return test::runAndWait(w_.get(), maxTokens, finished); }
    // Asks the reference case's question; the unsteered answer must be its 20 greedy ids.
    void answersLikeTheReference(const QJsonObject& c) {
        w_->promptPanel()->setPrompt(c.value(QStringLiteral("user_text")).toString());
        QVERIFY2(runAndWait(20), qPrintable(w_->lastErrorText()));
        QVector<qint64> expected;
        for (const QJsonValue& id : c.value(QStringLiteral("greedy_ids")).toArray()) expected << id.toInteger();
        QCOMPARE(ids(w_->streamView()->tokens(false)), expected);
    }
    bool openModel(const QString& dir) {
        QSignalSpy ready(w_.get(), &MainWindow::modelReady);
        w_->openModel(dir);
        return ready.wait(kLoadTimeoutMs);
    }
    // The strip for the prompt shown has arrived (the Worker tokenizes each edit).
    bool stripOf(int tokens) {
        return QTest::qWaitFor([&] { return w_->canvas()->isTokenStrip() && w_->canvas()->gridCols() == tokens; }, 10000);
    }
    int cachedTokens(const QString& question) {
        const auto model = loadModel(qwen2Dir().toStdString());
        return int(buildPrompt(*model, question.toStdString(), false, nullptr).ids.size()) - 1;
    }

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        w_ = std::make_unique<MainWindow>(studioOptions(qwen2VlDir(), tmp_.filePath(QStringLiteral("recovery.kvsession"))));
        w_->resize(1400, 900);
        w_->show();
        QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
        QSignalSpy ready(w_.get(), &MainWindow::modelReady);
        QVERIFY(ready.wait(kLoadTimeoutMs));
        QCOMPARE(w_->modelInfo().family, QStringLiteral("Qwen2-VL"));
        w_->promptPanel()->setLive(false);
        GenerationSettings g = w_->promptPanel()->generation();
        g.stopAtEos = false;
        w_->promptPanel()->setGeneration(g);
    }

    void nonSquareGridAndReferenceAnswer() {
        const QJsonObject c = referenceCase(QStringLiteral("gradient"));
        QVERIFY2(!c.isEmpty(), "expected-qwen2vl/summary.json has no gradient case");
        QSignalSpy shown(w_.get(), &MainWindow::imageShown);
        w_->openImageFile(referenceImage(c.value(QStringLiteral("image")).toString()));
        QVERIFY(shown.wait(kLoadTimeoutMs));
        QCOMPARE(w_->canvas()->gridRows(), 10);
        QCOMPARE(w_->canvas()->gridCols(), 18);
        QVERIFY(!w_->canvas()->isTokenStrip());
        answersLikeTheReference(c);
        QVERIFY(QTest::qWaitFor([&] { return w_->heatmapPanel()->data().valid(); }, 10000));
        QCOMPARE(w_->heatmapPanel()->data().rows, 10);
        QCOMPARE(w_->heatmapPanel()->data().cols, 18);
        QCOMPARE(w_->errorCount(), 0);
    }

    void textModelPaintsTheTokenStrip() {
        const int errorsBefore = w_->errorCount();
        QVERIFY(openModel(qwen2Dir()));
        QVERIFY(w_->modelInfo().textOnly());
        const QString question = QStringLiteral("Tell me about the weather");
        w_->promptPanel()->setPrompt(question);
        const int n = cachedTokens(question);
        QVERIFY(stripOf(n));
        QCOMPARE(w_->canvas()->gridRows(), 1);
        QVERIFY(!w_->canvas()->hasImage());   // the image of the VL model is set aside, not an error
        QCOMPARE(w_->errorCount(), errorsBefore);
        QVERIFY(!w_->promptPanel()->examples().isEmpty());   // plain prompts, not the demo's questions
        QVERIFY(!w_->promptPanel()->examples().contains(QStringLiteral("What color is the circle?")));

        // One click: the last token, and nothing else.
        QAction* last = nullptr;
        for (QAction* a : w_->findChildren<QAction*>())
            if (a->text() == QStringLiteral("Last Token")) last = a;
        QVERIFY(last && last->isVisible() && last->isEnabled());
        last->trigger();
        QCOMPARE(w_->canvas()->strength().paintedCells(), 1);
        QCOMPARE(w_->canvas()->strength().at(0, n - 1), 1.0f);

        // Editing the question keeps the paint on the tokens the prompts share: still the last.
        w_->promptPanel()->setPrompt(question + QStringLiteral(" in Paris today"));
        const int longer = cachedTokens(question + QStringLiteral(" in Paris today"));
        QVERIFY(longer > n);
        QVERIFY(stripOf(longer));
        QCOMPARE(w_->canvas()->strength().paintedCells(), 1);
        QCOMPARE(w_->canvas()->strength().at(0, longer - 1), 1.0f);

        // The brush paints the chip under the pointer.
        w_->canvas()->setBrushSize(1);
        stroke(w_->canvas(), {{2, 0}});
        QCOMPARE(w_->canvas()->strength().at(0, 2), 1.0f);
        QCOMPARE(w_->canvas()->strength().paintedCells(), 2);
        w_->undoStack()->undo();
        QCOMPARE(w_->canvas()->strength().paintedCells(), 1);
        QCOMPARE(w_->errorCount(), errorsBefore);
    }

    void textPairVectorsSteerTheLastToken() {
        SteeringPanel* panel = w_->steeringPanel();
        panel->setSource(VectorSource::TextPairs);
        panel->setTextPairs({{QStringLiteral("What a great day"), QStringLiteral("What an awful day")},
                             {QStringLiteral("The answer is yes"), QStringLiteral("The answer is no")}});
        QVERIFY2(computeVectors(w_.get()), qPrintable(w_->lastErrorText()));
        PlanSettings p = panel->planSettings();
        p.op = SteeringOperator::Add;
        p.ck = 8.0;
        p.cv = 8.0;
        panel->setPlanSettings(p);
        HeatmapSettings hs = w_->heatmapPanel()->settings();
        hs.metric = Metric::ValueDelta;
        w_->heatmapPanel()->setSettings(hs);

        QVERIFY(runAndWait(10));
        QCOMPARE(w_->lastRunStarted().appliedStrength, w_->canvas()->strength());
        QVERIFY2(ids(w_->streamView()->tokens(true)) != ids(w_->streamView()->tokens(false)), "the steered answer equals the unsteered one");
        const int n = w_->canvas()->gridCols();
        QVERIFY(QTest::qWaitFor([&] { return w_->heatmapPanel()->data().metric == Metric::ValueDelta; }, 10000));
        const HeatmapData& h = w_->heatmapPanel()->data();
        QCOMPARE(h.rows, 1);
        QCOMPARE(h.cols, n);
        for (int l = 0; l < h.layers; ++l)
            for (int i = 0; i < n; ++i) QCOMPARE(h.at(l, 0, i) > 0, i == n - 1);
    }

    // Llama-3 (text only, a chat template that refuses an image) loads, shows its template and
    // runs on the token strip like Qwen2.
    void llama3LoadsAndRuns() {
        const int errorsBefore = w_->errorCount();
        QVERIFY(openModel(QString::fromStdString(referenceLlama3Dir())));
        QCOMPARE(w_->modelInfo().family, QStringLiteral("Llama-3"));
        QVERIFY(w_->modelInfo().textOnly());
        QVERIFY2(w_->modelInfo().promptTemplate.contains(QStringLiteral("<|start_header_id|>user<|end_header_id|>")),
                 qPrintable(w_->modelInfo().promptTemplate));
        w_->promptPanel()->setPrompt(QStringLiteral("Tell me about the weather"));
        const auto model = loadModel(referenceLlama3Dir());
        QVERIFY(stripOf(int(buildPrompt(*model, "Tell me about the weather", false, nullptr).ids.size()) - 1));
        QVERIFY2(runAndWait(4), qPrintable(w_->lastErrorText()));
        QCOMPARE(w_->streamView()->tokens(false).size(), 4);
        QCOMPARE(w_->errorCount(), errorsBefore);
    }

    // Back to the vision model: the image set aside returns on its own grid, and Run answers
    // about it (the reference's greedy ids), with no "No image is open".
    void imageReturnsWithTheVisionModel() {
        const QJsonObject c = referenceCase(QStringLiteral("gradient"));
        const int errorsBefore = w_->errorCount();
        QSignalSpy shown(w_.get(), &MainWindow::imageShown);
        QVERIFY(openModel(qwen2VlDir()));
        QVERIFY(shown.count() > 0 || shown.wait(kLoadTimeoutMs));
        QVERIFY(w_->canvas()->hasImage());
        QVERIFY(!w_->canvas()->isTokenStrip());
        QCOMPARE(w_->canvas()->gridRows(), 10);
        QCOMPARE(w_->canvas()->gridCols(), 18);
        answersLikeTheReference(c);
        QCOMPARE(w_->errorCount(), errorsBefore);
    }

    // Qwen2.5-VL (window attention in its tower) opens the same image on its 10x18 grid and
    // answers with the reference's ids.
    void qwen25VlAnswersLikeTheReference() {
        const QJsonObject c = referenceCase(QStringLiteral("gradient"), "expected-qwen25vl");
        QVERIFY2(!c.isEmpty(), "expected-qwen25vl/summary.json has no gradient case");
        const int errorsBefore = w_->errorCount();
        QVERIFY(openModel(QString::fromStdString(referenceQwen25VlDir())));
        QCOMPARE(w_->modelInfo().family, QStringLiteral("Qwen2.5-VL"));
        QVERIFY(QTest::qWaitFor([&] { return w_->canvas()->hasImage() && w_->canvas()->gridCols() == 18; }, kLoadTimeoutMs));
        QCOMPARE(w_->canvas()->gridRows(), 10);
        answersLikeTheReference(c);
        QCOMPARE(w_->errorCount(), errorsBefore);
    }

    // Qwen3-VL (DeepStack, 32-pixel cells) opens the image on its grid (the reference's), answers with the
    // reference's ids, and steers a painted region with vectors computed from that region.
    void qwen3VlPaintsRunsAndShowsHeatmaps() {
        const QJsonObject c = referenceCase(QStringLiteral("gradient"), "expected-qwen3vl");
        QVERIFY2(!c.isEmpty(), "expected-qwen3vl/summary.json has no gradient case");
        const int errorsBefore = w_->errorCount();
        const QJsonArray grid = c.value(QStringLiteral("merged_grid_hw")).toArray();   // 8 x 14 on tiny-qwen3vl
        const int rows = grid.at(0).toInt(), cols = grid.at(1).toInt();
        QVERIFY(openModel(QString::fromStdString(referenceQwen3VlDir())));
        QCOMPARE(w_->modelInfo().family, QStringLiteral("Qwen3-VL"));
        QVERIFY(QTest::qWaitFor([&] { return w_->canvas()->hasImage() && w_->canvas()->gridCols() == cols; }, kLoadTimeoutMs));
        QCOMPARE(w_->canvas()->gridRows(), rows);
        answersLikeTheReference(c);

        // Paint rows 2..4, columns 3..7, and take vectors from that region against the rest.
        w_->canvas()->setBrushSize(1);
        for (int row = 2; row <= 4; ++row) stroke(w_->canvas(), {{3, row}, {4, row}, {5, row}, {6, row}, {7, row}});
        QCOMPARE(w_->canvas()->strength().paintedCells(), 15);
        SteeringPanel* panel = w_->steeringPanel();
        panel->setSource(VectorSource::PaintedRegion);
        QVERIFY2(computeVectors(w_.get()), qPrintable(w_->lastErrorText()));
        PlanSettings p = panel->planSettings();
        p.op = SteeringOperator::Add;
        p.ck = 4.0;
        p.cv = 16.0;
        p.propagate = false;
        panel->setPlanSettings(p);
        HeatmapSettings hs = w_->heatmapPanel()->settings();
        hs.metric = Metric::ValueDelta;
        w_->heatmapPanel()->setSettings(hs);

        QVERIFY2(runAndWait(12), qPrintable(w_->lastErrorText()));
        QVERIFY2(ids(w_->streamView()->tokens(true)) != ids(w_->streamView()->tokens(false)), "the steered answer equals the unsteered one");
        QVERIFY(QTest::qWaitFor([&] { return w_->heatmapPanel()->data().metric == Metric::ValueDelta; }, 10000));
        const HeatmapData& h = w_->heatmapPanel()->data();
        QCOMPARE(h.rows, rows);
        QCOMPARE(h.cols, cols);
        QCOMPARE(h.layers, w_->modelInfo().layers);
        for (int l = 0; l < h.layers; ++l)
            for (int r = 0; r < rows; ++r)
                for (int col = 0; col < cols; ++col) QCOMPARE(h.at(l, r, col) > 0, r >= 2 && r <= 4 && col >= 3 && col <= 7);
        QCOMPARE(w_->errorCount(), errorsBefore);
    }

    // A model switch with a painted mask: the mask is resampled once, from the grid it was painted
    // on (8×14 under Qwen3-VL) straight to the image's grid under the new model (10×18 under
    // Qwen2-VL), never through the model's square default grid; said beside the mask, no dialog.
    void oneResampleOnAModelSwitch() {
        QCOMPARE(w_->canvas()->gridRows(), 8);
        QVERIFY(w_->canvas()->strength().paintedCells() > 0);
        QSignalSpy resampled(w_->canvas(), &PatchCanvas::mapResampled);
        QVERIFY(openModel(qwen2VlDir()));
        QVERIFY(QTest::qWaitFor([&] { return w_->canvas()->gridCols() == 18; }, kLoadTimeoutMs));
        QTest::qWait(100);
        QCOMPARE(resampled.count(), 1);
        QCOMPARE(resampled.first(), (QList<QVariant>{8, 14, 10, 18}));
        QVERIFY2(w_->maskNoteText().contains(QStringLiteral("8×14 to 10×18")), qPrintable(w_->maskNoteText()));
        QVERIFY(closeMessageBoxes().isEmpty());
        // The person's next stroke makes the map theirs: the note goes.
        stroke(w_->canvas(), {{0, 0}, {1, 0}});
        QVERIFY(w_->maskNoteText().isEmpty());
    }
};

QTEST_MAIN(TestStudioQwen)
#include "test_studio_qwen.moc"
