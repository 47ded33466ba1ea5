// The studio's widgets driven as a person would, on a real model — the bundled demo model when it
// is there, else the reference tiny-llava checkpoint (KVSTEER_STUDIO_TEST_MODEL=DIR picks another).
// Every check is about the studio, not about what the model answers, except the last one, which
// needs the demo model: painting the red circle and steering toward blue turns the answer blue.
// Painting with
// QTest mouse events sets exactly the plan's strength map, undo restores it, Run streams tokens
// into both panes, Stop cancels within one decode step, a stroke while decoding restarts the
// decode, heatmaps update per step and follow the painted map, exported vector and mask files load
// back in the core, a saved session reopens identically, autosave writes a recovery file, and bad
// input becomes a dialog while the studio keeps working. Runs under QT_QPA_PLATFORM=offscreen.
//
#include "TestStudio.h"

using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;

void TestStudio::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(tmp_.isValid());
    qInfo("model: %s", qPrintable(studioModelDir()));
    model_ = loadModel(studioModelDir().toStdString());
    w_ = std::make_unique<MainWindow>(testOptions(tmp_.filePath(QStringLiteral("recovery.kvsession"))));
    w_->resize(1400, 900);
    w_->show();
    QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
    w_->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w_.get()));
    QSignalSpy ready(w_.get(), &MainWindow::modelReady);
    QVERIFY(ready.wait(kLoadTimeoutMs));
    QCOMPARE(w_->modelInfo().layers, model_->config().text.numLayers);
    QCOMPARE(w_->canvas()->strength().rows, 24);
    QSignalSpy shown(w_.get(), &MainWindow::imageShown);
    w_->openImageFile(referenceImage());
    QVERIFY(shown.wait(kLoadTimeoutMs));
    QVERIFY(w_->canvas()->hasImage());
    QCOMPARE(w_->canvas()->image().size(), QSize(336, 336));
    w_->promptPanel()->setPrompt(QStringLiteral("What color is the square?"));
    w_->promptPanel()->setLive(false);
    GenerationSettings g = w_->promptPanel()->generation();
    g.stopAtEos = false;   // step counts below must not depend on when the model says it is done
    w_->promptPanel()->setGeneration(g);
    QCOMPARE(w_->errorCount(), 0);
}

// A stroke painted with QTest mouse events is exactly the plan's strength map.
void TestStudio::paintStrokeSetsStrengthMap() {
    PatchCanvas* canvas = w_->canvas();
    canvas->setTool(PatchCanvas::Tool::Brush);
    canvas->setBrushSize(1);
    canvas->setBrushStrength(0.75);
    const StrengthGrid before = canvas->strength();
    QVERIFY(before.isZero());
    stroke(canvas, {{3, 5}, {4, 5}, {5, 5}, {6, 5}, {7, 5}});   // (col, row): a horizontal run on row 5
    const StrengthGrid& s = canvas->strength();
    for (int r = 0; r < s.rows; ++r)
        for (int c = 0; c < s.cols; ++c) {
            const bool inside = r == 5 && c >= 3 && c <= 7;
            QCOMPARE(s.at(r, c), inside ? 0.75f : 0.0f);
        }
    QCOMPARE(w_->undoStack()->count(), 1);

    // A wider brush covers the neighbours; the eraser (right button) takes them away again.
    canvas->setBrushSize(3);
    canvas->setBrushStrength(1.0);
    stroke(canvas, {{15, 15}});
    QCOMPARE(canvas->strength().at(15, 15), 1.0f);
    QCOMPARE(canvas->strength().at(14, 15), 1.0f);
    QCOMPARE(canvas->strength().at(16, 16), 1.0f);   // diagonal: centre 1.41 cells away, within the radius 1.5
    QCOMPARE(canvas->strength().at(15, 17), 0.0f);   // 2 cells away
    QCOMPARE(canvas->strength().paintedCells(), 5 + 9);
    stroke(canvas, {{15, 15}}, Qt::RightButton);
    QCOMPARE(canvas->strength().at(15, 15), 0.0f);
    QCOMPARE(canvas->strength().at(14, 15), 0.0f);

    // The rectangle tool: cells (r 10..12, c 2..4).
    canvas->setTool(PatchCanvas::Tool::Rectangle);
    stroke(canvas, {{2, 10}, {4, 12}});
    for (int r = 10; r <= 12; ++r)
        for (int c = 2; c <= 4; ++c) QCOMPARE(canvas->strength().at(r, c), 1.0f);
    QCOMPARE(canvas->strength().paintedCells(), 5 + 9);
    canvas->setTool(PatchCanvas::Tool::Brush);

    // The map the Worker builds the plan from, read back from the plan's tensor.
    RunFinished f;
    QVERIFY(runAndWait(4, &f));
    QCOMPARE(w_->lastRunStarted().appliedStrength, canvas->strength());
}

