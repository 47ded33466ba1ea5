// The rough edges a new user met in the studio's first ten minutes, each driven as that person did
// (offscreen, real models and files, no mocks):
//   - after an unclean exit, the recovery dialog says what the command line does next, and
//     --run runs once it is answered, Restore or Discard (it was dropped: the model arrived while
//     the dialog was open, before the image had been asked for);
//   - the status bar and the empty heatmaps name the image's own grid (tiny-qwen2vl, 500×300:
//     10×18), not the family's default 14×14;
//   - three layers on a 10×18 grid are laid out with no empty slot;
//   - the painted overlay is one even colour: no darker line where cells meet;
//   - the shipped vector file in use shows as "From a vector file", not as a second-image recipe
//     waiting for its target;
//   - vectors computed in the studio get a strength proposed for them, which is said, and whose
//     steered answer changes without degenerating;
//   - the Evaluate chart's metric names never run into each other in a narrow dock;
//   - quitting right after the demo scene opened asks nothing; after a stroke it asks.
#include "TestSupport.h"

#include "StudioTestSupport.h"
#include "studio/AtlasController.h"
#include "studio/StudioStatusBar.h"
#include "widgets/EvalPanel.h"
#include "widgets/HeatmapPanel.h"
#include "widgets/HeatmapPlotStyle.h"
#include "widgets/StreamView.h"

#include <qcustomplot.h>

#include <QBuffer>
#include <QElapsedTimer>
#include <QFile>
#include <QMenu>
#include <QMenuBar>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>

#include <cmath>
#include <functional>

using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;

namespace {

const QString kDemoImages = QStringLiteral(KVSTEER_STUDIO_DEMO_IMAGES_DIR);
QString demoModelDir() { return QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR); }

QByteArray fileBytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Watches for the next message box, records its text and informative text, and presses the button
// whose text is `press`, at once or after `waitMs` (as a person reading it would). Polls: the
// studio's boxes run their own event loops.
struct BoxAnswerer {
    QString seen;
    bool answered = false;
    QTimer timer;
    QElapsedTimer shownFor;
    explicit BoxAnswerer(const QString& press, int waitMs = 0) {
        timer.setInterval(20);
        QObject::connect(&timer, &QTimer::timeout, [this, press, waitMs] {
            for (QWidget* w : QApplication::topLevelWidgets()) {
                auto* box = qobject_cast<QMessageBox*>(w);
                if (!box || !box->isVisible()) continue;
                if (!shownFor.isValid()) shownFor.start();
                if (shownFor.elapsed() < waitMs) return;
                seen = box->text() + QLatin1Char('\n') + box->informativeText();
                for (QAbstractButton* b : box->buttons())
                    if (b->text().remove(QLatin1Char('&')) == press) {
                        answered = true;
                        timer.stop();
                        b->click();
                        return;
                    }
            }
        });
        timer.start();
    }
};

} // namespace

