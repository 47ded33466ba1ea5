// The studio's Study tab (the Evaluate dock), driven offscreen on the bundled demo model with the
// first run's demo scene (the shipped red->blue vectors, c_v 16, the circle painted): the
// Steering panel's vector file is proposed as the grid's; a demo-study suite (written by `kvsteer
// demo-study`) with the grid c_v 4,16 runs with progress; Stop ends it after a batch with the
// items on disk, Study on the same folder continues it and ends with the study's files, a plot
// of both plans and a table row for every plan × dataset × category — the numbers of the folder's
// summary.json. A click on a point puts its plan on the Steering panel (its vector file loaded when
// other vectors are held; the file's suggestion does not override the plan's c_v) and runs the
// current image with it. A saved session brings the study back in a fresh window, plot and table,
// without running it again; a session file from before the Study tab still opens.
//
// torch (through the core) before any Qt header.
#include "TestSupport.h"
#include "studio/MainWindow.h"
#include "studio/SessionFile.h"
#include "studio/StudyController.h"
#include "widgets/FrontierPlot.h"
#include "widgets/StudyPanel.h"
#include "widgets/SteeringPanel.h"
#include "worker/Worker.h"

#include "StudioTestSupport.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

#include <QDateTime>
#include <QDockWidget>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
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

nlohmann::json readJson(const QString& path) {
    std::ifstream in(path.toStdString());
    return in ? nlohmann::json::parse(in) : nlohmann::json();
}

QString canonical(const QString& path) { return QFileInfo(path).canonicalFilePath(); }

// The plan whose c_v is `cv`; -1 when none.
int planWithCv(const StudyResults& r, double cv) {
    for (const StudyPlanResult& p : r.plans)
        if (p.settings.cv.size() == 1 && p.settings.cv.front() == cv) return p.settings.index;
    return -1;
}

// The (plan, dataset, category) of every table row.
std::multiset<std::tuple<int, QString, QString>> tableKeys(QTableWidget* t) {
    std::multiset<std::tuple<int, QString, QString>> keys;
    for (int row = 0; row < t->rowCount(); ++row)
        keys.insert({t->item(row, 0)->data(Qt::UserRole).toInt(), t->item(row, 1)->text(), t->item(row, 2)->text()});
    return keys;
}

} // namespace

