// The studio's documents, files and errors (the TestStudio fixture, after test_studio.cpp's
// checks on the same window): a saved session reopens identically and runs to the same answers,
// autosave writes a recovery file, images arrive by paste and drop, a model load can be
// cancelled or refused, and bad input becomes a dialog while the studio keeps working.
#include "TestStudio.h"

using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;

// Save → open in a fresh window restores image, prompt, settings, map, vectors and answers.
void TestStudio::sessionRoundTrip() {
    PlanSettings p = w_->steeringPanel()->planSettings();
    p.op = SteeringOperator::NormPreserving;
    p.ck = 2.5;
    p.cv = 0.5;
    p.propagate = true;
    p.layerFrom = 1;
    p.layerTo = -1;
    p.heads = {1};
    w_->steeringPanel()->setPlanSettings(p);
    w_->promptPanel()->setPrompt(QStringLiteral("Where is the square?"));
    RunFinished f;
    QVERIFY(runAndWait(6, &f));
    const QString path = tmp_.filePath(QStringLiteral("saved.kvsession"));
    QSignalSpy saved(w_.get(), &MainWindow::sessionSaved);
    QVERIFY(w_->saveSessionTo(path));
    QCOMPARE(saved.count(), 1);

    auto other = std::make_unique<MainWindow>(testOptions(tmp_.filePath(QStringLiteral("recovery2.kvsession"))));
    other->show();
    QSignalSpy ready(other.get(), &MainWindow::modelReady);
    QVERIFY(ready.wait(kLoadTimeoutMs));
    QSignalSpy shown(other.get(), &MainWindow::imageShown);
    QSignalSpy vectors(other.get(), &MainWindow::vectorsChanged);
    QVERIFY(other->openSessionFrom(path));
    QVERIFY(shown.wait(kLoadTimeoutMs));
    QTRY_VERIFY_WITH_TIMEOUT(other->vectors().valid(), kLoadTimeoutMs);

    QCOMPARE(other->imageBytes(), w_->imageBytes());
    QCOMPARE(other->canvas()->image(), w_->canvas()->image());
    QCOMPARE(other->promptPanel()->prompt(), QStringLiteral("Where is the square?"));
    QVERIFY(other->promptPanel()->generation() == w_->promptPanel()->generation());
    QCOMPARE(other->canvas()->strength(), w_->canvas()->strength());
    QVERIFY(other->steeringPanel()->planSettings() == p);
    QCOMPARE(other->vectors().blob, w_->vectors().blob);
    QCOMPARE(other->streamView()->text(false), f.unsteeredText);
    QCOMPARE(other->streamView()->text(true), f.steeredText);
    QCOMPARE(other->streamView()->tokens(true).size(), w_->streamView()->tokens(true).size());
    QCOMPARE(other->streamView()->tokens(true).front().top.size(), 5);
    QCOMPARE(other->heatmapPanel()->settings().metric, w_->heatmapPanel()->settings().metric);
    QCOMPARE(other->errorCount(), 0);

    // The reopened session runs from where it was saved: same plan, same answers.
    RunFinished again;
    QVERIFY(test::runAndWait(other.get(), 6, &again));
    QCOMPARE(again.steeredText, f.steeredText);
    QCOMPARE(other->streamView()->text(true), f.steeredText);
    QCOMPARE(other->streamView()->text(false), f.unsteeredText);
}

// Every change is autosaved to the recovery file, which holds the current map.
void TestStudio::autosaveWritesRecoveryFile() {
    QSignalSpy autosaved(w_.get(), &MainWindow::autosaved);
    w_->canvas()->setBrushSize(1);
    stroke(w_->canvas(), {{0, 0}});
    QVERIFY(autosaved.wait(5000));
    SessionDocument s;
    QString error;
    QVERIFY2(SessionFile::load(w_->recoveryPath(), &s, &error), qPrintable(error));
    QCOMPARE(s.strength, w_->canvas()->strength());
    QCOMPARE(s.vectorsBlob, w_->vectors().blob);
}

