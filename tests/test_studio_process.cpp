// The studio as a process, as a desktop session treats it: a `kill` (SIGTERM) ends it as its Quit
// does, the scratch folder a studio killed outright (SIGKILL, a crash) left behind is removed
// by the next studio to start, and `--session FILE` opens that file (Qt itself claims an argument
// of that name). Real studio processes on the bundled demo model, each with its own temp directory.
#include "TestSupport.h"
#include "studio/SessionFile.h"

#include <csignal>

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer::test;

class TestStudioProcess : public QObject {
    Q_OBJECT
    QTemporaryDir home_;

    QString temp() const { return home_.filePath(QStringLiteral("tmp")); }

    // The studios' scratch folders in this test's temp directory.
    QStringList scratchFolders() const {
        return QDir(temp()).entryList({QStringLiteral("kvsteer*")}, QDir::Dirs | QDir::NoDotAndDotDot);
    }

    // Starts a studio on the demo model that computes vectors toward another image (so its worker
    // writes into its scratch folder), runs and writes `ready` when both answers are in.
    void startStudio(QProcess& studio, const QString& ready) {
        const QString images = QString::fromStdString(referenceDir() + "/images");
        startStudioWith(studio,
                        {QStringLiteral("--image"), images + QStringLiteral("/red_square_336x336.png"), QStringLiteral("--steer-toward"),
                         images + QStringLiteral("/shapes_224x224.png"), QStringLiteral("--prompt"), QStringLiteral("What color is the square?"),
                         QStringLiteral("--max-new-tokens"), QStringLiteral("4"), QStringLiteral("--run")},
                        ready);
    }

    // A studio started with `args` (offscreen, this test's homes, no recovery offer), waited for
    // until --ready-file `ready` is written.
    void startStudioWith(QProcess& studio, QStringList args, const QString& ready) {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("TMPDIR"), temp());
        env.insert(QStringLiteral("XDG_DATA_HOME"), home_.filePath(QStringLiteral("data")));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), home_.filePath(QStringLiteral("config")));
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        studio.setProcessEnvironment(env);
        args << QStringLiteral("--no-recovery") << QStringLiteral("--ready-file") << ready;
        studio.start(QStringLiteral(KVSTEER_STUDIO_PATH), args);
        QVERIFY(studio.waitForStarted(30000));
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(ready), 120000);
    }

    // SIGTERM, then the exit a Quit gives.
    static void terminate(QProcess& studio) {
        QVERIFY(::kill(pid_t(studio.processId()), SIGTERM) == 0);
        QVERIFY(studio.waitForFinished(30000));
        QCOMPARE(studio.exitStatus(), QProcess::NormalExit);
        QCOMPARE(studio.exitCode(), 0);
    }

private slots:
    void init() {
        QVERIFY(home_.isValid());
        QVERIFY(QDir(temp()).removeRecursively());
        QVERIFY(QDir().mkpath(temp()));
    }

    void endsCleanlyOnSigterm() {
        // Left to the default the signal killed the studio (a crash exit) and the folder stayed.
        QProcess studio;
        startStudio(studio, home_.filePath(QStringLiteral("ready.txt")));
        QVERIFY2(!scratchFolders().isEmpty(), "the studio's worker keeps a scratch folder while it runs");
        terminate(studio);
        QVERIFY2(scratchFolders().isEmpty(), qPrintable(scratchFolders().join(QStringLiteral(", "))));
    }

    void nextStudioRemovesAKilledStudiosFolder() {
        // A SIGKILL cannot be caught: the folder stays until the next studio starts, which removes
        // it and keeps its own; a folder of another studio still running is kept too (the pid of
        // this test, which is alive), and so is a folder of that prefix that names no pid.
        QProcess killed;
        startStudio(killed, home_.filePath(QStringLiteral("ready-killed.txt")));
        const QStringList left = scratchFolders();
        QCOMPARE(left.size(), 1);
        QVERIFY2(left[0].startsWith(QStringLiteral("kvsteer-studio-%1-").arg(killed.processId())), qPrintable(left[0]));
        killed.kill();
        QVERIFY(killed.waitForFinished(30000));
        QCOMPARE(scratchFolders(), left);

        const QString running = QStringLiteral("kvsteer-studio-%1-abcdef").arg(QCoreApplication::applicationPid());
        const QString unnamed = QStringLiteral("kvsteer-studio-notes");
        QVERIFY(QDir(temp()).mkdir(running) && QDir(temp()).mkdir(unnamed));

        QProcess next;
        startStudio(next, home_.filePath(QStringLiteral("ready-next.txt")));
        const QStringList now = scratchFolders();
        QVERIFY2(!now.contains(left[0]), qPrintable(now.join(QStringLiteral(", "))));
        QVERIFY2(now.contains(running) && now.contains(unnamed), qPrintable(now.join(QStringLiteral(", "))));
        const QString own = QStringLiteral("kvsteer-studio-%1-").arg(next.processId());
        QCOMPARE(now.filter(own).size(), 1);
        terminate(next);
        QCOMPARE(scratchFolders(), (QStringList{running, unnamed}));
    }

    void sessionOnTheCommandLineIsOpened() {
        // A session asking the demo model "What color is the square?" of the red circle's scene: it
        // answers "green", where the demo scene a start without a session opens answers "red".
        // QApplication took --session FILE for X11 session management, and the studio opened the
        // demo scene.
        kvsteer::ui::SessionDocument s;
        s.modelDirectory = QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR);
        QFile image(QStringLiteral(KVSTEER_STUDIO_DEMO_IMAGES_DIR "/red_circle.png"));
        QVERIFY(image.open(QIODevice::ReadOnly));
        s.imageBytes = image.readAll();
        s.imageName = QStringLiteral("red_circle.png");
        s.prompt = QStringLiteral("What color is the square?");
        s.generation.maxNewTokens = 4;
        const QString path = home_.filePath(QStringLiteral("square.kvsession"));
        QString error;
        QVERIFY2(kvsteer::ui::SessionFile::save(path, s, &error), qPrintable(error));
        for (const QStringList& how : {QStringList{QStringLiteral("--session"), path}, QStringList{QStringLiteral("--session=") + path}}) {
            const QString ready = home_.filePath(QStringLiteral("ready-session-%1.txt").arg(how.size()));
            QProcess studio;
            startStudioWith(studio, how + QStringList{QStringLiteral("--run")}, ready);
            QFile f(ready);
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QString answers = QString::fromUtf8(f.readAll());
            QVERIFY2(answers.startsWith(QStringLiteral("unsteered: green")), qPrintable(how.join(QLatin1Char(' ')) + QStringLiteral(": ") + answers));
            terminate(studio);
        }
    }
};

QTEST_GUILESS_MAIN(TestStudioProcess)
#include "test_studio_process.moc"