// Undo (Ctrl+Z) restores the map before each edit, redo (Ctrl+Shift+Z) brings it back.
void TestStudio::undoRestoresMap() {
    PatchCanvas* canvas = w_->canvas();
    QUndoStack* undo = w_->undoStack();
    const StrengthGrid now = canvas->strength();
    const int edits = undo->count();
    QVERIFY(edits >= 4);
    canvas->setFocus();
    QTest::keyClick(w_.get(), Qt::Key_Z, Qt::ControlModifier);   // the rectangle
    QCOMPARE(canvas->strength().paintedCells(), 5);
    QTest::keyClick(w_.get(), Qt::Key_Z, Qt::ControlModifier);   // the erase
    QTest::keyClick(w_.get(), Qt::Key_Z, Qt::ControlModifier);   // the 3-cell dab
    QTest::keyClick(w_.get(), Qt::Key_Z, Qt::ControlModifier);   // the first stroke
    QVERIFY(canvas->strength().isZero());
    for (int i = 0; i < 4; ++i) QTest::keyClick(w_.get(), Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(canvas->strength(), now);
    // Fill / invert / clear are single undoable edits too.
    canvas->invert();   // s -> 1 - s: the 9 full cells become 0, the 0.75 stroke 0.25
    QCOMPARE(canvas->strength().paintedCells(), 576 - 9);
    QCOMPARE(canvas->strength().at(5, 3), 0.25f);
    undo->undo();
    QCOMPARE(canvas->strength(), now);
}

// Run streams tokens into both panes, one step at a time, and records the answers.
void TestStudio::runStreamsBothPanes() {
    QSignalSpy appended(w_->streamView(), &StreamView::tokensAppended);
    RunFinished f;
    QVERIFY(runAndWait(12, &f));
    QVERIFY(!f.cancelled);
    QCOMPARE(f.steps, 12);
    QCOMPARE(appended.count(), 12);
    for (int i = 0; i < appended.count(); ++i) QCOMPARE(appended.at(i).at(0).toInt(), i);   // token by token, in order
    StreamView* v = w_->streamView();
    QCOMPARE(v->tokenCount(false), 12);
    QCOMPARE(v->tokenCount(true), 12);
    QCOMPARE(v->text(false), f.unsteeredText);
    QCOMPARE(v->text(true), f.steeredText);
    // Every token carries its top-5, the chosen token among them, for the hover tooltip.
    for (bool steered : {false, true})
        for (const StreamToken& t : v->tokens(steered)) {
            QCOMPARE(t.top.size(), 5);
            QCOMPARE(t.top.front().id, t.id);   // greedy: the most likely one
            QVERIFY(t.top.front().probability >= t.top.back().probability);
        }
    QVERIFY(v->flow(true)->tooltipFor(0).contains(QStringLiteral("%")));
    // With no vectors the add operator leaves the cache alone: the two panes agree, nothing is highlighted.
    QVERIFY(!w_->vectors().valid());
    QCOMPARE(v->text(false), v->text(true));
    QCOMPARE(v->flow(true)->differingCount(), 0);
    QVERIFY(!w_->lastRunStarted().note.isEmpty());
}

// Attention heatmaps are refreshed as tokens stream; the last one belongs to the last step.
void TestStudio::heatmapUpdatesPerStep() {
    HeatmapPanel* h = w_->heatmapPanel();
    HeatmapSettings s = h->settings();
    s.metric = Metric::Attention;
    s.head = -1;
    h->setSettings(s);
    QSignalSpy updated(h, &HeatmapPanel::updated);
    RunFinished f;
    QVERIFY(runAndWait(8, &f));
    QTRY_VERIFY_WITH_TIMEOUT(h->data().step == f.steps - 1 && h->updateCount() > 0 && !updated.isEmpty(), 10000);
    const HeatmapData& d = h->data();
    QCOMPARE(d.metric, Metric::Attention);
    QCOMPARE(d.layers, w_->modelInfo().layers);
    QCOMPARE(d.rows, 24);
    QCOMPARE(d.cols, 24);
    double total = 0;
    for (float v : d.values) {
        QVERIFY(std::isfinite(v) && v >= 0 && v <= 1);
        total += v;
    }
    QVERIFY(total > 0);
    // Clicking a cell of the large map points at that patch on the image.
    QSignalSpy clicked(h, &HeatmapPanel::cellClicked);
    QCustomPlot* plot = h->detailPlot();
    const QPoint at(int(plot->xAxis->coordToPixel(7)), int(plot->yAxis->coordToPixel(3)));
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, at);
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.at(0).at(0).toInt(), 3);
    QCOMPARE(clicked.at(0).at(1).toInt(), 7);
}

