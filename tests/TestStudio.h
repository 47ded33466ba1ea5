#pragma once
// The studio test's fixture (test_studio): one window on a real model, shared by the checks of
// painting, running and heatmaps (test_studio.cpp) and of documents, files and errors
// (test_studio_documents.cpp), which run in that order on the same window.
// torch (through the core) before any Qt header.
#include "TestSupport.h"
#include "models/ModelRegistry.h"
#include "steer/Mask.h"
#include "steer/SteeringVectors.h"

#include <ATen/ops/randn.h>

#include <cmath>
#include <filesystem>

#include "widgets/HeatmapPanel.h"
#include "studio/MainWindow.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "studio/SessionFile.h"
#include "widgets/SteeringPanel.h"
#include "widgets/StreamView.h"
#include "widgets/TokenFlow.h"
#include "worker/Worker.h"

#include "StudioTestSupport.h"

#include <qcustomplot.h>

#include <QClipboard>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;

namespace kvsteer::test {

inline QString demoModelDir() { return QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR); }
inline bool haveDemoModel() { return QFileInfo::exists(demoModelDir() + QStringLiteral("/config.json")); }

inline QString studioModelDir() {
    const QString env = qEnvironmentVariable("KVSTEER_STUDIO_TEST_MODEL");
    if (!env.isEmpty()) return env;
    return haveDemoModel() ? demoModelDir() : QString::fromStdString(test::referenceModelDir());
}

inline StudioOptions testOptions(const QString& recovery) { return studioOptions(studioModelDir(), recovery); }

} // namespace kvsteer::test


class TestStudio : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    std::unique_ptr<MainWindow> w_;
    std::shared_ptr<Model> model_;   // the core's own view, to check exported files

    // Clicks Run on this test's window and waits for that run to finish.
    bool runAndWait(int maxTokens, RunFinished* finished = nullptr) { return test::runAndWait(w_.get(), maxTokens, finished); }

private Q_SLOTS:
    void initTestCase();
    // A stroke painted with QTest mouse events is exactly the plan's strength map.
    void paintStrokeSetsStrengthMap();
    // Undo (Ctrl+Z) restores the map before each edit, redo (Ctrl+Shift+Z) brings it back.
    void undoRestoresMap();
    // Run streams tokens into both panes, one step at a time, and records the answers.
    void runStreamsBothPanes();
    // Attention heatmaps are refreshed as tokens stream; the last one belongs to the last step.
    void heatmapUpdatesPerStep();
    // Vectors from the painted-region recipe; ‖ΔV‖ is nonzero exactly on the painted cells.
    void regionVectorsAndDeltaHeatmap();
    // Stop cancels within one decode step of the click.
    void stopCancelsWithinOneStep();
    // Stop during the prefill stops the prefill (between two decoder layers), and nothing
    // half-written is kept: the next run prefills again and answers. Stop is clicked while the
    // worker thread waits in its own "Prefilling" progress signal, so it lands before the prefill
    // is done however fast the machine is.
    void stopDuringPrefillStopsIt();
    // Live: a stroke while decoding cancels the running decode and starts a new one from the
    // kept prefill (no second prefill), with the new map.
    void strokeWhileDecodingRestarts();
    // Export writes a vector file the core loads back for this model, with the plan and the mask.
    void exportedVectorsLoadInCore();
    void exportedMaskLoadsBack();
    // Save → open in a fresh window restores image, prompt, settings, map, vectors and answers.
    void sessionRoundTrip();
    // Every change is autosaved to the recovery file, which holds the current map.
    void autosaveWritesRecoveryFile();
    // An image arrives by paste (Ctrl+V on the canvas) and by drag-and-drop as well as by dialog.
    void pasteAndDropOpenImages();
    // Bad input becomes a readable dialog; the studio keeps its state and keeps working.
    // A model load shows its progress in bytes and Stop cancels it: the model loaded before stays
    // and runs. A model that cannot fit the memory budget is refused with a dialog, and the studio
    // keeps running with the model it had.
    void modelLoadCancelsAndRefuses();
    void errorsAreDialogs();
    // The demo: the red circle painted (with the rectangle tool over its patches), vectors toward the
    // blue-circle image computed in the Steering panel, Run: unsteered says red, steered says blue.
    void demoModelFlipsRedToBlue();
    // `kvsteer heatmaps` writes the maps the panel shows (‖ΔV‖ and attention) for the same run.
    void cliHeatmapsEqualThePanels();
    void cleanupTestCase();
};