// An image arrives by paste (Ctrl+V on the canvas) and by drag-and-drop as well as by dialog.
void TestStudio::pasteAndDropOpenImages() {
    QImage img(200, 120, QImage::Format_RGB888);
    img.fill(QColor(20, 200, 40));
    QApplication::clipboard()->setImage(img);
    if (QApplication::clipboard()->image().isNull()) QSKIP("this platform has no clipboard");
    QSignalSpy shown(w_.get(), &MainWindow::imageShown);
    w_->activateWindow();   // (the session test's window had the focus)
    QVERIFY(QTest::qWaitForWindowActive(w_.get()));
    w_->canvas()->setFocus();
    QTest::keyClick(w_->canvas(), Qt::Key_V, Qt::ControlModifier);
    QVERIFY(shown.wait(kLoadTimeoutMs));
    QCOMPARE(w_->canvas()->imageName(), QStringLiteral("pasted image"));
    QCOMPARE(w_->canvas()->image().size(), QSize(336, 336));   // shortest edge 336, centre crop
    QCOMPARE(w_->canvas()->image().pixelColor(168, 168), QColor(20, 200, 40));

    auto* mime = new QMimeData;
    mime->setUrls({QUrl::fromLocalFile(referenceImage())});
    QDragEnterEvent enter(QPoint(50, 50), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(w_->canvas(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(50, 50), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(w_->canvas(), &drop);
    QVERIFY(shown.wait(kLoadTimeoutMs));
    QCOMPARE(w_->canvas()->imageName(), QStringLiteral("red_square_336x336.png"));
    delete mime;
    // A new image needs a new prefill: the next run prefills again.
    RunFinished f;
    QVERIFY(runAndWait(2, &f));
    QVERIFY(w_->lastRunStarted().prefilled);
}

// Bad input becomes a readable dialog; the studio keeps its state and keeps working.
// A model load shows its progress in bytes and Stop cancels it: the model loaded before stays
// and runs. A model that cannot fit the memory budget is refused with a dialog, and the studio
// keeps running with the model it had.
void TestStudio::modelLoadCancelsAndRefuses() {
    closeMessageBoxes();
    const ModelInfo before = w_->modelInfo();
    MainWindow* window = w_.get();
    QList<int> maxima;
    const QMetaObject::Connection stopper = connect(
        w_->worker(), &Worker::progress, w_->worker(),
        [window, &maxima](const QString& stage, int, int maximum) {
            if (!stage.startsWith(QLatin1String("Loading model")) || maximum <= 0) return;
            maxima.append(maximum);
            QMetaObject::invokeMethod(window, [window] { window->stop(); }, Qt::BlockingQueuedConnection);
        },
        Qt::DirectConnection);
    QSignalSpy cancelled(w_->worker(), &Worker::modelLoadCancelled);
    QSignalSpy loaded(w_->worker(), &Worker::modelLoaded);
    w_->openModel(studioModelDir());
    QVERIFY(cancelled.wait(kLoadTimeoutMs));
    disconnect(stopper);
    QVERIFY(!maxima.isEmpty());   // progress had a size: the weights' MiB
    QCOMPARE(loaded.count(), 0);
    QCOMPARE(w_->modelInfo().directory, before.directory);
    QVERIFY(runAndWait(2));   // the model loaded before still runs

    const int errorsBefore = w_->errorCount();
    QSignalSpy errors(w_.get(), &MainWindow::errorShown);
    qputenv("KVSTEER_MEMORY_BUDGET", "1M");
    w_->openModel(studioModelDir());
    const bool shown = errors.wait(kLoadTimeoutMs);
    qunsetenv("KVSTEER_MEMORY_BUDGET");
    QVERIFY(shown);
    QCOMPARE(w_->errorCount(), errorsBefore + 1);
    QVERIFY(w_->lastErrorText().contains(QLatin1String("is available (KVSTEER_MEMORY_BUDGET)")));
    closeMessageBoxes();
    QCOMPARE(w_->modelInfo().directory, before.directory);
    QVERIFY(runAndWait(2));
}

void TestStudio::errorsAreDialogs() {
    closeMessageBoxes();
    const int errorsBefore = w_->errorCount();
    const QByteArray imageBefore = w_->imageBytes();

    // A corrupt image.
    const QString bad = tmp_.filePath(QStringLiteral("corrupt.png"));
    {
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("\x89PNG\r\n\x1a\n this is not really a png");
    }
    QSignalSpy errors(w_.get(), &MainWindow::errorShown);
    w_->openImageFile(bad);
    QVERIFY(errors.wait(kLoadTimeoutMs));
    QVERIFY(w_->lastErrorText().contains(QStringLiteral("corrupt.png")));
    QStringList boxes = closeMessageBoxes();
    QCOMPARE(boxes.size(), 1);
    QCOMPARE(w_->imageBytes(), imageBefore);
    QVERIFY(w_->imageReady());

    // A vector file made for another model.
    const QString foreign = tmp_.filePath(QStringLiteral("foreign.safetensors"));
    SteeringVectors v;
    for (int l = 0; l < model_->config().text.numLayers; ++l) {
        v.keys.push_back(at::randn({model_->config().text.numKvHeads, model_->config().text.headDim}));
        v.values.push_back(at::randn({model_->config().text.numKvHeads, model_->config().text.headDim}));
    }
    SteeringFileInfo info;
    info.modelName = "some-other-llava";
    info.configHash = "0123456789abcdef";
    saveSteeringFile(foreign.toStdString(), v, info);
    const QByteArray vectorsBefore = w_->vectors().blob;
    w_->importVectorsFrom(foreign);
    QVERIFY(errors.wait(kLoadTimeoutMs));
    QVERIFY(w_->lastErrorText().contains(QStringLiteral("foreign.safetensors")));
    boxes = closeMessageBoxes();
    QCOMPARE(boxes.size(), 1);
    QCOMPARE(w_->vectors().blob, vectorsBefore);

    // A directory that is no model: the dialog names it, the loaded model stays.
    const QString notModel = tmp_.filePath(QStringLiteral("not-a-model"));
    QDir().mkpath(notModel);
    w_->openModel(notModel);
    QVERIFY(errors.wait(kLoadTimeoutMs));
    QVERIFY(w_->lastErrorText().contains(QStringLiteral("not-a-model")));
    closeMessageBoxes();
    QCOMPARE(w_->errorCount(), errorsBefore + 3);

    // Still working: a run after all that.
    RunFinished f;
    QVERIFY(runAndWait(3, &f));
    QCOMPARE(f.steps, 3);
}
