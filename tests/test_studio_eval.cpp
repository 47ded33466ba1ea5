// The studio's Evaluate dock, driven offscreen on the bundled demo model with the first run's demo
// scene (the shipped red->blue vectors, c_v 16): Tools -> Evaluate shows the dock; a demo-pope set
// (written by `kvsteer demo-pope`) runs with progress; Stop ends it after a batch with the items on
// disk; Evaluate on the same folder continues it and ends with the summary — the same numbers the
// CLI computes on that folder's items — and a table of the items whose correctness changed;
// double-clicking one opens its image, question and box on the canvas, and Run answers it (with
// Live on, it runs by itself); a new image leaves no marker or "Last run" line of the one before. A
// session the studio saves steers `kvsteer eval --session` to the studio's own answers.
//
// torch (through the core) before any Qt header.
#include "TestSupport.h"
#include "studio/DemoScene.h"
#include "studio/EvalController.h"
#include "studio/MainWindow.h"
#include "studio/StudioActions.h"
#include "widgets/EvalPanel.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "worker/Worker.h"

#include "StudioTestSupport.h"

#include <nlohmann/json.hpp>

#include <fstream>

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;

namespace {

int lines(const QString& path) {
    std::ifstream in(path.toStdString());
    int n = 0;
    for (std::string line; std::getline(in, line);) n += !line.empty();
    return n;
}

} // namespace