class TestStudioNewcomer : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    // A recovery file as an unclean exit leaves it: a studio autosaves the demo's blue circle and a
    // question, and is gone without closing (its destructor, unlike closing, keeps the file).
    QString leaveRecoveryFile(const QString& name) {
        const QString path = tmp_.filePath(name);
        auto w = std::make_unique<MainWindow>(studioOptions(demoModelDir(), path));
        QSignalSpy loaded(w.get(), &MainWindow::modelReady);
        QSignalSpy shown(w.get(), &MainWindow::imageShown);
        w->show();
        if (!loaded.wait(kLoadTimeoutMs)) return {};
        w->openImageFile(kDemoImages + QStringLiteral("/blue_circle.png"));
        if (!shown.wait(kLoadTimeoutMs)) return {};
        QSignalSpy autosaved(w.get(), &MainWindow::autosaved);
        w->promptPanel()->setPrompt(QStringLiteral("What shape is it?"));
        stroke(w->canvas(), {QPoint(1, 1), QPoint(2, 1)});
        if (!autosaved.wait(5000)) return {};
        return QFileInfo::exists(path) ? path : QString();
    }

    // Answered at once (the model still loading) or after two seconds (the model loaded meanwhile).
    void runAfterRecovery(const QString& answer, int answerAfterMs) {
        const QString name = answer + QString::number(answerAfterMs);
        const QString recovery = leaveRecoveryFile(name + QStringLiteral(".kvsession"));
        QVERIFY(!recovery.isEmpty());
        StudioOptions o = studioOptions(demoModelDir(), recovery);
        o.offerRecovery = true;
        o.imagePath = kDemoImages + QStringLiteral("/red_circle.png");
        o.prompt = QStringLiteral("What color is the circle?");
        o.vectorsPath = QStringLiteral(KVSTEER_STUDIO_DEMO_VECTORS);
        o.run = true;
        o.readyFile = tmp_.filePath(name + QStringLiteral(".ready"));
        BoxAnswerer box(answer, answerAfterMs);
        MainWindow w(o);
        QSignalSpy done(&w, &MainWindow::runDone);
        w.show();
        QTRY_VERIFY_WITH_TIMEOUT(box.answered, kLoadTimeoutMs);
        QVERIFY2(box.seen.contains(QStringLiteral("red_circle.png")) && box.seen.contains(QStringLiteral("--run")), qPrintable(box.seen));
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(o.readyFile), kRunTimeoutMs);
        QCOMPARE(done.size(), 1);
        QCOMPARE(w.promptPanel()->prompt(), o.prompt);   // the command line's, over the recovered one
        QVERIFY(!w.streamView()->text(false).isEmpty());
    }

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        QVERIFY2(QFileInfo::exists(demoModelDir() + QStringLiteral("/config.json")), "the demo model is built with the project");
    }

    void runFollowsARestoredRecovery() { runAfterRecovery(QStringLiteral("Restore"), 0); }
    void runFollowsARecoveryRestoredLate() { runAfterRecovery(QStringLiteral("Restore"), 2000); }
    void runFollowsADiscardedRecovery() { runAfterRecovery(QStringLiteral("Discard"), 0); }
    void runFollowsARecoveryDiscardedLate() { runAfterRecovery(QStringLiteral("Discard"), 2000); }

    void statusBarNamesTheImagesGrid() {
        MainWindow w(studioOptions(QString::fromStdString(referenceQwen2VlDir()), tmp_.filePath(QStringLiteral("qwen.kvsession"))));
        QSignalSpy loaded(&w, &MainWindow::modelReady);
        QSignalSpy shown(&w, &MainWindow::imageShown);
        w.resize(1366, 768);
        w.show();
        QVERIFY(loaded.wait(kLoadTimeoutMs));
        QVERIFY2(w.studioStatus()->modelText().contains(QStringLiteral("14×14 patches")), qPrintable(w.studioStatus()->modelText()));
        w.openImageFile(referenceImage(QStringLiteral("gradient_500x300.png")));
        QTRY_VERIFY_WITH_TIMEOUT(!shown.isEmpty(), kLoadTimeoutMs);
        QVERIFY2(w.studioStatus()->modelText().contains(QStringLiteral("10×18 patches")), qPrintable(w.studioStatus()->modelText()));
        QCOMPARE(w.heatmapPanel()->gridRows(), 10);   // the empty maps' axes, before any run
        QCOMPARE(w.heatmapPanel()->gridCols(), 18);
        w.promptPanel()->setPrompt(QStringLiteral("Describe the image."));
        QVERIFY(runAndWait(&w, 3));
        QVERIFY2(w.studioStatus()->modelText().contains(QStringLiteral("10×18 patches")), qPrintable(w.studioStatus()->modelText()));
        // Three layers of a wide grid: no empty slot in the small multiples.
        QTRY_VERIFY(w.heatmapPanel()->columns() > 0);
        const int columns = w.heatmapPanel()->columns(), layers = w.modelInfo().layers;
        QVERIFY2(layers % columns == 0, qPrintable(QStringLiteral("%1 layers in %2 columns").arg(layers).arg(columns)));
    }

    void heatmapColumnsFollowTheGridsShape() {
        // 3 layers of 10×18 in a 500×600 area: one column (cells of 18.4 px); squares would be 2×2.
        QCOMPARE(bestColumns(3, 500, 600, 16, 10, 18), 1);
        QCOMPARE(bestColumns(3, 1200, 300, 16, 10, 18), 3);
        QCOMPARE(bestColumns(4, 500, 500, 16, 24, 24), 2);
        // A near-tie goes to the layout without an empty slot: 3 square maps in a wide, short area.
        const int cols = bestColumns(3, 700, 420, 16, 24, 24);
        QVERIFY2(cols == 3 || cols == 1, qPrintable(QString::number(cols)));
    }

    void paintedOverlayIsOneColour() {
        MainWindow w(studioOptions(demoModelDir(), tmp_.filePath(QStringLiteral("paint.kvsession"))));
        QSignalSpy loaded(&w, &MainWindow::modelReady);
        QSignalSpy shown(&w, &MainWindow::imageShown);
        w.resize(1366, 768);
        w.show();
        QVERIFY(loaded.wait(kLoadTimeoutMs));
        QImage grey(336, 336, QImage::Format_RGB32);
        grey.fill(QColor(128, 128, 128));
        QByteArray png;
        QBuffer buffer(&png);
        QVERIFY(buffer.open(QIODevice::WriteOnly) && grey.save(&buffer, "PNG"));
        w.openImageData(png, QStringLiteral("grey.png"));
        QTRY_VERIFY_WITH_TIMEOUT(!shown.isEmpty(), kLoadTimeoutMs);
        PatchCanvas* canvas = w.canvas();
        canvas->setGridVisible(false);
        canvas->fillAll();
        // Sizes at which a cell is a fractional number of pixels wide.
        for (int width : {437, 500, 613}) {
            canvas->resize(width, width);
            QApplication::processEvents();
            const QImage shot = canvas->grab().toImage();
            const QRect inner = canvas->imageRect().toAlignedRect().adjusted(4, 4, -4, -4);   // inside the outline
            const QRgb first = shot.pixel(inner.topLeft());
            int off = 0;
            for (int y = inner.top(); y <= inner.bottom(); ++y)
                for (int x = inner.left(); x <= inner.right(); ++x) off += shot.pixel(x, y) != first;
            QVERIFY2(off == 0, qPrintable(QStringLiteral("%1 of the painted pixels differ at a %2 px canvas").arg(off).arg(width)));
        }
    }

    void shippedVectorsShowAsAFile() {
        StudioOptions o = studioOptions(demoModelDir(), tmp_.filePath(QStringLiteral("scene.kvsession")));
        MainWindow w(o);
        QSignalSpy loaded(&w, &MainWindow::modelReady);
        QSignalSpy vectors(&w, &MainWindow::vectorsChanged);
        w.show();
        QVERIFY(loaded.wait(kLoadTimeoutMs));
        w.openDemoScene();
        QTRY_VERIFY_WITH_TIMEOUT(!vectors.isEmpty() && w.imageReady(), kLoadTimeoutMs);
        QCOMPARE(w.steeringPanel()->source(), VectorSource::File);
    }

    void computedVectorsGetAProposedStrength() {
        MainWindow w(studioOptions(demoModelDir(), tmp_.filePath(QStringLiteral("propose.kvsession"))));
        QSignalSpy loaded(&w, &MainWindow::modelReady);
        QSignalSpy vectors(&w, &MainWindow::vectorsChanged);
        w.resize(1366, 768);
        w.show();
        QVERIFY(loaded.wait(kLoadTimeoutMs));
        w.openDemoScene();
        QTRY_VERIFY_WITH_TIMEOUT(!vectors.isEmpty() && w.imageReady(), kLoadTimeoutMs);
        QCOMPARE(w.steeringPanel()->planSettings().cv, 16.0);   // the shipped file's strength
        // Toward the blue circle, computed here: their own scale.
        SteeringPanel* steering = w.steeringPanel();
        steering->setSource(VectorSource::SecondImage);
        steering->setTargetImage(kDemoImages + QStringLiteral("/blue_circle.png"), fileBytes(kDemoImages + QStringLiteral("/blue_circle.png")));
        QSignalSpy proposed(w.atlas(), &AtlasController::proposed);
        QVERIFY(computeVectors(&w));
        QVERIFY(proposed.wait(kRunTimeoutMs));
        const QString how = proposed.front().front().toString();
        QCOMPARE(steering->proposalText(), how);
        QVERIFY2(how.contains(QStringLiteral("c_v")) && how.contains(QStringLiteral("proposed")), qPrintable(how));
        const double cv = steering->planSettings().cv;
        QVERIFY2(how.contains(QString::number(cv, 'g', 4)), qPrintable(how));
        RunFinished f;
        QVERIFY(runAndWait(&w, 6, &f));
        const QString steered = w.streamView()->text(true).trimmed(), unsteered = w.streamView()->text(false).trimmed();
        QVERIFY2(steered != unsteered, qPrintable(steered));
        QVERIFY2(!steered.contains(QStringLiteral("blue blue")), qPrintable(QStringLiteral("c_v %1: %2").arg(cv).arg(steered)));
    }

    void evalChartNamesNeverOverlap() {
        // POPE's five names under their bars, in a dock's width and in a wide window: level names
        // each fit their bar pair's width; slanted ones stand apart by more than a line's height.
        EvalFinished f;
        f.metricNames = {QStringLiteral("accuracy"), QStringLiteral("precision"), QStringLiteral("recall"), QStringLiteral("f1"),
                         QStringLiteral("yes_ratio")};
        f.unsteered = f.steered = f.difference = f.low = f.high = QVector<double>(5, 0.5);
        EvalPanel panel;
        bool slanted = false;
        for (int width : {340, 1400}) {
            panel.resize(width, 700);
            panel.show();
            panel.showSummary(f);
            QTest::qWait(50);   // its relayout with the names slanted is queued
            QCustomPlot* plot = panel.plot();
            const QFontMetrics fm(plot->xAxis->tickLabelFont());
            int widest = 0;
            for (const QString& n : f.metricNames) widest = std::max(widest, fm.horizontalAdvance(n));
            const double slot = plot->axisRect()->width() / (f.metricNames.size() + 0.2);
            const double rotation = plot->xAxis->tickLabelRotation();
            if (rotation == 0) QVERIFY2(widest < slot, qPrintable(QStringLiteral("at %1 px: %2 px names in %3 px slots").arg(width).arg(widest).arg(slot)));
            else QVERIFY(slot * std::sin(std::abs(rotation) * M_PI / 180) > fm.height());
            slanted = slanted || rotation != 0;
        }
        QVERIFY(slanted);   // at 340 px they would have overlapped level
    }

    void quittingTheDemoSceneAsksNothing() {
        StudioOptions o = studioOptions(demoModelDir(), tmp_.filePath(QStringLiteral("quit.kvsession")));
        o.demoScene = true;   // a first start: the studio opens its demo scene
        o.confirmClose = true;
        auto w = std::make_unique<MainWindow>(o);
        QSignalSpy vectors(w.get(), &MainWindow::vectorsChanged);
        w->show();
        QTRY_VERIFY_WITH_TIMEOUT(!vectors.isEmpty() && w->imageReady() && !w->canvas()->strength().isZero(), kLoadTimeoutMs);   // the scene's mask too
        QTest::qWait(100);
        {
            BoxAnswerer box(QStringLiteral("Cancel"));
            QVERIFY(w->close());
            QTest::qWait(100);
            QVERIFY2(box.seen.isEmpty(), qPrintable(box.seen));
        }
        // A stroke is work: now closing asks, and Cancel keeps the window.
        w->show();
        stroke(w->canvas(), {QPoint(2, 2), QPoint(3, 2)});
        BoxAnswerer box(QStringLiteral("Cancel"));
        QVERIFY(!w->close());
        QVERIFY2(box.seen.contains(QStringLiteral("Save the current session")), qPrintable(box.seen));
        // Undone, the work is as it was opened: nothing to ask again.
        w->undoStack()->undo();
        BoxAnswerer none(QStringLiteral("Cancel"));
        QVERIFY(w->close());
        QVERIFY2(none.seen.isEmpty(), qPrintable(none.seen));
    }

    // Alt+letter reaches one item per menu: no two items of a menu share a mnemonic (the Edit menu
    // had P for both "Copy as Python" and "Preferences…").
    void menuMnemonicsAreUnique() {
        MainWindow w(studioOptions(demoModelDir(), tmp_.filePath(QStringLiteral("menus.kvsession"))));
        for (QAction* top : w.menuBar()->actions()) {
            QMenu* menu = top->menu();
            if (!menu) continue;
            QMap<QChar, QString> taken;
            for (QAction* a : menu->actions()) {
                const QString text = a->text();
                for (int i = text.indexOf(QLatin1Char('&')); i >= 0 && i + 1 < text.size(); i = text.indexOf(QLatin1Char('&'), i + 2)) {
                    if (text[i + 1] == QLatin1Char('&')) continue;   // "&&" is a literal ampersand
                    const QChar key = text[i + 1].toLower();
                    QVERIFY2(!taken.contains(key), qPrintable(QStringLiteral("%1: \"%2\" and \"%3\" share %4").arg(top->text(), taken.value(key), text, key)));
                    taken.insert(key, text);
                    break;
                }
            }
        }
    }

    // `kvsteer-studio --session FILE` opens the file at start, also where a first start would open
    // the demo scene: its map (the scene's plus a stroke) and its name in the title, not the scene.
    void sessionOnTheCommandLineOpensIt() {
        const QString path = tmp_.filePath(QStringLiteral("strokes.kvsession"));
        StrengthGrid saved;
        {
            StudioOptions o = studioOptions(demoModelDir(), tmp_.filePath(QStringLiteral("strokes-recovery.kvsession")));
            o.demoScene = true;
            MainWindow w(o);
            QSignalSpy vectors(&w, &MainWindow::vectorsChanged);
            w.show();
            QTRY_VERIFY_WITH_TIMEOUT(!vectors.isEmpty() && w.imageReady() && !w.canvas()->strength().isZero(), kLoadTimeoutMs);
            const StrengthGrid scene = w.canvas()->strength();
            stroke(w.canvas(), {QPoint(1, 1), QPoint(2, 1), QPoint(3, 1)});
            QVERIFY(w.canvas()->strength() != scene);
            saved = w.canvas()->strength();
            QVERIFY(w.saveSessionTo(path));
        }
        StudioOptions o = studioOptions(demoModelDir(), tmp_.filePath(QStringLiteral("strokes-recovery2.kvsession")));
        o.demoScene = true;
        o.sessionPath = path;
        MainWindow w(o);
        QSignalSpy vectors(&w, &MainWindow::vectorsChanged);
        w.show();
        QTRY_VERIFY_WITH_TIMEOUT(!vectors.isEmpty() && w.imageReady(), kLoadTimeoutMs);
        QTest::qWait(500);   // anything else the start-up would do has arrived by now
        QCOMPARE(w.canvas()->strength().paintedCells(), saved.paintedCells());
        QVERIFY(w.canvas()->strength() == saved);
        QVERIFY2(w.windowTitle().contains(QStringLiteral("strokes.kvsession")) && !w.isWindowModified(), qPrintable(w.windowTitle()));
        QCOMPARE(w.errorCount(), 0);
    }

    // Work recovered after an unclean exit belongs to the session file it was opened from: the
    // title names that file (modified), and Save proposes it, not the image's name.
    void recoveryKeepsTheSessionsFile() {
        const QString recovery = tmp_.filePath(QStringLiteral("kept-recovery.kvsession"));
        const QString session = tmp_.filePath(QStringLiteral("my-work.kvsession"));
        {
            auto w = std::make_unique<MainWindow>(studioOptions(demoModelDir(), recovery));
            QSignalSpy loaded(w.get(), &MainWindow::modelReady);
            QSignalSpy shown(w.get(), &MainWindow::imageShown);
            w->show();
            QVERIFY(loaded.wait(kLoadTimeoutMs));
            w->openImageFile(kDemoImages + QStringLiteral("/blue_circle.png"));
            QVERIFY(shown.wait(kLoadTimeoutMs));
            QVERIFY(w->saveSessionTo(session));
            QSignalSpy autosaved(w.get(), &MainWindow::autosaved);
            stroke(w->canvas(), {QPoint(1, 1), QPoint(2, 1)});
            QVERIFY(autosaved.wait(5000));
        }   // gone without closing: the recovery file stays
        StudioOptions o = studioOptions(demoModelDir(), recovery);
        o.offerRecovery = true;
        BoxAnswerer box(QStringLiteral("Restore"));
        MainWindow w(o);
        QSignalSpy shown(&w, &MainWindow::imageShown);
        w.show();
        QTRY_VERIFY_WITH_TIMEOUT(box.answered && !shown.isEmpty(), kLoadTimeoutMs);
        QCOMPARE(QFileInfo(w.suggestedSessionPath()).absoluteFilePath(), QFileInfo(session).absoluteFilePath());
        QVERIFY2(w.windowTitle().startsWith(QStringLiteral("my-work.kvsession")) && w.isWindowModified(), qPrintable(w.windowTitle()));
    }
};

QTEST_MAIN(TestStudioNewcomer)
#include "test_studio_newcomer.moc"