// Vectors from the painted-region recipe; ‖ΔV‖ is nonzero exactly on the painted cells.
void TestStudio::regionVectorsAndDeltaHeatmap() {
    SteeringPanel* panel = w_->steeringPanel();
    panel->setSource(VectorSource::PaintedRegion);
    QSignalSpy ready(w_.get(), &MainWindow::vectorsChanged);
    QPushButton* compute = nullptr;
    for (QPushButton* b : panel->findChildren<QPushButton*>())
        if (b->text() == QStringLiteral("Compute vectors")) compute = b;
    QVERIFY(compute && compute->isEnabled());
    QTest::mouseClick(compute, Qt::LeftButton);
    QVERIFY(ready.wait(kRunTimeoutMs));
    QVERIFY(w_->vectors().valid());
    QCOMPARE(w_->vectors().recipe, QStringLiteral("region"));
    QCOMPARE(w_->vectors().layersWithVectors, w_->modelInfo().layers);

    PlanSettings p = panel->planSettings();
    p.op = SteeringOperator::Add;
    p.cv = 4.0;
    panel->setPlanSettings(p);
    HeatmapSettings s = w_->heatmapPanel()->settings();
    s.metric = Metric::ValueDelta;
    w_->heatmapPanel()->setSettings(s);
    RunFinished f;
    QVERIFY(runAndWait(6, &f));
    HeatmapPanel* h = w_->heatmapPanel();
    QTRY_VERIFY_WITH_TIMEOUT(h->data().metric == Metric::ValueDelta && h->data().runId == w_->lastRunStarted().runId, 10000);
    const StrengthGrid& map = w_->canvas()->strength();
    for (int l = 0; l < h->data().layers; ++l)
        for (int r = 0; r < 24; ++r)
            for (int c = 0; c < 24; ++c) {
                if (map.at(r, c) > 0) QVERIFY2(h->data().at(l, r, c) > 0, "a painted cell was not edited");
                else QCOMPARE(h->data().at(l, r, c), 0.0f);
            }
    QVERIFY(w_->lastRunStarted().note.isEmpty());
}

