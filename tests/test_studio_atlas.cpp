// The studio's atlas, first run and Python hand-off, driven offscreen on the bundled demo model:
// a first run (no session, no image) opens the demo scene and Run yields red vs blue; the atlas
// fills a 4 × 3 grid (c_v 8, 16, 32, 64 × all / middle / 2-3), c_v 16 on all layers reads "blue"
// and is marked different, every cell at c_v >= 32 is degenerate; clicking a cell sets the
// Steering panel; a stroke marks the atlas out of date; Stop stops it (while queued and mid-run);
// File → Open Demo Scene brings the scene back; Copy as Python names the vector file, c_v 16,
// the mask, the image's absolute path and the Max tokens (the script itself: test_python_snippet).
//
// torch (through the core) before any Qt header.
#include "TestSupport.h"

#include "studio/AtlasController.h"
#include "studio/MainWindow.h"
#include "studio/PythonHandOff.h"
#include "studio/PythonSnippet.h"
#include "studio/StudioActions.h"
#include "widgets/AtlasPanel.h"
#include "widgets/AtlasView.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/SteeringPanel.h"
#include "worker/Worker.h"

#include "StudioTestSupport.h"

#include <QAction>
#include <QMap>
#include <QClipboard>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>


using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;


class TestStudioAtlas : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::unique_ptr<MainWindow> w_;

    // Clicks Run Atlas and waits for that atlas to finish.
    bool runAtlas(AtlasFinished* out) {
        QSignalSpy done(w_->atlas(), &AtlasController::finished);
        QPushButton* run = w_->atlasPanel()->runButton();
        if (!run->isEnabled()) return false;
        QTest::mouseClick(run, Qt::LeftButton);
        const quint64 id = w_->atlas()->activeId();
        for (int i = 0; i < 10; ++i) {
            if (done.isEmpty() && !done.wait(kRunTimeoutMs)) return false;
            while (!done.isEmpty()) {
                const AtlasFinished f = done.takeFirst().at(0).value<AtlasFinished>();
                if (f.atlasId != id) continue;
                *out = f;
                return true;
            }
        }
        return false;
    }

    void setGrid() {
        w_->atlasPanel()->setStrengths({8, 16, 32, 64});
        w_->atlasPanel()->setLayerRanges({QStringLiteral("all"), QStringLiteral("middle"), QStringLiteral("2-3")});
        w_->atlasPanel()->setMaxNewTokens(8);
    }

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        // A first run: the demo model, no image, no session, nothing to recover.
        StudioOptions o = studioOptions(QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR), tmp_.filePath(QStringLiteral("recovery.kvsession")));
        o.demoScene = true;
        w_ = std::make_unique<MainWindow>(o);
        QSignalSpy vectorsReady(w_.get(), &MainWindow::vectorsChanged);
        QSignalSpy shown(w_.get(), &MainWindow::imageShown);
        w_->resize(1500, 950);
        w_->show();
        QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
        QTRY_VERIFY_WITH_TIMEOUT(!shown.isEmpty(), kLoadTimeoutMs);
        QTRY_VERIFY_WITH_TIMEOUT(!vectorsReady.isEmpty(), kLoadTimeoutMs);
        QTRY_VERIFY_WITH_TIMEOUT(w_->canvas()->strength().paintedCells() == 100, kLoadTimeoutMs);
        w_->promptPanel()->setLive(false);
        QCOMPARE(w_->errorCount(), 0);
    }

    void firstRunOpensTheDemoScene() {
        QCOMPARE(w_->promptPanel()->prompt(), QStringLiteral("What color is the circle?"));
        QVERIFY(w_->promptPanel()->examples().contains(QStringLiteral("What shape is red?")));   // the demo's own questions
        QVERIFY(w_->imageReady());
        QCOMPARE(w_->vectors().recipe, QStringLiteral("image-pair"));
        const PlanSettings p = w_->steeringPanel()->planSettings();
        QVERIFY(p.op == SteeringOperator::Add);
        QCOMPARE(p.cv, 16.0);   // the shipped file's suggestion
        QCOMPARE(p.ck, 0.0);
        const StrengthGrid& s = w_->canvas()->strength();
        QCOMPARE(s.at(6, 9), 1.0f);    // rect:6,9,15,18, the circle
        QCOMPARE(s.at(15, 18), 1.0f);
        QCOMPARE(s.at(5, 9), 0.0f);
        RunFinished f;
        QVERIFY(runAndWait(w_.get(), 8, &f));
        QCOMPARE(f.unsteeredText, QStringLiteral("red"));
        QCOMPARE(f.steeredText, QStringLiteral("blue"));
    }

    void atlasFillsTheGridWithOutcomes() {
        setGrid();
        AtlasFinished f;
        QVERIFY(runAtlas(&f));
        QVERIFY(!f.cancelled);
        QCOMPARE(f.cells, 12);
        AtlasView* view = w_->atlasPanel()->view();
        QCOMPARE(view->rows(), 3);
        QCOMPARE(view->columns(), 4);
        QCOMPARE(view->finishedCells(), 12);
        QCOMPARE(view->info().unsteeredText, QStringLiteral("red"));
        QVERIFY(view->info().setsValues);
        QVERIFY(!view->info().setsKeys);
        const AtlasCellResult& flip = view->cell(1);   // row "all", c_v 16
        QCOMPARE(flip.layers, QStringLiteral("all"));
        QCOMPARE(flip.cv, 16.0);
        QCOMPARE(flip.text, QStringLiteral("blue"));
        QCOMPARE(flip.outcome, AtlasOutcome::Different);
        QCOMPARE(view->cell(0).outcome, AtlasOutcome::Same);   // c_v 8: still "red" on this image
        for (int i = 0; i < 12; ++i)
            if (view->cell(i).cv >= 32) QVERIFY2(view->cell(i).outcome == AtlasOutcome::Degenerate, qPrintable(view->cell(i).text));
        QCOMPARE(view->cell(2).text, QStringLiteral("blue blue blue no"));
        const QString tip = view->toolTipFor(2);
        QVERIFY2(tip.contains(QStringLiteral("blue blue blue no")) && tip.contains(QStringLiteral("a word repeated")), qPrintable(tip));
        QCOMPARE(view->cellRect(1).isEmpty(), false);
        QVERIFY(!view->stale());
        // The panel's plan (c_v 16, every layer) is the selected cell.
        QCOMPARE(view->cell(1).layerIds.size(), 0);
    }

    void clickingACellSetsTheSteeringPanel() {
        AtlasView* view = w_->atlasPanel()->view();
        const AtlasCellResult middle16 = view->cell(1 * 4 + 1);   // row "middle" (layers 1-2), c_v 16
        QCOMPARE(middle16.layerIds, QVector<int>({1, 2}));
        QSignalSpy changed(w_->steeringPanel(), &SteeringPanel::planChanged);
        QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, view->cellRect(middle16.index).center());
        QVERIFY(!changed.isEmpty());
        PlanSettings p = w_->steeringPanel()->planSettings();
        QCOMPARE(p.cv, 16.0);
        QCOMPARE(p.layerFrom, 1);
        QCOMPARE(p.layerTo, 2);
        QVERIFY(!view->stale());   // the atlas's own axes moved, nothing it was made from
        const AtlasCellResult late64 = view->cell(2 * 4 + 3);   // "2-3", c_v 64
        QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, view->cellRect(late64.index).center());
        p = w_->steeringPanel()->planSettings();
        QCOMPARE(p.cv, 64.0);
        QCOMPARE(p.layerFrom, 2);
        QVERIFY(p.layerTo == 3 || p.layerTo == -1);   // -1: to the last layer, 3
        // A setting the atlas does not sweep (the operator) makes it out of date.
        PlanSettings scale = p;
        scale.op = SteeringOperator::Scale;
        w_->steeringPanel()->setPlanSettings(scale);
        QVERIFY(view->stale());
        w_->steeringPanel()->setPlanSettings(p);
    }

    void aStrokeInvalidatesTheAtlas() {
        AtlasFinished f;
        QVERIFY(runAtlas(&f));
        AtlasView* view = w_->atlasPanel()->view();
        QVERIFY(!view->stale());
        PatchCanvas* canvas = w_->canvas();
        canvas->setTool(PatchCanvas::Tool::Brush);
        canvas->setBrushSize(1);
        stroke(canvas, {{2, 2}, {3, 2}});
        QVERIFY(view->stale());
        QVERIFY(w_->atlasPanel()->status().contains(QStringLiteral("Out of date")));
        QCOMPARE(view->finishedCells(), 12);   // still shown, dimmed
        w_->undoStack()->undo();
    }

    void stopStopsTheAtlas() {
        // While queued: the worker is busy decoding a long run; Stop cancels the atlas before it starts.
        GenerationSettings g = w_->promptPanel()->generation();
        g.maxNewTokens = 64;
        g.stopAtEos = false;
        w_->promptPanel()->setGeneration(g);
        QSignalSpy done(w_->atlas(), &AtlasController::finished);
        QSignalSpy runDone(w_.get(), &MainWindow::runDone);
        w_->run();
        QTest::mouseClick(w_->atlasPanel()->runButton(), Qt::LeftButton);
        QVERIFY(w_->atlas()->running());
        QTest::mouseClick(w_->atlasPanel()->stopButton(), Qt::LeftButton);
        QVERIFY(!w_->atlas()->running());
        QVERIFY(w_->atlasPanel()->runButton()->isEnabled());
        QVERIFY(done.wait(kRunTimeoutMs));
        QVERIFY(done.last().at(0).value<AtlasFinished>().cancelled);
        QCOMPARE(done.last().at(0).value<AtlasFinished>().cells, 0);
        QTRY_VERIFY_WITH_TIMEOUT(!runDone.isEmpty(), kRunTimeoutMs);
        g.stopAtEos = true;
        w_->promptPanel()->setGeneration(g);

        // Mid-run: cancelled (thread-safely, from the worker's thread) as the first cell arrives, the
        // atlas ends at its next step with the first batch's finished cells only.
        w_->atlasPanel()->setStrengths({8, 16, 32, 64, 128, 256});
        w_->atlasPanel()->setLayerRanges({QStringLiteral("all"), QStringLiteral("early"), QStringLiteral("middle"), QStringLiteral("late")});
        Worker* worker = w_->worker();
        const auto cancelOnFirst = connect(
            worker, &Worker::atlasCell, worker, [worker](const AtlasCellResult& cell) { worker->cancelAtlasesBefore(cell.atlasId + 1); },
            Qt::DirectConnection);
        AtlasFinished f;
        QVERIFY(runAtlas(&f));
        disconnect(cancelOnFirst);
        QVERIFY(f.cancelled);
        QVERIFY2(f.cells >= 1 && f.cells < 24, qPrintable(QString::number(f.cells)));
        QVERIFY(w_->atlasPanel()->runButton()->isEnabled());
        setGrid();
    }

    void copyAsPythonNamesTheVectorsStrengthAndMask() {
        QSignalSpy ready(w_.get(), &MainWindow::vectorsChanged);
        w_->actions()->openDemoScene->trigger();   // File → Open Demo Scene: mask, question and the file's suggestions back
        QVERIFY(ready.wait(kLoadTimeoutMs));
        QCOMPARE(w_->canvas()->strength().paintedCells(), 100);
        QCOMPARE(w_->steeringPanel()->planSettings().layerFrom, 0);
        QCOMPARE(w_->promptPanel()->prompt(), QStringLiteral("What color is the circle?"));
        const PlanSettings p = w_->steeringPanel()->planSettings();
        QCOMPARE(p.cv, 16.0);
        QCOMPARE(p.layerTo, -1);
        w_->actions()->copyPython->trigger();
        const QString py = QApplication::clipboard()->text();
        QVERIFY2(py.contains(QStringLiteral(KVSTEER_STUDIO_DEMO_VECTORS)), qPrintable(py));
        QVERIFY2(py.contains(QStringLiteral("ck, cv = 0, 16")), qPrintable(py));
        QVERIFY2(py.contains(QStringLiteral("mask[6:16, 9:19] = 1")), qPrintable(py));
        QVERIFY(py.contains(QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR)));
        QVERIFY(py.contains(QStringLiteral("USER: <image>\\nWhat color is the circle? ASSISTANT:")));
        QVERIFY(!py.contains(QStringLiteral("NotImplementedError")));
        // Runs from any folder, with the studio's budget, and prints both answers.
        QVERIFY2(py.contains(QStringLiteral("image_path = \"%1/red_circle.png\"").arg(QStringLiteral(KVSTEER_STUDIO_DEMO_IMAGES_DIR))), qPrintable(py));
        QVERIFY2(py.contains(QStringLiteral("max_new_tokens = %1\n").arg(w_->promptPanel()->generation().maxNewTokens)), qPrintable(py));
        QVERIFY(py.contains(QStringLiteral("(\"unsteered\", pristine), (\"steered\", cache)")));
        // An operator a few lines cannot express is said so, not emitted wrong.
        SnippetInputs in;
        in.model = w_->modelInfo();
        in.plan = p;
        in.plan.op = SteeringOperator::PreRope;
        in.strength = w_->canvas()->strength();
        const QString refused = pythonSnippet(in);
        QVERIFY(refused.contains(QStringLiteral("raise NotImplementedError")));
        QVERIFY(refused.contains(QStringLiteral("'prerope' operator")));
        QVERIFY(!refused.contains(QStringLiteral("generate(")));
        StrengthGrid ragged = in.strength;
        ragged.values[0] = 0.5f;
        QVERIFY(pythonMask(ragged).contains(QStringLiteral("(0, 0, 0.5)")));
    }

    void cleanupTestCase() {
        closeMessageBoxes();
        w_.reset();
    }
};

QTEST_MAIN(TestStudioAtlas)
#include "test_studio_atlas.moc"
