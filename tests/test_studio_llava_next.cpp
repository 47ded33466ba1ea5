// The studio on LLaVA-NeXT, driven as a person would (offscreen, the real tiny-llava-next, no
// mocks): the 500 × 300 gradient opens on its crops' 24 × 40 grid, the status bar names both
// views; Run's unsteered answer is the reference's 20 greedy ids; vectors toward a second image
// are computed in the Steering panel; a rectangle painted on the canvas is what the run applies,
// and the edit's heatmaps (‖ΔV‖) are non-zero exactly where the paint reaches in each view: the
// painted crop cells in the crops' map, and the base cells those pixels cover in the base view's.
//
// torch (through the core) before any Qt header.
#include "TestSupport.h"

#include "StudioTestSupport.h"
#include "studio/StudioStatusBar.h"
#include "widgets/HeatmapPanel.h"
#include "widgets/StreamView.h"

#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>
#include <QTemporaryDir>

using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;

namespace {

QJsonObject gradientCase() {
    QFile f(QString::fromStdString(referenceDir() + "/expected-llava-next/summary.json"));
    if (!f.open(QIODevice::ReadOnly)) return {};
    for (const QJsonValue& c : QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("cases")).toArray())
        if (c.toObject().value(QStringLiteral("name")).toString() == QStringLiteral("gradient")) return c.toObject();
    return {};
}

// The cells of a map above zero, as (row, col).
QSet<QPair<int, int>> hotCells(const HeatmapData& h, int layer) {
    QSet<QPair<int, int>> out;
    for (int r = 0; r < h.rows; ++r)
        for (int c = 0; c < h.cols; ++c)
            if (h.at(layer, r, c) > 1e-6f) out.insert({r, c});
    return out;
}

QSet<QPair<int, int>> block(int r0, int r1, int c0, int c1) {
    QSet<QPair<int, int>> out;
    for (int r = r0; r <= r1; ++r)
        for (int c = c0; c <= c1; ++c) out.insert({r, c});
    return out;
}

} // namespace