// Stop cancels within one decode step of the click.
void TestStudio::stopCancelsWithinOneStep() {
    GenerationSettings g = w_->promptPanel()->generation();
    g.maxNewTokens = 2000;
    w_->promptPanel()->setGeneration(g);
    QSignalSpy appended(w_->streamView(), &StreamView::tokensAppended);
    QSignalSpy done(w_.get(), &MainWindow::runDone);
    QTest::mouseClick(w_->promptPanel()->runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(appended.count() >= 3, kRunTimeoutMs);
    QVERIFY(w_->promptPanel()->stopButton()->isEnabled());
    // Stop sets the worker's cancel flag directly (no queued hop). Reading the step counter right
    // after it, at most the one step already in flight may still complete.
    QTest::mouseClick(w_->promptPanel()->stopButton(), Qt::LeftButton);
    const int stepsAtClick = w_->worker()->stepsCompleted();
    QVERIFY(done.wait(kRunTimeoutMs));
    const RunFinished f = done.at(0).at(0).value<RunFinished>();
    QVERIFY(f.cancelled);
    QVERIFY2(f.steps - stepsAtClick <= 1, qPrintable(QStringLiteral("%1 steps after Stop").arg(f.steps - stepsAtClick)));
    QVERIFY(f.steps < 2000);
    QVERIFY(!w_->running());
    QVERIFY(!w_->promptPanel()->stopButton()->isEnabled());
}

// Stop during the prefill stops the prefill (between two decoder layers), and nothing
// half-written is kept: the next run prefills again and answers. Stop is clicked while the
// worker thread waits in its own "Prefilling" progress signal, so it lands before the prefill
// is done however fast the machine is.
void TestStudio::stopDuringPrefillStopsIt() {
    const QString before = w_->promptPanel()->prompt();
    w_->promptPanel()->setPrompt(QStringLiteral("How many shapes are there?"));   // a new prompt: a new prefill
    QPushButton* stopButton = w_->promptPanel()->stopButton();
    const QMetaObject::Connection stopper = connect(
        w_->worker(), &Worker::progress, w_->worker(),
        [stopButton](const QString& stage, int, int) {
            if (!stage.startsWith(QLatin1String("Prefilling"))) return;
            QMetaObject::invokeMethod(stopButton, [stopButton] { QTest::mouseClick(stopButton, Qt::LeftButton); },
                                      Qt::BlockingQueuedConnection);
        },
        Qt::DirectConnection);
    QSignalSpy appended(w_->streamView(), &StreamView::tokensAppended);
    QSignalSpy done(w_.get(), &MainWindow::runDone);
    QTest::mouseClick(w_->promptPanel()->runButton(), Qt::LeftButton);
    QVERIFY(done.wait(kRunTimeoutMs));
    disconnect(stopper);
    const RunFinished stopped = done.at(0).at(0).value<RunFinished>();
    QVERIFY(stopped.cancelled);
    QCOMPARE(stopped.steps, 0);
    QCOMPARE(appended.count(), 0);
    QVERIFY(!w_->running());

    done.clear();
    QTest::mouseClick(w_->promptPanel()->runButton(), Qt::LeftButton);
    QVERIFY(done.wait(kRunTimeoutMs));
    QVERIFY(!done.at(0).at(0).value<RunFinished>().cancelled);
    QVERIFY(w_->lastRunStarted().prefilled);   // afresh: a prefill that had run to its end would have been kept
    QVERIFY(appended.count() > 0);
    w_->promptPanel()->setPrompt(before);
}

// Live: a stroke while decoding cancels the running decode and starts a new one from the
// kept prefill (no second prefill), with the new map. The stroke lands while the worker thread
// is held in its first token's signal, and the worker stays held for a second, well past the
// 150 ms debounce: on a fast machine the whole decode would otherwise end before the restart.
void TestStudio::strokeWhileDecodingRestarts() {
    w_->promptPanel()->setLive(true);
    GenerationSettings g = w_->promptPanel()->generation();
    g.maxNewTokens = 2000;
    w_->promptPanel()->setGeneration(g);
    w_->canvas()->setBrushSize(1);
    MainWindow* window = w_.get();
    std::atomic<quint64> firstRun{0};
    std::atomic<bool> held{false};
    const QMetaObject::Connection strokeAtFirstToken = connect(
        w_->worker(), &Worker::tokenPair, w_->worker(),
        [window, &firstRun, &held](const TokenPair&) {
            if (held.exchange(true)) return;
            QMetaObject::invokeMethod(window, [window, &firstRun] {
                firstRun = window->lastRunStarted().runId;
                stroke(window->canvas(), {{20, 20}, {21, 20}});
            }, Qt::BlockingQueuedConnection);
            QThread::msleep(1000);
        },
        Qt::DirectConnection);
    QSignalSpy done(w_.get(), &MainWindow::runDone);
    QTest::mouseClick(w_->promptPanel()->runButton(), Qt::LeftButton);
    QVERIFY(done.wait(kRunTimeoutMs));   // the first run, cancelled by the debounced restart
    disconnect(strokeAtFirstToken);
    const RunFinished first = done.at(0).at(0).value<RunFinished>();
    QVERIFY(first.cancelled);
    QCOMPARE(first.runId, firstRun.load());
    QVERIFY2(first.steps <= 2, qPrintable(QStringLiteral("%1 steps").arg(first.steps)));   // stopped at its next step
    QTRY_VERIFY_WITH_TIMEOUT(w_->lastRunStarted().runId > firstRun, kRunTimeoutMs);
    QVERIFY(!w_->lastRunStarted().prefilled);   // the snapshot was kept
    QCOMPARE(w_->lastRunStarted().appliedStrength, w_->canvas()->strength());
    QCOMPARE(w_->lastRunStarted().appliedStrength.at(20, 21), 1.0f);
    w_->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w_->running(), kRunTimeoutMs);
    w_->promptPanel()->setLive(false);
}

