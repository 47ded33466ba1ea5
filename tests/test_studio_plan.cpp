// What the studio shows is what runs, on the demo model, offscreen, with remembered settings in a
// folder of the test's own:
//   - `--ck 0,0,1,1 --cv 2,4,8,16` (one per layer) runs as lists, shown as "by layer", and gives
//     `kvsteer steer`'s steered ids with the same flags ("yellow"; read as one value, or silently as
//     0, it would be "red");
//   - a vector file whose suggestion is per layer runs per layer ("blue", as the CLI with the file);
//   - after a session that used propagate, a studio started without a plan says so ("Restored from
//     the last session: propagate"); one started with a plan on its command line runs that plan
//     whole (edit-only, the CLI's ids), and --no-propagate turns the remembered propagate off.
//
// torch (through the core) before any Qt header.
#include "TestSupport.h"

#include "StudioTestSupport.h"
#include "widgets/PlanForm.h"
#include "widgets/StreamView.h"

#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <fstream>

using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;

namespace {

const QString kImage = QStringLiteral(KVSTEER_STUDIO_DEMO_IMAGES_DIR "/red_circle.png");
const QString kVectors = QStringLiteral(KVSTEER_STUDIO_DEMO_VECTORS);
const QString kQuestion = QStringLiteral("What color is the circle?");

QVector<qint64> ids(const QVector<StreamToken>& tokens) {
    QVector<qint64> out;
    for (const StreamToken& t : tokens) out << t.id;
    return out;
}

// `kvsteer steer` on the demo scene with `flags` (the vectors, the mask, 8 tokens): its steered ids.
QVector<qint64> cliSteered(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"steer", "--image", kImage.toStdString(), "--prompt", kQuestion.toStdString(), "--mask",
                                     "rect:6,9,15,18", "--max-new-tokens", "8", "--json"};
    args.insert(args.end(), flags.begin(), flags.end());
    const ProcessResult r = runCli(args);
    if (r.exitCode != 0) qWarning("kvsteer steer failed: %s", r.err.c_str());
    QVector<qint64> out;
    if (r.exitCode != 0) return out;
    const nlohmann::json answer = nlohmann::json::parse(r.out);
    for (int64_t id : answer["steered"]["ids"]) out << id;
    return out;
}

} // namespace

class TestStudioPlan : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    // A studio on the demo scene that remembers its settings (in tmp_), started with `o`'s plan and
    // run once; its steered ids, or empty when the run did not finish.
    std::unique_ptr<MainWindow> startAndRun(StudioOptions o) {
        o.modelDirectory = QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR);
        o.recoveryPath = tmp_.filePath(QStringLiteral("recovery.kvsession"));
        o.offerRecovery = false;
        o.confirmClose = false;
        o.demoScene = false;
        o.useSettings = true;
        o.load.threads = 2;
        o.loadOverride = true;
        o.imagePath = kImage;
        o.prompt = kQuestion;
        o.maskSpec = QStringLiteral("rect:6,9,15,18");
        o.maxTokens = 8;
        o.run = true;
        auto w = std::make_unique<MainWindow>(o);
        QSignalSpy done(w.get(), &MainWindow::runDone);
        w->show();
        if (!done.wait(kLoadTimeoutMs)) qWarning("no run finished: %s", qPrintable(w->lastErrorText()));
        return w;
    }

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, tmp_.filePath(QStringLiteral("settings")));
        QSettings().clear();
    }

    void coefficientsPerLayerFromTheCommandLine() {
        StudioOptions o;
        o.vectorsPath = kVectors;
        o.ck = {0, 0, 1, 1};
        o.cv = {2, 4, 8, 16};
        const auto w = startAndRun(o);
        const PlanSettings p = w->steeringPanel()->planSettings();
        QCOMPARE(p.ckValues(), (QVector<double>{0, 0, 1, 1}));
        QCOMPARE(p.cvValues(), (QVector<double>{2, 4, 8, 16}));
        QCOMPARE(w->steeringPanel()->planForm()->byLayerText(), QStringLiteral("c_k 0, 0, 1, 1 · c_v 2, 4, 8, 16 by layer"));
        const QVector<qint64> expected = cliSteered({"--vectors", kVectors.toStdString(), "--ck", "0,0,1,1", "--cv", "2,4,8,16"});
        QVERIFY(!expected.isEmpty());
        QCOMPARE(ids(w->streamView()->tokens(true)), expected);
        QVERIFY2(expected != cliSteered({"--vectors", kVectors.toStdString(), "--ck", "0", "--cv", "2"}),
                 "the lists and their first values answer alike: this check would not see them read as one value");
        w->close();
    }

    void vectorFileSuggestionPerLayer() {
        const std::string file = tmp_.filePath(QStringLiteral("per-layer.safetensors")).toStdString();
        const ProcessResult made = runCli({"extract", "--recipe", "image-pair", "--image-a", KVSTEER_STUDIO_DEMO_IMAGES_DIR "/blue_circle.png",
                                           "--image-b", kImage.toStdString(), "--prompt", kQuestion.toStdString(), "--ck", "0,0,1,1",
                                           "--cv", "2,4,8,16", "--out", file});
        QVERIFY2(made.exitCode == 0, made.err.c_str());
        StudioOptions o;
        o.vectorsPath = QString::fromStdString(file);
        const auto w = startAndRun(o);
        QCOMPARE(w->steeringPanel()->planSettings().cvValues(), (QVector<double>{2, 4, 8, 16}));
        QVERIFY(w->steeringPanel()->planForm()->byLayerText().contains(QStringLiteral("c_v 2, 4, 8, 16")));
        QCOMPARE(ids(w->streamView()->tokens(true)), cliSteered({"--vectors", file}));
        w->close();
    }

    void restoredSettingsAreShownAndACommandLinePlanWins() {
        {   // A session that ends with propagate and c_v 16 (remembered when it closes).
            StudioOptions o;
            o.vectorsPath = kVectors;
            const auto w = startAndRun(o);
            PlanSettings p = w->steeringPanel()->planSettings();
            p.propagate = true;
            p.cv = 16;
            w->steeringPanel()->setPlanSettings(p);
            w->close();
        }
        {   // Started without a plan: the remembered one, said so.
            StudioOptions o;
            o.vectorsPath = kVectors;
            const auto w = startAndRun(o);
            QVERIFY(w->steeringPanel()->planSettings().propagate);
            const QString note = w->steeringPanel()->planForm()->restoredNote();
            QVERIFY2(note.contains(QStringLiteral("Restored from the last session")) && note.contains(QStringLiteral("propagate")),
                     qPrintable(note));
            w->close();
        }
        {   // A plan on the command line is applied whole: edit-only, as the CLI with the same flags.
            StudioOptions o;
            o.vectorsPath = kVectors;
            o.ck = {0};
            o.cv = {16};
            const auto w = startAndRun(o);
            QVERIFY(!w->steeringPanel()->planSettings().propagate);
            QVERIFY(w->steeringPanel()->planForm()->restoredNote().isEmpty());
            QCOMPARE(ids(w->streamView()->tokens(true)), cliSteered({"--vectors", kVectors.toStdString(), "--ck", "0", "--cv", "16"}));
            w->close();
        }
        {   // --no-propagate alone turns the remembered propagate off.
            StudioOptions o;
            o.vectorsPath = kVectors;
            o.propagate = false;
            const auto w = startAndRun(o);
            QVERIFY(!w->steeringPanel()->planSettings().propagate);
            w->close();
        }
    }

    void cleanupTestCase() { closeMessageBoxes(); }
};

QTEST_MAIN(TestStudioPlan)
#include "test_studio_plan.moc"