class TestStudioLlavaNext : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    std::unique_ptr<MainWindow> w_;

    // Asks for `view`'s ‖ΔV‖ maps and waits for them.
    bool deltaMapsOf(int view) {
        HeatmapSettings hs = w_->heatmapPanel()->settings();
        hs.metric = Metric::ValueDelta;
        hs.view = view;
        w_->heatmapPanel()->setSettings(hs);
        return QTest::qWaitFor([&] {
            const HeatmapData& d = w_->heatmapPanel()->data();
            return d.valid() && d.metric == Metric::ValueDelta && d.view == view;
        }, 20000);
    }

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        w_ = std::make_unique<MainWindow>(studioOptions(QString::fromStdString(referenceDir() + "/tiny-llava-next"),
                                                        tmp_.filePath(QStringLiteral("recovery.kvsession"))));
        w_->resize(1400, 900);
        w_->show();
        QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
        QSignalSpy ready(w_.get(), &MainWindow::modelReady);
        QVERIFY(ready.wait(kLoadTimeoutMs));
        QCOMPARE(w_->modelInfo().family, QStringLiteral("LLaVA-NeXT"));
        w_->promptPanel()->setLive(false);
        GenerationSettings g = w_->promptPanel()->generation();
        g.stopAtEos = false;
        w_->promptPanel()->setGeneration(g);
    }

    void opensThePictureOnItsViews() {
        const QJsonObject c = gradientCase();
        QVERIFY2(!c.isEmpty(), "expected-llava-next/summary.json has no gradient case");
        QSignalSpy shown(w_.get(), &MainWindow::imageShown);
        w_->openImageFile(referenceImage(QStringLiteral("gradient_500x300.png")));
        QVERIFY(shown.wait(kLoadTimeoutMs));
        QCOMPARE(w_->canvas()->gridRows(), 24);
        QCOMPARE(w_->canvas()->gridCols(), 40);
        QCOMPARE(w_->canvas()->image().size(), QSize(560, 336));   // the picture as the crops see it
        const QString status = w_->studioStatus()->modelText();
        QVERIFY2(status.contains(QStringLiteral("base 24×24 + crops 24×40")), qPrintable(status));
        int viewItems = 0;
        for (QComboBox* box : w_->heatmapPanel()->findChildren<QComboBox*>())
            if (box->findData(0) >= 0 && box->findData(-1) >= 0 && box->isVisibleTo(w_->heatmapPanel())) viewItems = box->count();
        QCOMPARE(viewItems, 2);

        w_->promptPanel()->setPrompt(c.value(QStringLiteral("user_text")).toString());
        QVERIFY2(runAndWait(w_.get(), 20), qPrintable(w_->lastErrorText()));
        QVector<qint64> expected, got;
        for (const QJsonValue& id : c.value(QStringLiteral("greedy_ids")).toArray()) expected << id.toInteger();
        for (const StreamToken& t : w_->streamView()->tokens(false)) got << t.id;
        QCOMPARE(got, expected);
    }

    void paintsRunsAndShowsBothViews() {
        // Vectors toward the inverted picture, computed in the Steering panel.
        QImage inverted(referenceImage(QStringLiteral("gradient_500x300.png")));
        inverted.invertPixels();
        const QString target = tmp_.filePath(QStringLiteral("inverted.png"));
        QVERIFY(inverted.save(target));
        QFile file(target);
        QVERIFY(file.open(QIODevice::ReadOnly));
        SteeringPanel* panel = w_->steeringPanel();
        PlanSettings p;
        p.op = SteeringOperator::Add;
        p.cv = 8.0;
        p.ck = 0.0;
        panel->setPlanSettings(p);
        panel->setSource(VectorSource::SecondImage);
        panel->setTargetImage(target, file.readAll());
        QVERIFY2(computeVectors(w_.get()), qPrintable(w_->lastErrorText()));

        // Crop cells rows 4-11, columns 8-15: picture x 100..200, y 50..150.
        PatchCanvas* canvas = w_->canvas();
        canvas->clearAll();
        canvas->setBrushStrength(1.0);
        canvas->setTool(PatchCanvas::Tool::Rectangle);
        stroke(canvas, {{8, 4}, {15, 11}});
        canvas->setTool(PatchCanvas::Tool::Brush);
        QCOMPARE(canvas->strength().paintedCells(), 64);
        QVERIFY2(runAndWait(w_.get(), 6), qPrintable(w_->lastErrorText()));
        QCOMPARE(w_->lastRunStarted().appliedStrength, canvas->strength());

        QVERIFY(deltaMapsOf(-1));
        const HeatmapData crops = w_->heatmapPanel()->data();
        QCOMPARE(crops.rows, 24);
        QCOMPARE(crops.cols, 40);
        QCOMPARE(crops.viewName, QStringLiteral("crops"));
        QCOMPARE(hotCells(crops, 1), block(4, 11, 8, 15));

        QVERIFY(deltaMapsOf(0));
        const HeatmapData base = w_->heatmapPanel()->data();
        QCOMPARE(base.rows, 24);
        QCOMPARE(base.cols, 24);
        QCOMPARE(base.viewName, QStringLiteral("base"));
        QCOMPARE(hotCells(base, 1), block(4, 11, 4, 9));   // base cells 20.8 px wide: x 83.3..208.3
        QCOMPARE(w_->errorCount(), 0);
    }

    // Over to Qwen2-VL and back with the painted mask: each switch resamples it once, onto the grid
    // the picture has under the model now (24×40 crops → 10×18 → 24×40), never through a model's
    // square default (24×24 here, which named a grid the picture does not have); no dialog.
    void oneResampleEachWayOnAModelSwitch() {
        QSignalSpy resampled(w_->canvas(), &PatchCanvas::mapResampled);
        QSignalSpy ready(w_.get(), &MainWindow::modelReady);
        w_->openModel(QString::fromStdString(referenceQwen2VlDir()));
        QVERIFY(ready.wait(kLoadTimeoutMs));
        QVERIFY(QTest::qWaitFor([&] { return w_->canvas()->gridCols() == 18; }, kLoadTimeoutMs));
        w_->openModel(QString::fromStdString(referenceDir() + "/tiny-llava-next"));
        QVERIFY(ready.wait(kLoadTimeoutMs));
        QVERIFY(QTest::qWaitFor([&] { return w_->canvas()->gridCols() == 40; }, kLoadTimeoutMs));
        QTest::qWait(100);
        QCOMPARE(resampled.count(), 2);
        QCOMPARE(resampled.at(0), (QList<QVariant>{24, 40, 10, 18}));
        QCOMPARE(resampled.at(1), (QList<QVariant>{10, 18, 24, 40}));
        QVERIFY(closeMessageBoxes().isEmpty());
        QCOMPARE(w_->errorCount(), 0);
    }
};

QTEST_MAIN(TestStudioLlavaNext)
#include "test_studio_llava_next.moc"