// Export writes a vector file the core loads back for this model, with the plan and the mask.
void TestStudio::exportedVectorsLoadInCore() {
    const QString path = tmp_.filePath(QStringLiteral("exported.safetensors"));
    QSignalSpy exported(w_.get(), &MainWindow::vectorsExported);
    w_->exportVectorsTo(path);
    QVERIFY(exported.wait(kRunTimeoutMs));
    SteeringFileInfo info;
    const SteeringVectors v = loadSteeringFile(path.toStdString(), *model_, &info);
    QCOMPARE(v.numLayers(), model_->config().text.numLayers);
    for (int l = 0; l < v.numLayers(); ++l) QVERIFY(v.hasLayer(l));
    QVERIFY(info.op == w_->steeringPanel()->planSettings().op);
    QCOMPARE(info.cv.front(), w_->steeringPanel()->planSettings().cv);
    QCOMPARE(info.recipe, std::string("region"));
    QVERIFY(v.mask.defined());
    for (int r = 0; r < 24; ++r)
        for (int c = 0; c < 24; ++c) QCOMPARE(v.mask[r][c].item<float>(), w_->canvas()->strength().at(r, c));

    // ...and importing it again gives the same vectors (the studio validates it too).
    QSignalSpy changed(w_.get(), &MainWindow::vectorsChanged);
    w_->importVectorsFrom(path);
    QVERIFY(changed.wait(kRunTimeoutMs));
    QVERIFY(w_->vectors().fromFile);
}

void TestStudio::exportedMaskLoadsBack() {
    const QString path = tmp_.filePath(QStringLiteral("mask.png"));
    QSignalSpy exported(w_.get(), &MainWindow::maskExported);
    w_->exportMaskTo(path);
    QVERIFY(exported.wait(kRunTimeoutMs));
    QVERIFY(QImage(path).size() == QSize(336, 336));
    const at::Tensor m = loadMask(path.toStdString(), 24, 24);
    const StrengthGrid& s = w_->canvas()->strength();
    for (int r = 0; r < 24; ++r)
        for (int c = 0; c < 24; ++c) QVERIFY(std::abs(m[r][c].item<float>() - s.at(r, c)) < 1.0f / 255);
}

