// The studio on a second model family and on any patch grid, driven as a person would
// (offscreen, real models, no mocks):
//   - tiny-paligemma (SigLIP, 16×16 patches at 224 px, image tokens first, prefix-LM prompt) opens
//     over a LLaVA model (24×24) the way File → Open Model Directory… opens any directory; the
//     painted 24×24 mask is resampled onto 16×16 and the studio says so; the prompt shown is the
//     family's own template; Run gives the unsteered answer the core gives (and the reference's
//     greedy ids); heatmaps are 16×16; a painted-region steer streams both answers and edits
//     exactly the painted cells;
//   - a session whose mask was painted on another grid opens resampled, with a notice, and the
//     autosaved recovery file holds the resampled map;
//   - PatchCanvas at 64×64 (thinned grid lines, a 1-cell brush paints exactly the cell under the
//     pointer, undo / redo) and at 12×20 (non-square); HeatmapPanel for 12×20 and 64×64.
//
// torch (through the core) before any Qt header.
#include "TestSupport.h"
#include "generate/Session.h"
#include "io/Image.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"

#include <c10/core/GradMode.h>

#include "StudioTestSupport.h"
#include "studio/SessionFile.h"
#include "widgets/HeatmapPanel.h"
#include "widgets/SteeringPanel.h"
#include "widgets/StreamView.h"

#include <qcustomplot.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QUndoStack>

using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;

namespace {

const QString kQuestion = QStringLiteral("What color is the square?");

QString llavaDir() { return QString::fromStdString(referenceModelDir()); }
QString paliGemmaDir() { return QString::fromStdString(referenceDir() + "/tiny-paligemma"); }

// The reference's 20 greedy ids for `caseName` (transformers' PaliGemma on the same checkpoint).
std::vector<int64_t> referenceGreedyIds(const QString& caseName) {
    QFile f(QString::fromStdString(referenceDir() + "/expected-paligemma/summary.json"));
    if (!f.open(QIODevice::ReadOnly)) return {};
    std::vector<int64_t> ids;
    for (const QJsonValue& c : QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("cases")).toArray())
        if (c.toObject().value(QStringLiteral("name")).toString() == caseName)
            for (const QJsonValue& id : c.toObject().value(QStringLiteral("greedy_ids")).toArray()) ids.push_back(id.toInteger());
    return ids;
}

// The map `rows` × `cols` with strength 1 on rows r0..r1, columns c0..c1 (inclusive).
StrengthGrid block(int rows, int cols, int r0, int r1, int c0, int c1) {
    StrengthGrid g(rows, cols);
    for (int r = r0; r <= r1; ++r)
        for (int c = c0; c <= c1; ++c) g.at(r, c) = 1.0f;
    return g;
}

// One press and release of the brush at `pos` (widget coordinates).
void dabAt(PatchCanvas* canvas, const QPointF& pos) {
    QTest::mousePress(canvas, Qt::LeftButton, Qt::NoModifier, pos.toPoint());
    QTest::mouseRelease(canvas, Qt::LeftButton, Qt::NoModifier, pos.toPoint());
}

// A canvas of rows × cols over a plain image of 14 px patches, shown at `size`.
std::unique_ptr<PatchCanvas> showCanvas(QUndoStack* undo, int rows, int cols, QSize size) {
    auto canvas = std::make_unique<PatchCanvas>(undo);
    canvas->setGridSize(rows, cols);
    QImage image(cols * 14, rows * 14, QImage::Format_RGB888);
    image.fill(QColor(90, 110, 140));
    canvas->setImage(image, QStringLiteral("plain"));
    canvas->resize(size);
    canvas->show();
    return canvas;
}

} // namespace

