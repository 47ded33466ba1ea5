#pragma once
// Helpers shared by the studio's GUI tests (test_studio, _paligemma, _qwen): the options a
// test window starts with, a brush stroke through cells, Run-and-wait, and closing the dialogs a
// check provoked. Plain Qt: include it after TestSupport.h (torch before any Qt header).
#include "studio/MainWindow.h"
#include "studio/StudioOptions.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/SteeringPanel.h"

#include <QApplication>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

namespace kvsteer::test {

constexpr int kLoadTimeoutMs = 60000;
constexpr int kRunTimeoutMs = 60000;

inline QString referenceImage(const QString& name = QStringLiteral("red_square_336x336.png")) {
    return QString::fromStdString(referenceDir()) + QStringLiteral("/images/") + name;
}

// A studio that starts with `modelDirectory`, two threads, no remembered settings, no recovery
// offer and no questions on close.
inline ui::StudioOptions studioOptions(const QString& modelDirectory, const QString& recoveryPath) {
    ui::StudioOptions o;
    o.modelDirectory = modelDirectory;
    o.load.threads = 2;
    o.loadOverride = true;
    o.offerRecovery = false;
    o.demoScene = false;   // a test opens what it needs (test_studio_atlas checks the first run's demo scene)
    o.recoveryPath = recoveryPath;
    o.confirmClose = false;
    o.useSettings = false;
    return o;
}

// Closes every message box the studio opened; returns their texts.
inline QStringList closeMessageBoxes() {
    QStringList texts;
    for (QWidget* w : QApplication::topLevelWidgets())
        if (auto* box = qobject_cast<QMessageBox*>(w); box && box->isVisible()) {
            texts << box->text();
            box->close();
        }
    return texts;
}

// Drags the brush through the given cells, given as (col, row): press on the first, move through,
// release on the last.
inline void stroke(ui::PatchCanvas* canvas, const QVector<QPoint>& cells, Qt::MouseButton button = Qt::LeftButton) {
    QTest::mousePress(canvas, button, Qt::NoModifier, canvas->cellCenter(cells.front().y(), cells.front().x()).toPoint());
    for (const QPoint& c : cells) QTest::mouseMove(canvas, canvas->cellCenter(c.y(), c.x()).toPoint());
    QTest::mouseRelease(canvas, button, Qt::NoModifier, canvas->cellCenter(cells.back().y(), cells.back().x()).toPoint());
}

// Clicks the Steering panel's "Compute vectors" (the panel's source as set) and waits for the
// vectors; false when the button is missing or disabled, or no vectors came.
inline bool computeVectors(ui::MainWindow* w) {
    QSignalSpy vectors(w, &ui::MainWindow::vectorsChanged);
    QPushButton* compute = nullptr;
    for (QPushButton* b : w->steeringPanel()->findChildren<QPushButton*>())
        if (b->text() == QStringLiteral("Compute vectors")) compute = b;
    if (!compute || !compute->isEnabled()) return false;
    QTest::mouseClick(compute, Qt::LeftButton);
    return vectors.wait(kRunTimeoutMs) && w->vectors().valid();
}

// Clicks Run with `maxTokens` and waits for that run (not an earlier, superseded one) to finish.
inline bool runAndWait(ui::MainWindow* w, int maxTokens, ui::RunFinished* finished = nullptr) {
    ui::GenerationSettings g = w->promptPanel()->generation();
    g.maxNewTokens = maxTokens;
    w->promptPanel()->setGeneration(g);
    QSignalSpy done(w, &ui::MainWindow::runDone);
    if (!w->promptPanel()->runButton()->isEnabled()) return false;
    QTest::mouseClick(w->promptPanel()->runButton(), Qt::LeftButton);
    const quint64 id = w->activeRunId();
    for (int i = 0; i < 20; ++i) {
        if (done.isEmpty() && !done.wait(kRunTimeoutMs)) {
            qWarning("run %llu did not finish; last error: %s", id, qPrintable(w->lastErrorText()));
            return false;
        }
        while (!done.isEmpty()) {
            const ui::RunFinished f = done.takeFirst().at(0).value<ui::RunFinished>();
            if (f.runId != id) continue;   // an earlier run, superseded
            if (finished) *finished = f;
            return true;
        }
    }
    return false;
}

} // namespace kvsteer::test