// The demo: the red circle painted (with the rectangle tool over its patches), vectors toward the
// blue-circle image computed in the Steering panel, Run: unsteered says red, steered says blue.
void TestStudio::demoModelFlipsRedToBlue() {
    const bool forced = qEnvironmentVariableIntValue("KVSTEER_STUDIO_TEST_FLIP") == 1;   // another demo-like model
    if (!forced && (!haveDemoModel() || studioModelDir() != demoModelDir())) QSKIP("the bundled demo model is not built yet");
    QString images = QStringLiteral(KVSTEER_STUDIO_DEMO_IMAGES_DIR);
    if (!QFileInfo::exists(images + QStringLiteral("/index.json"))) {
        images = tmp_.filePath(QStringLiteral("demo-images"));
        const auto r = test::runCli({"demo-images", "--out", images.toStdString()});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
    }
    QFile index(images + QStringLiteral("/index.json"));
    QVERIFY(index.open(QIODevice::ReadOnly));
    QJsonObject box;
    for (const QJsonValue& e : QJsonDocument::fromJson(index.readAll()).array())
        if (e.toObject().value(QStringLiteral("file")).toString() == QLatin1String("red_circle.png"))
            box = e.toObject().value(QStringLiteral("circle_grid_box")).toObject();
    QVERIFY(!box.isEmpty());

    closeMessageBoxes();
    QSignalSpy shown(w_.get(), &MainWindow::imageShown);
    w_->openImageFile(images + QStringLiteral("/red_circle.png"));
    QVERIFY(shown.wait(kLoadTimeoutMs));
    w_->promptPanel()->setPrompt(QStringLiteral("What color is the circle?"));
    GenerationSettings g = w_->promptPanel()->generation();
    g.stopAtEos = true;
    w_->promptPanel()->setGeneration(g);

    PatchCanvas* canvas = w_->canvas();
    canvas->clearAll();
    canvas->setBrushStrength(1.0);
    canvas->setTool(PatchCanvas::Tool::Rectangle);
    const int r0 = box.value(QStringLiteral("row0")).toInt(), c0 = box.value(QStringLiteral("col0")).toInt();
    const int r1 = box.value(QStringLiteral("row1")).toInt(), c1 = box.value(QStringLiteral("col1")).toInt();
    stroke(canvas, {{c0, r0}, {c1, r1}});
    QCOMPARE(canvas->strength().paintedCells(), (r1 - r0 + 1) * (c1 - c0 + 1));
    canvas->setTool(PatchCanvas::Tool::Brush);

    SteeringPanel* panel = w_->steeringPanel();
    PlanSettings p;
    p.op = SteeringOperator::Add;
    panel->setPlanSettings(p);
    panel->setSource(VectorSource::SecondImage);
    QFile blue(images + QStringLiteral("/blue_circle.png"));
    QVERIFY(blue.open(QIODevice::ReadOnly));
    panel->setTargetImage(blue.fileName(), blue.readAll());
    panel->setRecipeOptions(false, true, false);   // post-RoPE, one direction per patch
    QSignalSpy ready(w_.get(), &MainWindow::vectorsChanged);
    for (QPushButton* b : panel->findChildren<QPushButton*>())
        if (b->text() == QStringLiteral("Compute vectors")) QTest::mouseClick(b, Qt::LeftButton);
    QVERIFY(ready.wait(kRunTimeoutMs));
    QCOMPARE(w_->vectors().recipe, QStringLiteral("image-pair"));

    RunFinished f;
    QVERIFY(runAndWait(8, &f));
    // The demo model reads this scene's circle as red; painted and steered, it says blue.
    QVERIFY2(f.unsteeredText.contains(QStringLiteral("red")), qPrintable(f.unsteeredText));
    QVERIFY2(f.steeredText.contains(QStringLiteral("blue")), qPrintable(f.steeredText));
    QVERIFY(w_->streamView()->firstDivergence() >= 0);
}

// The maps a .npy of `kvsteer heatmaps` holds, [layers * rows * cols] (float32, C order).
static std::vector<float> readNpy(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    const QByteArray bytes = f.readAll();
    const int headerLength = uchar(bytes[8]) | (uchar(bytes[9]) << 8);
    const qsizetype start = 10 + headerLength;
    std::vector<float> values(size_t(bytes.size() - start) / sizeof(float));
    std::memcpy(values.data(), bytes.constData() + start, values.size() * sizeof(float));
    return values;
}

