// The studio on a laptop's screen and larger: nothing cut off, at 100 % and 200 %.
//
// CTest runs this once per screen (1280×720, 1366×768, 1600×1000, 1920×1080; logical pixels) and
// scale (QT_SCALE_FACTOR 1 and 2): KVSTEER_LAYOUT_SCREEN names the screen, which the offscreen
// platform is given before QApplication exists. The studio opens as a person starts it (no window
// size asked for), with the look kvsteer-studio applies, on
//   - the demo scene (the demo model, its red circle, the shipped vectors), and
//   - tiny-qwen2vl on the 500×300 gradient, a non-square 10×18 grid,
// and in each of the states a person goes through — loaded, answered (heatmaps drawn), vectors
// toward a second image, the Evaluate dock's Dataset and Study tabs — LayoutCheck.h finds every
// visible button, label, group box and combo box that is cut off or sticks out of its parent, and
// every tool bar that hides actions. The window must open inside the screen, and its smallest width
// be at most 1200 px.
#include "TestSupport.h"

#include "LayoutCheck.h"
#include "StudioTestSupport.h"
#include "studio/StudioActions.h"
#include "studio/StudioLook.h"
#include "widgets/SteeringPanel.h"

#include <QDockWidget>
#include <QFile>
#include <QScreen>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>

using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;

namespace {

QString demoModelDir() { return QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR); }
bool haveDemoModel() { return QFileInfo::exists(demoModelDir() + QStringLiteral("/config.json")); }

} // namespace