class TestStudioPaliGemma : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    std::unique_ptr<MainWindow> w_;
    std::shared_ptr<Model> model_;   // the core's own tiny-paligemma, to compare answers with

    bool runAndWait(int maxTokens, RunFinished* finished = nullptr) { return test::runAndWait(w_.get(), maxTokens, finished); }

    // The run's attention (or cache) heatmap has arrived for the last run.
    bool heatmapOfLastRun(Metric metric) {
        HeatmapPanel* h = w_->heatmapPanel();
        return QTest::qWaitFor([&] { return h->data().metric == metric && h->data().runId == w_->lastRunStarted().runId; }, 10000);
    }

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        model_ = loadModel(paliGemmaDir().toStdString());
        w_ = std::make_unique<MainWindow>(studioOptions(llavaDir(), tmp_.filePath(QStringLiteral("recovery.kvsession"))));
        w_->resize(1400, 900);
        w_->show();
        QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
        QSignalSpy ready(w_.get(), &MainWindow::modelReady);
        QVERIFY(ready.wait(kLoadTimeoutMs));
        QCOMPARE(w_->modelInfo().family, QStringLiteral("LLaVA-1.5"));
        QCOMPARE(w_->canvas()->gridRows(), 24);
        QSignalSpy shown(w_.get(), &MainWindow::imageShown);
        w_->openImageFile(referenceImage());
        QVERIFY(shown.wait(kLoadTimeoutMs));
        w_->promptPanel()->setPrompt(kQuestion);
        w_->promptPanel()->setLive(false);
        GenerationSettings g = w_->promptPanel()->generation();
        g.stopAtEos = false;
        w_->promptPanel()->setGeneration(g);
        QCOMPARE(w_->errorCount(), 0);
    }

    // A PaliGemma directory opens exactly like a LLaVA one; what was painted comes along, resampled.
    void opensPaliGemmaOverLlava() {
        PatchCanvas* canvas = w_->canvas();
        canvas->setTool(PatchCanvas::Tool::Rectangle);
        stroke(canvas, {{0, 0}, {5, 5}});   // rows 0..5, columns 0..5 of 24×24
        canvas->setTool(PatchCanvas::Tool::Brush);
        QCOMPARE(canvas->strength(), block(24, 24, 0, 5, 0, 5));

        QSignalSpy ready(w_.get(), &MainWindow::modelReady);
        QSignalSpy shown(w_.get(), &MainWindow::imageShown);
        QSignalSpy resampled(canvas, &PatchCanvas::mapResampled);
        w_->openModel(paliGemmaDir());   // what File → Open Model Directory… does with the chosen directory
        QVERIFY(ready.wait(kLoadTimeoutMs));
        QVERIFY(!shown.isEmpty() || shown.wait(kLoadTimeoutMs));   // the image, prepared by SigLIP's processor
        const ModelInfo& m = w_->modelInfo();
        QCOMPARE(m.family, QStringLiteral("PaliGemma"));
        QCOMPARE(m.gridRows, 16);
        QCOMPARE(m.gridCols, 16);
        QCOMPARE(m.cropWidth, 224);
        QCOMPARE(canvas->image().size(), QSize(224, 224));
        QCOMPARE(canvas->gridRows(), 16);
        QCOMPARE(canvas->gridCols(), 16);
        QCOMPARE(w_->heatmapPanel()->gridRows(), 16);

        // 6 of 24 rows are 4 of 16: the same part of the image, resampled once, straight onto the
        // grid the image has under the new model, and said beside the mask and in the status bar,
        // not in a dialog that stops the person.
        QCOMPARE(canvas->strength(), block(16, 16, 0, 3, 0, 3));
        QCOMPARE(resampled.count(), 1);
        QCOMPARE(resampled.first().at(2).toInt(), 16);
        QVERIFY2(w_->maskNoteText().contains(QStringLiteral("24×24")) && w_->maskNoteText().contains(QStringLiteral("16×16")),
                 qPrintable(w_->maskNoteText()));
        auto* summary = w_->findChild<QLabel*>(QStringLiteral("runInfo"));
        QVERIFY(summary && summary->text().contains(QStringLiteral("resampled from 24×24 to 16×16")));
        QVERIFY2(closeMessageBoxes().isEmpty(), "a notice is not a dialog");
        QCOMPARE(w_->errorCount(), 0);

        // The question's tooltip shows PaliGemma's own prompt, from the core's template.
        QCOMPARE(w_->promptPanel()->promptTemplate(), QString::fromStdString(model_->applyTemplate("{question}", true)));
        QCOMPARE(w_->promptPanel()->promptTemplate(), QStringLiteral("<image><bos>{question}\n"));
        const QString tip = w_->promptPanel()->promptEdit()->toolTip();
        QVERIFY2(tip.contains(QStringLiteral("PaliGemma")) && tip.contains(QStringLiteral("&lt;image&gt;&lt;bos&gt;{question}\\n")),
                 qPrintable(tip));
        QVERIFY(!tip.contains(QStringLiteral("USER:")));

        // The brush is measured in cells, up to the grid's largest brush.
        QSpinBox* size = nullptr;
        for (QSpinBox* s : w_->findChildren<QSpinBox*>())
            if (s->suffix().contains(QStringLiteral("cell"))) size = s;
        QVERIFY(size);
        QCOMPARE(size->maximum(), int(canvas->maxBrushSize()));
        canvas->setBrushSize(1);
        QCOMPARE(size->suffix(), QStringLiteral(" cell"));
    }

    // Run: the unsteered answer is the core's for the same prompt and image, which is the
    // reference's; the attention heatmaps cover the 16×16 grid.
    void unsteeredAnswerMatchesCore() {
        w_->canvas()->clearAll();
        RunFinished f;
        QVERIFY(runAndWait(20, &f));
        QVERIFY(!f.cancelled);
        QCOMPARE(f.steps, 20);
        QVERIFY(!f.unsteeredText.isEmpty());
        QCOMPARE(w_->lastRunStarted().promptTokens, 256 + 11);   // image tokens first, then <bos> and the prefix

        c10::NoGradGuard noGrad;
        const ImageU8 image = loadImage(referenceImage().toStdString());
        Session core(model_);
        QVERIFY(core.prefill(buildPrompt(*model_, kQuestion.toStdString(), false, &image)));
        GenerationOptions g;
        g.maxNewTokens = 20;
        g.stopAtEos = false;
        const Generation expected = core.generate(g);
        std::vector<int64_t> studioIds;
        for (const StreamToken& t : w_->streamView()->tokens(false)) studioIds.push_back(t.id);
        QCOMPARE(studioIds, expected.ids);
        QCOMPARE(studioIds, referenceGreedyIds(QStringLiteral("red_square")));
        QCOMPARE(f.unsteeredText, QString::fromStdString(expected.text));
        QCOMPARE(w_->streamView()->text(false), f.unsteeredText);

        QVERIFY(heatmapOfLastRun(Metric::Attention));
        const HeatmapData& h = w_->heatmapPanel()->data();
        QCOMPARE(h.rows, 16);
        QCOMPARE(h.cols, 16);
        QCOMPARE(h.layers, w_->modelInfo().layers);
        QCOMPARE(h.step, 19);
    }

    // Paint, compute vectors from the painted region, Run: both answers stream, the plan's map is
    // the painted 16×16 map, and the edit touches exactly the painted cells.
    void steeredRunOnSixteenGrid() {
        PatchCanvas* canvas = w_->canvas();
        canvas->setBrushSize(1);
        canvas->setBrushStrength(1.0);
        stroke(canvas, {{9, 5}, {10, 5}, {11, 5}, {12, 5}});   // row 5, columns 9..12
        stroke(canvas, {{12, 6}, {12, 7}});                     // column 12, rows 6..7
        QCOMPARE(canvas->strength().paintedCells(), 6);

        SteeringPanel* panel = w_->steeringPanel();
        panel->setSource(VectorSource::PaintedRegion);
        QVERIFY2(computeVectors(w_.get()), qPrintable(w_->lastErrorText()));
        PlanSettings p = panel->planSettings();
        p.op = SteeringOperator::Add;
        p.cv = 4.0;
        panel->setPlanSettings(p);
        HeatmapSettings hs = w_->heatmapPanel()->settings();
        hs.metric = Metric::ValueDelta;
        w_->heatmapPanel()->setSettings(hs);

        QSignalSpy appended(w_->streamView(), &StreamView::tokensAppended);
        RunFinished f;
        QVERIFY(runAndWait(8, &f));
        QCOMPARE(appended.count(), 8);
        QCOMPARE(w_->streamView()->tokenCount(false), 8);
        QCOMPARE(w_->streamView()->tokenCount(true), 8);
        QVERIFY(!f.steeredText.isEmpty());
        QCOMPARE(w_->lastRunStarted().appliedStrength, canvas->strength());
        QVERIFY(heatmapOfLastRun(Metric::ValueDelta));
        const HeatmapData& h = w_->heatmapPanel()->data();
        QCOMPARE(h.rows, 16);
        QCOMPARE(h.cols, 16);
        for (int l = 0; l < h.layers; ++l)
            for (int r = 0; r < 16; ++r)
                for (int c = 0; c < 16; ++c) {
                    if (canvas->strength().at(r, c) > 0) QVERIFY2(h.at(l, r, c) > 0, "a painted cell was not edited");
                    else QCOMPARE(h.at(l, r, c), 0.0f);
                }
        QCOMPARE(w_->errorCount(), 0);
    }

    // A session whose mask was painted on 24×24, opened with the 16×16 model: resampled, said so,
    // autosaved as 16×16, and it runs.
    void sessionFromAnotherGridIsResampled() {
        const QString saved = tmp_.filePath(QStringLiteral("paligemma.kvsession"));
        QVERIFY(w_->saveSessionTo(saved));
        QFile in(saved);
        QVERIFY(in.open(QIODevice::ReadOnly));
        QJsonObject root = QJsonDocument::fromJson(in.readAll()).object();
        QJsonArray values;
        for (float v : block(24, 24, 6, 11, 12, 17).values) values.append(double(v));
        root[QStringLiteral("strength")] = QJsonObject{{QStringLiteral("rows"), 24}, {QStringLiteral("cols"), 24}, {QStringLiteral("values"), values}};
        const QString painted24 = tmp_.filePath(QStringLiteral("painted-on-24.kvsession"));
        QFile out(painted24);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QJsonDocument(root).toJson());
        out.close();

        const int errors = w_->errorCount();
        QSignalSpy shown(w_.get(), &MainWindow::imageShown);
        QSignalSpy ready(w_.get(), &MainWindow::modelReady);
        QVERIFY(w_->openSessionFrom(painted24));
        QVERIFY(shown.wait(kLoadTimeoutMs));
        QCOMPARE(ready.count(), 0);   // the session's model is the one loaded
        QCOMPARE(w_->canvas()->strength(), block(16, 16, 4, 7, 8, 11));
        QVERIFY2(w_->maskNoteText().contains(QStringLiteral("24×24")), qPrintable(w_->maskNoteText()));
        QVERIFY(closeMessageBoxes().isEmpty());
        QCOMPARE(w_->errorCount(), errors);

        SessionDocument recovered;
        QString error;
        QVERIFY2(SessionFile::load(w_->recoveryPath(), &recovered, &error), qPrintable(error));
        QCOMPARE(recovered.strength, w_->canvas()->strength());

        RunFinished f;
        QVERIFY(runAndWait(2, &f));
        QCOMPARE(w_->lastRunStarted().appliedStrength, w_->canvas()->strength());
        QCOMPARE(w_->errorCount(), errors);
    }

    // 64×64: small cells thin the grid lines; a 1-cell brush paints exactly the cell under the
    // pointer, at its centre and off it; undo and redo restore each map.
    void canvas64PaintsExactCell() {
        QUndoStack undo;
        auto canvas = showCanvas(&undo, 64, 64, QSize(420, 420));
        QVERIFY(QTest::qWaitForWindowExposed(canvas.get()));
        QTRY_COMPARE(canvas->size(), QSize(420, 420));
        QCOMPARE(canvas->cellSize().width(), (420 - 28) / 64.0);   // 6.1 px: under kMinLinePitch
        QCOMPARE(canvas->gridLineStep(), 2);                        // every 2nd line, 12 px apart

        canvas->setBrushSize(1);
        const QVector<QPoint> cells{{0, 0}, {31, 17}, {63, 63}, {10, 50}, {33, 32}};   // (row, col)
        const int n = int(cells.size());
        StrengthGrid expected(64, 64);
        QVector<StrengthGrid> history{expected};
        for (int i = 0; i < n; ++i) {
            const int r = cells[i].x(), c = cells[i].y();
            // The centre, then (for odd i) a point 0.3 of a cell off it towards the lower right.
            const QPointF at = canvas->cellCenter(r, c) + (i % 2 ? 0.3 : 0.0) * QPointF(canvas->cellSize().width(), canvas->cellSize().height());
            dabAt(canvas.get(), at);
            expected.at(r, c) = 1.0f;
            QCOMPARE(canvas->strength(), expected);
            history.push_back(expected);
        }
        QCOMPARE(undo.count(), n);
        for (int i = n - 1; i >= 0; --i) {
            undo.undo();
            QCOMPARE(canvas->strength(), history[i]);
        }
        for (int i = 1; i <= n; ++i) {
            undo.redo();
            QCOMPARE(canvas->strength(), history[i]);
        }

        // The same 392 px image: 32×32 cells (12 px) show every line, 128×128 (3 px) every 4th,
        // 1000×1000 (0.4 px) none.
        canvas->setGridSize(32, 32);
        QCOMPARE(canvas->gridLineStep(), 1);
        canvas->setGridSize(128, 128);
        QCOMPARE(canvas->gridLineStep(), 4);
        canvas->clearAll();
        canvas->setGridSize(1000, 1000);
        QCOMPARE(canvas->gridLineStep(), 0);
    }

    // A non-square 12×20 grid over a 280×168 image: square cells, the right cell under the pointer.
    void canvas12x20PaintsRightCell() {
        QUndoStack undo;
        auto canvas = showCanvas(&undo, 12, 20, QSize(600, 400));   // its height stays what the image needs
        QVERIFY(QTest::qWaitForWindowExposed(canvas.get()));
        QTRY_COMPARE(canvas->width(), 600);
        QVERIFY(std::abs(canvas->cellSize().width() - canvas->cellSize().height()) < 1e-6);
        QCOMPARE(canvas->gridLineStep(), 1);
        canvas->setBrushSize(1);
        StrengthGrid expected(12, 20);
        for (const QPoint& rc : {QPoint(7, 15), QPoint(11, 19), QPoint(0, 19), QPoint(11, 0)}) {
            dabAt(canvas.get(), canvas->cellCenter(rc.x(), rc.y()));
            expected.at(rc.x(), rc.y()) = 1.0f;
            QCOMPARE(canvas->strength(), expected);
        }
        canvas->setTool(PatchCanvas::Tool::Rectangle);
        stroke(canvas.get(), {{10, 2}, {13, 4}});   // rows 2..4, columns 10..13
        for (int r = 2; r <= 4; ++r)
            for (int c = 10; c <= 13; ++c) expected.at(r, c) = 1.0f;
        QCOMPARE(canvas->strength(), expected);
        QCOMPARE(canvas->strength().paintedCells(), 4 + 12);
        undo.undo();
        QCOMPARE(canvas->strength().paintedCells(), 4);

        // A grid change carries the map over: 12×20 -> 24×40 repeats each cell 2×2 times.
        QSignalSpy resampled(canvas.get(), &PatchCanvas::mapResampled);
        canvas->setGridSize(24, 40);
        QCOMPARE(resampled.count(), 1);
        QCOMPARE(canvas->strength().paintedCells(), 16);
        QCOMPARE(canvas->strength().at(15, 31), 1.0f);   // from (7, 15)
        QCOMPARE(undo.count(), 0);                       // the old maps have the old size
    }

    // The heatmap panel draws any grid: the large map spans it with sensible ticks, and a click
    // on a cell of a 64×64 map names that cell.
    void heatmapPanelAnyGrid() {
        HeatmapPanel panel;
        panel.resize(1000, 420);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        auto showGrid = [&](int rows, int cols) {
            panel.setModel(2, 1, rows, cols);
            HeatmapData d;
            d.runId = 1;
            d.metric = Metric::KeyNorm;
            d.layers = 2;
            d.rows = rows;
            d.cols = cols;
            for (int i = 0; i < 2 * rows * cols; ++i) d.values.push_back(float(i % 97));
            QSignalSpy updated(&panel, &HeatmapPanel::updated);
            panel.setData(d);
            return updated.wait(5000);
        };
        auto tickStep = [&](QCPAxis* a) { return qSharedPointerCast<QCPAxisTickerFixed>(a->ticker())->tickStep(); };
        QCustomPlot* detail = panel.detailPlot();

        QVERIFY(showGrid(12, 20));
        QCOMPARE(panel.data().rows, 12);
        QCOMPARE(panel.data().cols, 20);
        QCOMPARE(detail->xAxis->range(), QCPRange(-0.5, 19.5));
        QCOMPARE(detail->yAxis->range(), QCPRange(-0.5, 11.5));
        QCOMPARE(tickStep(detail->xAxis), 4.0);

        QVERIFY(showGrid(64, 64));
        QCOMPARE(detail->xAxis->range(), QCPRange(-0.5, 63.5));
        QCOMPARE(tickStep(detail->xAxis), 8.0);
        detail->replot();
        QTest::qWait(100);   // the layout pads the map to the grid's shape and replots once more
        QSignalSpy clicked(&panel, &HeatmapPanel::cellClicked);
        const QPoint at(int(detail->xAxis->coordToPixel(50)), int(detail->yAxis->coordToPixel(40)));
        QTest::mouseClick(detail, Qt::LeftButton, Qt::NoModifier, at);
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked.at(0).at(0).toInt(), 40);
        QCOMPARE(clicked.at(0).at(1).toInt(), 50);
    }

    void cleanupTestCase() {
        closeMessageBoxes();
        w_.reset();
    }
};

QTEST_MAIN(TestStudioPaliGemma)
#include "test_studio_paligemma.moc"