class TestStudioEval : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::unique_ptr<MainWindow> w_;

    // Clicks Evaluate and waits for that evaluation to finish (or stop).
    EvalFinished evaluate(const std::function<void()>& whileRunning = {}) {
        QSignalSpy done(w_->evaluation(), &EvalController::finished);
        QTest::mouseClick(w_->evalPanel()->evaluateButton(), Qt::LeftButton);
        if (whileRunning) whileRunning();
        if (done.isEmpty() && !done.wait(120000)) return {};
        return done.takeFirst().at(0).value<EvalFinished>();
    }

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        StudioOptions o = studioOptions(QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR), tmp_.filePath(QStringLiteral("recovery.kvsession")));
        o.demoScene = true;   // the demo model, the red circle, the shipped vectors
        w_ = std::make_unique<MainWindow>(o);
        QSignalSpy vectorsReady(w_.get(), &MainWindow::vectorsChanged);
        w_->resize(1500, 950);
        w_->show();
        QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
        QTRY_VERIFY_WITH_TIMEOUT(!vectorsReady.isEmpty(), kLoadTimeoutMs);
        w_->promptPanel()->setLive(false);
        const ProcessResult pope = runCli({"demo-pope", "--out", tmp_.filePath(QStringLiteral("pope")).toStdString(), "--images", "20"});
        QVERIFY2(pope.exitCode == 0, pope.err.c_str());
        QCOMPARE(w_->errorCount(), 0);
    }

    void toolsMenuShowsTheDock() {
        QVERIFY(!w_->evalDock()->isVisible());
        w_->actions()->evaluate->trigger();
        QTRY_VERIFY(w_->evalDock()->isVisible());
    }

    // A session the studio saves steers `kvsteer eval --session` as it steers the studio: on the
    // scene's own question the eval's two answers are the studio's Run answers (red, blue); a plan
    // flag given beside the session wins over its value.
    void sessionSteersTheCli() {
        RunFinished run;
        QVERIFY(runAndWait(w_.get(), 8, &run));
        QVERIFY(run.steeredText != run.unsteeredText);
        const QString session = tmp_.filePath(QStringLiteral("scene.kvsession"));
        QVERIFY(w_->saveSessionTo(session));
        const std::string data = tmp_.filePath(QStringLiteral("scene.jsonl")).toStdString();
        const DemoScenePaths scene = demoScenePaths();
        std::ofstream(data) << nlohmann::json{{"id", "scene"}, {"image", scene.image.toStdString()}, {"question", scene.question.toStdString()},
                                              {"answer", "red"}}.dump()
                            << "\n";
        auto evalSession = [&](const std::string& out, std::vector<std::string> extra) {
            std::vector<std::string> args = {"eval", "--session", session.toStdString(), "--data", data, "--out", out, "--metric", "contains",
                                             "--max-new-tokens", "8"};
            args.insert(args.end(), extra.begin(), extra.end());
            const ProcessResult r = runCli(args);
            if (r.exitCode != 0) qWarning("%s", r.err.c_str());
            std::ifstream in(out + "/items.jsonl");
            std::string line;
            std::getline(in, line);
            return line.empty() ? nlohmann::json() : nlohmann::json::parse(line);
        };
        const nlohmann::json item = evalSession(tmp_.filePath(QStringLiteral("scene.eval")).toStdString(), {});
        QVERIFY(!item.is_null());
        QCOMPARE(QString::fromStdString(item["unsteered"]["text"]), run.unsteeredText);
        QCOMPARE(QString::fromStdString(item["steered"]["text"]), run.steeredText);
        const nlohmann::json unsteered = evalSession(tmp_.filePath(QStringLiteral("scene-cv0.eval")).toStdString(), {"--cv", "0"});
        QVERIFY(!unsteered.is_null());
        QCOMPARE(unsteered["steered"]["ids"], item["unsteered"]["ids"]);
    }

    void stopThenContinue() {
        EvalPanel* panel = w_->evalPanel();
        panel->setDataset(tmp_.filePath(QStringLiteral("pope/pope.jsonl")));
        QCOMPARE(panel->outDir(), tmp_.filePath(QStringLiteral("pope/pope.eval")));
        // Stop as soon as the first batch has reported: the rest stays undone.
        const EvalFinished stopped = evaluate([&] {
            QSignalSpy item(w_->worker(), &Worker::evalItem);
            QVERIFY(item.wait(60000));
            QTest::mouseClick(panel->stopButton(), Qt::LeftButton);
        });
        QVERIFY(stopped.stopped);
        const int partial = lines(panel->outDir() + QStringLiteral("/items.jsonl"));
        const int total = lines(tmp_.filePath(QStringLiteral("pope/pope.jsonl")));
        QVERIFY2(partial > 0 && partial < total, qPrintable(QStringLiteral("%1 of %2").arg(partial).arg(total)));
        QVERIFY(panel->status().contains(QStringLiteral("Evaluate continues")));
        QVERIFY(panel->evaluateButton()->isEnabled());

        QSignalSpy started(w_->worker(), &Worker::evalStarted);
        const EvalFinished done = evaluate();
        QVERIFY(!done.stopped);
        QCOMPARE(started.first().at(0).value<EvalStarted>().alreadyDone, partial);
        QCOMPARE(done.items, total);
        QCOMPARE(lines(panel->outDir() + QStringLiteral("/items.jsonl")), total);
        QCOMPARE(panel->progressBar()->value(), total);
        // The summary the dock shows is the folder's summary.json.
        std::ifstream in((panel->outDir() + QStringLiteral("/summary.json")).toStdString());
        const nlohmann::json summary = nlohmann::json::parse(in);
        QCOMPARE(done.metricNames.first(), QStringLiteral("accuracy"));
        QCOMPARE(done.unsteered.first(), summary["unsteered"]["accuracy"].get<double>());
        QCOMPARE(done.steered.first(), summary["steered"]["accuracy"].get<double>());
        QCOMPARE(done.low.first(), summary["difference"]["accuracy"]["ci95"][0].get<double>());
        QVERIFY(done.steered.first() < done.unsteered.first());   // painted over the asked shape, c_v 16 erases it
        QVERIFY(panel->status().contains(QStringLiteral("McNemar")));
    }

    void tableFiltersAndOpensAnItem() {
        EvalPanel* panel = w_->evalPanel();
        // Only the items whose correctness changed, and after the resume only this run's ones.
        QVERIFY(panel->table()->rowCount() > 0);
        for (const EvalItemRow& r : panel->changedItems()) QVERIFY(r.unsteeredCorrect != r.steeredCorrect);
        panel->filter()->setCurrentIndex(2);   // wrong -> right
        int wrongToRight = 0;
        for (const EvalItemRow& r : panel->changedItems()) wrongToRight += !r.unsteeredCorrect && r.steeredCorrect;
        QCOMPARE(panel->table()->rowCount(), wrongToRight);
        panel->filter()->setCurrentIndex(1);   // right -> wrong
        QVERIFY(panel->table()->rowCount() > 0);

        const int index = panel->table()->item(0, 0)->data(Qt::UserRole).toInt();
        const EvalItemRow row = panel->changedItems()[index];
        QVERIFY(row.hasBox);
        QSignalSpy shown(w_.get(), &MainWindow::imageShown);
        QSignalSpy mask(w_->worker(), &Worker::maskLoaded);
        panel->table()->scrollToItem(panel->table()->item(0, 1));
        const QRect cell = panel->table()->visualItemRect(panel->table()->item(0, 1));
        QVERIFY2(panel->table()->viewport()->rect().contains(cell.center()), "the table's first row is on screen");
        QTest::mouseClick(panel->table()->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
        QTest::mouseDClick(panel->table()->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
        QVERIFY2(shown.wait(kLoadTimeoutMs), qPrintable(panel->status() + QStringLiteral(" | ") + w_->lastErrorText()));
        QCOMPARE(w_->promptPanel()->prompt(), row.question);
        // The box arrives as the canvas's painted map: the cells it covers, nothing else.
        QTRY_VERIFY_WITH_TIMEOUT(!mask.isEmpty(), kLoadTimeoutMs);
        QVERIFY(mask.first().at(1).toString().startsWith(QStringLiteral("box:")));
        QTRY_COMPARE_WITH_TIMEOUT(w_->canvas()->strength(), mask.first().at(0).value<StrengthGrid>(), kLoadTimeoutMs);
        const int boxRow = int((row.box[1] + row.box[3]) / 2 / 14), boxCol = int((row.box[0] + row.box[2]) / 2 / 14);
        QCOMPARE(w_->canvas()->strength().at(boxRow, boxCol), 1.0f);   // the box's centre cell (14 px cells)
        RunFinished f;
        QVERIFY(runAndWait(w_.get(), 8, &f));
        QCOMPARE(f.unsteeredText, row.unsteeredText);
        QCOMPARE(f.steeredText, row.steeredText);
        QCOMPARE(w_->errorCount(), 0);

        // With Live on, a double-click runs the item by itself once its image and box are in (as a
        // frontier point does): the run's answers are the eval's for that item.
        QVERIFY(panel->table()->rowCount() > 1);
        const EvalItemRow next = panel->changedItems()[panel->table()->item(1, 0)->data(Qt::UserRole).toInt()];
        w_->promptPanel()->setLive(true);
        QSignalSpy ran(w_.get(), &MainWindow::runDone);
        const QRect second = panel->table()->visualItemRect(panel->table()->item(1, 1));
        QTest::mouseClick(panel->table()->viewport(), Qt::LeftButton, Qt::NoModifier, second.center());
        QTest::mouseDClick(panel->table()->viewport(), Qt::LeftButton, Qt::NoModifier, second.center());
        QVERIFY2(ran.wait(kRunTimeoutMs), qPrintable(panel->status()));
        const RunFinished live = ran.takeFirst().at(0).value<RunFinished>();
        QCOMPARE(w_->promptPanel()->prompt(), next.question);
        QCOMPARE(live.unsteeredText, next.unsteeredText);
        QCOMPARE(live.steeredText, next.steeredText);
        w_->promptPanel()->setLive(false);
        QCOMPARE(w_->errorCount(), 0);
    }

    // What belonged to the last image goes with it: the heatmap cell marked on the canvas and the
    // run summary's "Last run" line.
    void nothingStaleAfterANewImage() {
        QVERIFY(runAndWait(w_.get(), 4));
        auto* summary = w_->findChild<QLabel*>(QStringLiteral("runInfo"));
        QVERIFY(summary);
        QTRY_VERIFY(summary->text().contains(QStringLiteral("Last run")));
        w_->canvas()->highlightCell(3, 4);
        QCOMPARE(w_->canvas()->highlightedCell(), QPoint(4, 3));
        QSignalSpy shown(w_.get(), &MainWindow::imageShown);
        w_->openImageFile(QStringLiteral(KVSTEER_STUDIO_DEMO_IMAGES_DIR "/blue_circle.png"));
        QVERIFY(shown.wait(kLoadTimeoutMs));
        QCOMPARE(w_->canvas()->highlightedCell(), QPoint(-1, -1));
        QVERIFY2(!summary->text().contains(QStringLiteral("Last run")), qPrintable(summary->text()));
    }

    void cleanupTestCase() {
        closeMessageBoxes();
        w_.reset();
    }
};

QTEST_MAIN(TestStudioEval)
#include "test_studio_eval.moc"