class TestStudioLayout : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    std::unique_ptr<MainWindow> open(const QString& model) {
        auto w = std::make_unique<MainWindow>(studioOptions(model, tmp_.filePath(QStringLiteral("recovery.kvsession"))));
        QSignalSpy loaded(w.get(), &MainWindow::modelReady);
        w->show();
        if (!QTest::qWaitForWindowExposed(w.get()) || (loaded.isEmpty() && !loaded.wait(kLoadTimeoutMs))) return nullptr;
        return w;
    }

    // Every state a person goes through on this window: each is checked at the size the window
    // opened at.
    void checkStates(MainWindow* w, const QString& scene) {
        check(w, scene + QStringLiteral(", loaded"));
        if (QTest::currentTestFailed()) return;
        QVERIFY(runAndWait(w, 4));
        QTest::qWait(150);   // the last heatmap's re-layout
        check(w, scene + QStringLiteral(", answered"));
        if (QTest::currentTestFailed()) return;
        SteeringPanel* steering = w->steeringPanel();
        steering->setSource(VectorSource::SecondImage);
        QFile target(referenceImage(QStringLiteral("shapes_224x224.png")));
        QVERIFY(target.open(QIODevice::ReadOnly));
        steering->setTargetImage(target.fileName(), target.readAll());
        check(w, scene + QStringLiteral(", toward a second image"));
        if (QTest::currentTestFailed()) return;
        w->actions()->evaluate->trigger();
        check(w, scene + QStringLiteral(", Evaluate: dataset"));
        if (QTest::currentTestFailed()) return;
        w->showStudy();
        check(w, scene + QStringLiteral(", Evaluate: study"));
        w->evalDock()->hide();
    }

    void check(QWidget* w, const QString& state) {
        QApplication::processEvents();
        QTest::qWait(50);
        const QRect screen = w->screen()->availableGeometry();
        QVERIFY2(screen.contains(w->frameGeometry()), qPrintable(QStringLiteral("%1: the window (%2,%3 %4×%5) is not inside the screen %6×%7")
                                                                     .arg(state)
                                                                     .arg(w->frameGeometry().x())
                                                                     .arg(w->frameGeometry().y())
                                                                     .arg(w->frameGeometry().width())
                                                                     .arg(w->frameGeometry().height())
                                                                     .arg(screen.width())
                                                                     .arg(screen.height())));
        const QStringList problems = layoutProblems(w);
        QVERIFY2(problems.isEmpty(), qPrintable(QStringLiteral("%1 at %2×%3:\n  %4").arg(state).arg(w->width()).arg(w->height()).arg(problems.join(QStringLiteral("\n  ")))));
    }

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        qInfo("screen %dx%d (logical), scale %.0f %%", QGuiApplication::primaryScreen()->geometry().width(),
              QGuiApplication::primaryScreen()->geometry().height(), QGuiApplication::primaryScreen()->devicePixelRatio() * 100);
    }

    void smallestWidthFitsALaptop() {
        auto w = open(demoModelDir());
        QVERIFY(w);
        qInfo("smallest window: %d x %d", w->minimumSizeHint().width(), w->minimumSizeHint().height());
        QVERIFY2(w->minimumSizeHint().width() <= 1200 && w->minimumWidth() <= 1200,
                 qPrintable(QStringLiteral("the window's smallest width is %1").arg(std::max(w->minimumSizeHint().width(), w->minimumWidth()))));
        QVERIFY2(w->minimumSizeHint().height() <= 680, qPrintable(QStringLiteral("the window's smallest height is %1").arg(w->minimumSizeHint().height())));
    }

    void demoSceneFits() {
        if (!haveDemoModel()) QSKIP("the demo model is not built");
        auto w = open(demoModelDir());
        QVERIFY(w);
        QSignalSpy vectors(w.get(), &MainWindow::vectorsChanged);
        QSignalSpy shown(w.get(), &MainWindow::imageShown);
        w->openDemoScene();
        QTRY_VERIFY_WITH_TIMEOUT(!shown.isEmpty() && !vectors.isEmpty(), kLoadTimeoutMs);
        checkStates(w.get(), QStringLiteral("demo scene"));
    }

    void qwenGridFits() {
        auto w = open(QString::fromStdString(referenceQwen2VlDir()));
        QVERIFY(w);
        QSignalSpy shown(w.get(), &MainWindow::imageShown);
        w->openImageFile(referenceImage(QStringLiteral("gradient_500x300.png")));
        QTRY_VERIFY_WITH_TIMEOUT(!shown.isEmpty(), kLoadTimeoutMs);
        QCOMPARE(w->canvas()->strength().rows, 10);
        QCOMPARE(w->canvas()->strength().cols, 18);
        w->promptPanel()->setPrompt(QStringLiteral("What is in the image?"));
        checkStates(w.get(), QStringLiteral("tiny-qwen2vl 10×18"));
    }
};

// The screen is the offscreen platform's, sized before QApplication is made.
int main(int argc, char** argv) {
    const QByteArray size = qgetenv("KVSTEER_LAYOUT_SCREEN").isEmpty() ? QByteArray("1366x768") : qgetenv("KVSTEER_LAYOUT_SCREEN");
    const double scale = qEnvironmentVariableIsEmpty("QT_SCALE_FACTOR") ? 1.0 : qgetenv("QT_SCALE_FACTOR").toDouble();
    const QList<QByteArray> wh = size.split('x');
    const int width = int(wh.value(0).toInt() * scale), height = int(wh.value(1).toInt() * scale);   // the screen's pixels
    QTemporaryDir configDir;
    const QString config = configDir.filePath(QStringLiteral("screen.json"));
    QFile f(config);
    if (!f.open(QIODevice::WriteOnly)) return 2;
    f.write(QStringLiteral("{\"screens\":[{\"name\":\"laptop\",\"x\":0,\"y\":0,\"width\":%1,\"height\":%2,\"logicalDpi\":96,\"logicalBaseDpi\":96,\"dpr\":1}]}")
                .arg(width)
                .arg(height)
                .toUtf8());
    f.close();
    qputenv("QT_QPA_PLATFORM", "offscreen:configfile=" + config.toUtf8());
    QApplication app(argc, argv);
    applyStudioLook(app);
    TestStudioLayout test;
    return QTest::qExec(&test, argc, argv);
}

#include "test_studio_layout.moc"