class TestStudioStudy : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::unique_ptr<MainWindow> w_;
    QString suite_;

    // Clicks Study and waits for that study to finish (or stop).
    StudyFinished study(const std::function<void()>& whileRunning = {}) {
        QSignalSpy done(w_->study(), &StudyController::finished);
        QTest::mouseClick(w_->studyPanel()->studyButton(), Qt::LeftButton);
        if (whileRunning) whileRunning();
        if (done.isEmpty() && !done.wait(180000)) return {};
        return done.takeFirst().at(0).value<StudyFinished>();
    }

    // Clicks the plan's point and waits for the run it starts; false when no plan was applied or no run ended.
    bool clickPoint(int plan, RunFinished* run) {
        FrontierPlot* plot = w_->studyPanel()->plot();
        QSignalSpy applied(w_->study(), &StudyController::planApplied);
        QSignalSpy done(w_.get(), &MainWindow::runDone);
        const QPointF at = plot->pointPixel(plan);
        if (at.x() < 0 || plot->planAt(at) != plan) return false;
        QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, at.toPoint());
        if (applied.isEmpty() && !applied.wait(kLoadTimeoutMs)) return false;
        if (applied.first().at(0).value<StudyPlanSettings>().index != plan) return false;
        const quint64 id = w_->activeRunId();
        for (int i = 0; i < 20; ++i) {
            if (done.isEmpty() && !done.wait(kRunTimeoutMs)) return false;
            while (!done.isEmpty()) {
                const RunFinished f = done.takeFirst().at(0).value<RunFinished>();
                if (f.runId == id) {
                    *run = f;
                    return true;
                }
            }
        }
        return false;
    }

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        StudioOptions o = studioOptions(QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR), tmp_.filePath(QStringLiteral("recovery.kvsession")));
        o.demoScene = true;   // the demo model, the red circle, the shipped vectors (imported from their file)
        w_ = std::make_unique<MainWindow>(o);
        QSignalSpy vectorsReady(w_.get(), &MainWindow::vectorsChanged);
        w_->resize(1280, 800);
        w_->show();
        QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
        QTRY_VERIFY_WITH_TIMEOUT(!vectorsReady.isEmpty(), kLoadTimeoutMs);
        w_->promptPanel()->setLive(false);
        // 8 scenes, 70 items: more than one chunk of the eval loop (32 items), so a Stop after the
        // first items are on disk leaves the others undone.
        const ProcessResult made = runCli({"demo-study", "--out", tmp_.filePath(QStringLiteral("ds")).toStdString(), "--images", "8", "--pairs", "0"});
        QVERIFY2(made.exitCode == 0, made.err.c_str());
        suite_ = tmp_.filePath(QStringLiteral("ds/suite.json"));
        QCOMPARE(w_->errorCount(), 0);
    }

    void toolsMenuShowsTheStudyTab() {
        QVERIFY(!w_->studyPanel()->isVisible());
        w_->showStudy();
        QTRY_VERIFY(w_->evalDock()->isVisible());
        QTRY_VERIFY(w_->studyPanel()->isVisible());
        // The Steering panel's vector file (the demo scene imported it) is the grid's proposal.
        QCOMPARE(canonical(w_->studyPanel()->vectorsEdit()->text()), canonical(QStringLiteral(KVSTEER_DEMO_VECTORS)));
        // An empty c_v is one plan at the file's suggestion, and the placeholder says which: the
        // shipped file suggests c_v 16 (an example list here read as a default: 2 plans, not 10).
        StudyPanel* panel = w_->studyPanel();
        QCOMPARE(panel->cvEdit()->placeholderText(), QStringLiteral("empty: the vector file's 16"));
        QVERIFY2(panel->ckEdit()->placeholderText().startsWith(QStringLiteral("empty: ")), qPrintable(panel->ckEdit()->placeholderText()));
        // Another file typed: its suggestions are not known here, and the placeholder says so.
        const QString shipped = panel->vectorsEdit()->text();
        panel->vectorsEdit()->setText(tmp_.filePath(QStringLiteral("other.safetensors")));
        QCOMPARE(panel->cvEdit()->placeholderText(), QStringLiteral("empty: the vector file's"));
        panel->vectorsEdit()->setText(shipped);
        QCOMPARE(panel->cvEdit()->placeholderText(), QStringLiteral("empty: the vector file's 16"));
    }

    void stopThenContinueWritesTheStudy() {
        StudyPanel* panel = w_->studyPanel();
        panel->setSuite(suite_);
        QCOMPARE(panel->setup().outDir, tmp_.filePath(QStringLiteral("ds/suite.study")));
        panel->cvEdit()->clear();
        QTest::keyClicks(panel->cvEdit(), QStringLiteral("4,16"));
        const QString out = panel->setup().outDir;
        int total = 0;
        for (const char* set : {"colour", "blue_circle", "others_exist", "others_colour", "count", "red_circle", "caption"})
            total += lines(tmp_.filePath(QStringLiteral("ds/%1.jsonl").arg(QLatin1String(set))));
        QVERIFY(total > 32);

        // Stop as soon as the first item is on disk: the rest stays undone.
        const StudyFinished stopped = study([&] {
            QSignalSpy item(w_->worker(), &Worker::studyProgress);
            QVERIFY(item.wait(120000));
            QTest::mouseClick(panel->stopButton(), Qt::LeftButton);
        });
        QVERIFY2(stopped.stopped, qPrintable(panel->status() + QStringLiteral(" | ") + w_->lastErrorText()));
        const int partial = lines(out + QStringLiteral("/items.jsonl"));
        QVERIFY2(partial > 0 && partial < 2 * total, qPrintable(QStringLiteral("%1 of %2").arg(partial).arg(2 * total)));
        QVERIFY(panel->status().contains(QStringLiteral("Study continues")));
        QVERIFY(panel->studyButton()->isEnabled());
        QCOMPARE(panel->plot()->pointCount(), 0);

        QSignalSpy started(w_->worker(), &Worker::studyStarted);
        const StudyFinished done = study();
        QVERIFY2(!done.stopped && done.results.valid(), qPrintable(panel->status() + QStringLiteral(" | ") + w_->lastErrorText()));
        QCOMPARE(started.first().at(0).value<StudyStarted>().alreadyDone, partial / 2);   // an item's lines: one per plan
        QCOMPARE(started.first().at(0).value<StudyStarted>().planLabels.size(), 2);
        QCOMPARE(panel->progressBar()->value(), total);
        QCOMPARE(lines(out + QStringLiteral("/items.jsonl")), 2 * total);
        for (const char* f : {"study.json", "plans.jsonl", "summary.json", "summary.csv", "frontier.json", "frontier.svg", "grid.svg"})
            QVERIFY2(QFileInfo::exists(out + QLatin1Char('/') + QLatin1String(f)), f);
        QCOMPARE(w_->errorCount(), 0);
    }

    // The plot and the table are the folder's summary.json.
    void plotAndTableShowTheSummary() {
        StudyPanel* panel = w_->studyPanel();
        const nlohmann::json summary = readJson(panel->setup().outDir + QStringLiteral("/summary.json"));
        QVERIFY(summary.is_object());
        QCOMPARE(panel->results().plans.size(), 2);
        QCOMPARE(panel->plot()->pointCount(), 2);
        const int cv16 = planWithCv(panel->results(), 16), cv4 = planWithCv(panel->results(), 4);
        QVERIFY(cv16 >= 0 && cv4 >= 0 && cv16 != cv4);
        QCOMPARE(panel->plot()->pointLabel(cv16), QStringLiteral("c_v 16"));
        for (const auto& r : summary["results"]) {
            const StudyPlanResult* p = panel->results().plan(r["plan"].get<int>());
            QVERIFY(p);
            QCOMPARE(p->targetSuccess.value, r["target_success"]["value"].get<double>());
            QCOMPARE(p->preservation.low, r["preservation"]["ci95"][0].get<double>());
        }
        // One row per plan × dataset × category: summary.csv's rows, every dataset under every plan.
        QCOMPARE(panel->table()->rowCount(), lines(panel->setup().outDir + QStringLiteral("/summary.csv")) - 1);
        const auto keys = tableKeys(panel->table());
        for (int plan : {cv4, cv16})
            for (const auto& d : summary["datasets"])
                QVERIFY2(keys.count({plan, QString::fromStdString(d["name"].get<std::string>()), QStringLiteral("(all)")}) == 1,
                         d["name"].get<std::string>().c_str());
        // Each set's headline number under each plan, as summary.json has it.
        int checked = 0;
        for (const auto& r : summary["results"])
            for (const auto& d : r["datasets"]) {
                const auto& headline = d.contains("success") ? d["success"] : d["preservation"];
                for (int row = 0; row < panel->table()->rowCount(); ++row) {
                    QTableWidget* t = panel->table();
                    if (t->item(row, 0)->data(Qt::UserRole).toInt() != r["plan"].get<int>() ||
                        t->item(row, 1)->text() != QString::fromStdString(d["dataset"].get<std::string>()) || t->item(row, 2)->text() != QStringLiteral("(all)"))
                        continue;
                    QCOMPARE(t->item(row, 5)->text(), QString::fromLatin1(d.contains("success") ? "success" : "preservation"));
                    QCOMPARE(t->item(row, 3)->text(), headline["value"].is_number() ? QString::number(headline["value"].get<double>(), 'f', 3) : QStringLiteral("–"));
                    ++checked;
                }
            }
        QCOMPARE(checked, 2 * int(summary["datasets"].size()));
        QVERIFY(panel->status().contains(QStringLiteral("frontier")));
    }

    // A click on a point: its plan on the Steering panel, its vectors loaded (they were cleared),
    // and the current image run with it. c_v 4 leaves the circle red; c_v 16 turns it blue.
    void clickingAPointAppliesAndRuns() {
        StudyPanel* panel = w_->studyPanel();
        const int cv16 = planWithCv(panel->results(), 16), cv4 = planWithCv(panel->results(), 4);
        PlanSettings plan = w_->steeringPanel()->planSettings();
        plan.cv = 1;
        plan.ck = 2;
        w_->steeringPanel()->setPlanSettings(plan);
        QSignalSpy cleared(w_.get(), &MainWindow::vectorsChanged);
        Q_EMIT w_->steeringPanel()->clearVectorsRequested();
        QTRY_VERIFY_WITH_TIMEOUT(!cleared.isEmpty() && !w_->vectors().valid(), kLoadTimeoutMs);

        RunFinished weak;
        QVERIFY2(clickPoint(cv4, &weak), qPrintable(panel->status() + QStringLiteral(" | ") + w_->lastErrorText()));
        QVERIFY(w_->vectors().valid());   // the plan's file, loaded again
        QCOMPARE(w_->steeringPanel()->planSettings().cv, 4.0);   // the file suggests 16: the plan wins
        QCOMPARE(w_->steeringPanel()->planSettings().ck, 0.0);
        QVERIFY(!weak.cancelled && weak.steps > 0);

        RunFinished strong;
        QVERIFY2(clickPoint(cv16, &strong), qPrintable(panel->status() + QStringLiteral(" | ") + w_->lastErrorText()));
        QCOMPARE(w_->steeringPanel()->planSettings().cv, 16.0);
        QCOMPARE(w_->lastRunStarted().appliedLayers.size(), w_->modelInfo().layers);   // "all"
        QVERIFY(!strong.cancelled);
        QCOMPARE(strong.unsteeredText, weak.unsteeredText);
        QVERIFY2(strong.steeredText != strong.unsteeredText, qPrintable(strong.steeredText));
        QVERIFY2(strong.steeredText.contains(QStringLiteral("blue")), qPrintable(strong.steeredText));
        QVERIFY(panel->status().contains(QStringLiteral("Plan %1").arg(cv16)));
        QCOMPARE(w_->errorCount(), 0);
    }

    // Saved with the session; a fresh window opening it shows the study again without running it.
    void sessionRestoresTheStudy() {
        const QString session = tmp_.filePath(QStringLiteral("study.kvsession"));
        QVERIFY(w_->saveSessionTo(session));
        const StudySetup saved = w_->studyPanel()->setup();
        const QString items = saved.outDir + QStringLiteral("/items.jsonl");
        const QDateTime written = QFileInfo(items).lastModified();
        const int rows = w_->studyPanel()->table()->rowCount();

        StudioOptions o = studioOptions(QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR), tmp_.filePath(QStringLiteral("recovery2.kvsession")));
        MainWindow fresh(o);
        fresh.show();
        QVERIFY(QTest::qWaitForWindowExposed(&fresh));
        QTRY_VERIFY_WITH_TIMEOUT(fresh.modelInfo().valid(), kLoadTimeoutMs);
        QSignalSpy studies(fresh.worker(), &Worker::studyStarted);
        QCOMPARE(fresh.studyPanel()->plot()->pointCount(), 0);
        QVERIFY(fresh.openSessionFrom(session));
        fresh.showStudy();
        QTRY_VERIFY(fresh.studyPanel()->isVisible());
        QVERIFY(fresh.studyPanel()->setup() == saved);
        QCOMPARE(fresh.studyPanel()->setup().cv, QStringLiteral("4,16"));
        QCOMPARE(fresh.studyPanel()->plot()->pointCount(), 2);
        QCOMPARE(fresh.studyPanel()->table()->rowCount(), rows);
        QTest::qWait(200);
        QVERIFY(studies.isEmpty());
        QCOMPARE(QFileInfo(items).lastModified(), written);
        QCOMPARE(fresh.errorCount(), 0);
        closeMessageBoxes();

        // A session written before the Study tab (no "study") opens, with an empty setup.
        QFile f(session);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QJsonObject root = QJsonDocument::fromJson(f.readAll()).object();
        QVERIFY(root.contains(QStringLiteral("study")));
        root.remove(QStringLiteral("study"));
        SessionDocument old;
        QString error;
        QVERIFY2(SessionFile::fromJson(QJsonDocument(root).toJson(), &old, &error), qPrintable(error));
        QVERIFY(old.study.isEmpty());
        QCOMPARE(old.prompt, w_->promptPanel()->prompt());
    }

    // Another grid on the same suite: the proposed folder holds the study before, so this one goes
    // to a fresh folder beside it (suite-2.study), said on the panel, and the study before is left as
    // it was. A folder the person typed is never moved: its error stays.
    void anotherGridGoesToAFreshFolder() {
        StudyPanel* panel = w_->studyPanel();
        panel->setSuite(suite_);
        const QString before = tmp_.filePath(QStringLiteral("ds/suite.study"));
        QCOMPARE(panel->setup().outDir, before);
        const QDateTime written = QFileInfo(before + QStringLiteral("/items.jsonl")).lastModified();
        panel->cvEdit()->setText(QStringLiteral("4"));
        const StudyFinished done = study();
        QVERIFY2(!done.stopped && done.results.valid(), qPrintable(panel->status() + QStringLiteral(" | ") + w_->lastErrorText()));
        const QString fresh = tmp_.filePath(QStringLiteral("ds/suite-2.study"));
        QCOMPARE(panel->setup().outDir, fresh);
        QVERIFY(QFileInfo::exists(fresh + QStringLiteral("/summary.json")));
        QCOMPARE(QFileInfo(before + QStringLiteral("/items.jsonl")).lastModified(), written);
        QCOMPARE(w_->errorCount(), 0);

        // Typed by the person: refused with the core's message, the folder kept.
        const QString typed = tmp_.filePath(QStringLiteral("mine"));
        QVERIFY(QDir().mkpath(typed));
        QFile::copy(before + QStringLiteral("/study.json"), typed + QStringLiteral("/study.json"));
        panel->setSetup([&] {
            StudySetup s = panel->setup();
            s.outDir = typed;
            return s;
        }());
        QSignalSpy failed(w_->worker(), &Worker::studyFailed);
        QTest::mouseClick(panel->studyButton(), Qt::LeftButton);
        QVERIFY(failed.wait(60000));
        QCOMPARE(panel->setup().outDir, typed);
        QVERIFY2(panel->status().contains(QStringLiteral("holds another study")), qPrintable(panel->status()));
        closeMessageBoxes();
    }

    void cleanupTestCase() {
        closeMessageBoxes();
        w_.reset();
    }
};

QTEST_MAIN(TestStudioStudy)
#include "test_studio_study.moc"