// The same image, prompt, vectors and painted rectangle through the studio and through
// `kvsteer heatmaps`: the files hold the panel's numbers (the studio's run and the CLI's are one
// code path, so they agree to float rounding of the same operations: exactly).
void TestStudio::cliHeatmapsEqualThePanels() {
    if (!haveDemoModel() || studioModelDir() != demoModelDir()) QSKIP("the bundled demo model is not built yet");
    const QString image = QStringLiteral(KVSTEER_DEMO_IMAGE);
    QSignalSpy shown(w_.get(), &MainWindow::imageShown);
    w_->openImageFile(image);
    QVERIFY(shown.wait(kLoadTimeoutMs));
    w_->promptPanel()->setPrompt(QStringLiteral("What color is the circle?"));
    GenerationSettings g = w_->promptPanel()->generation();
    g.stopAtEos = true;   // as the CLI decodes: the last step's attention is the same step
    w_->promptPanel()->setGeneration(g);
    QSignalSpy changed(w_.get(), &MainWindow::vectorsChanged);
    w_->importVectorsFrom(QStringLiteral(KVSTEER_DEMO_VECTORS));
    QVERIFY(changed.wait(kRunTimeoutMs));
    PlanSettings p;
    p.ck = 0;
    p.cv = 16;
    w_->steeringPanel()->setPlanSettings(p);
    PatchCanvas* canvas = w_->canvas();
    canvas->clearAll();
    canvas->setBrushStrength(1.0);
    canvas->setTool(PatchCanvas::Tool::Rectangle);
    stroke(canvas, {{9, 6}, {18, 15}});   // (col, row): rect:6,9,15,18
    canvas->setTool(PatchCanvas::Tool::Brush);
    QCOMPARE(canvas->strength().paintedCells(), 100);

    HeatmapPanel* h = w_->heatmapPanel();
    for (const auto& [metric, name] : {std::pair{Metric::ValueDelta, "value-delta"}, std::pair{Metric::Attention, "attention"}}) {
        HeatmapSettings s = h->settings();
        s.metric = metric;
        s.head = -1;
        s.steeredRow = true;
        h->setSettings(s);
        RunFinished f;
        QVERIFY(runAndWait(8, &f));
        QVERIFY2(f.steeredText.contains(QStringLiteral("blue")), qPrintable(f.steeredText));
        QTRY_VERIFY_WITH_TIMEOUT(h->data().metric == metric && h->data().runId == f.runId &&
                                     (metric != Metric::Attention || h->data().step == f.steps - 1),
                                 10000);
        const QString out = tmp_.filePath(QStringLiteral("%1.npy").arg(QLatin1String(name)));
        const auto r = runCli({"heatmaps", "--image", image.toStdString(), "--prompt", "What color is the circle?", "--vectors",
                               KVSTEER_DEMO_VECTORS, "--mask", "rect:6,9,15,18", "--ck", "0", "--cv", "16", "--metric", name,
                               "--max-new-tokens", "8", "--out", out.toStdString()});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const std::vector<float> file = readNpy(out);
        const HeatmapData& d = h->data();
        QCOMPARE(int(file.size()), d.layers * 24 * 24);
        double total = 0;
        for (int l = 0; l < d.layers; ++l)
            for (int row = 0; row < 24; ++row)
                for (int c = 0; c < 24; ++c) {
                    const float want = d.at(l, row, c), got = file[size_t((l * 24 + row) * 24 + c)];
                    QVERIFY2(std::abs(got - want) <= 1e-6f * std::max(1.0f, std::abs(want)),
                             qPrintable(QStringLiteral("%1 layer %2 cell (%3, %4): file %5, panel %6").arg(name).arg(l).arg(row).arg(c).arg(got).arg(want)));
                    total += want;
                }
        QVERIFY(total > 0);
    }
}

void TestStudio::cleanupTestCase() {
    closeMessageBoxes();
    w_.reset();
}

QTEST_MAIN(TestStudio)
