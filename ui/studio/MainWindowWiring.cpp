// MainWindow's wiring: which signal of a pane, an action or a controller reaches which slot.
// (MainWindow.cpp builds the panes and controllers and handles what the signals bring.)
#include "studio/MainWindow.h"

#include "studio/AtlasController.h"
#include "studio/DemoScene.h"
#include "studio/DocumentController.h"
#include "studio/ErrorReporter.h"
#include "studio/HelpDialogs.h"
#include "studio/ImageController.h"
#include "studio/ModelController.h"
#include "studio/PythonHandOff.h"
#include "studio/RunController.h"
#include "studio/StartupSequence.h"
#include "studio/SteeringController.h"
#include "studio/StudioActions.h"
#include "studio/StudioSettings.h"
#include "studio/StudioStatusBar.h"
#include "widgets/HeatmapPanel.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/RunSummary.h"
#include "widgets/SteeringPanel.h"
#include "widgets/StreamView.h"
#include "worker/Worker.h"

#include <QAction>
#include <QCoreApplication>
#include <QDir>
#include <QUndoStack>

namespace kvsteer::ui {

// ---- wiring -----------------------------------------------------------------------------------

void MainWindow::wirePanes() {
    connect(canvas_, &PatchCanvas::strengthChanged, this, [this](const StrengthGrid& g) {
        steering_->setPaintedCells(g.paintedCells(), g.size());
        atlas_->invalidate();   // a stroke: the atlas was made for another map
        refreshRunSummary();
        editChanged();
    });
    connect(canvas_, &PatchCanvas::hoverCell, this, [this](int r, int c, float v) {
        // A picture in views: the canvas's cell is one of several tokens it reaches (no one index).
        const QString cell = status_->showsViews() ? tr("crops row %1, col %2").arg(r).arg(c)
                                                   : tr("row %1, col %2 · token %3").arg(r).arg(c).arg(r * canvas_->strength().cols + c);
        status_->showHover(r < 0 ? QString() : tr("%1 · strength %2").arg(cell).arg(v, 0, 'f', 2));
    });
    connect(canvas_, &PatchCanvas::imageFileDropped, this, &MainWindow::openImageFile);
    connect(canvas_, &PatchCanvas::imageDropped, this, [this](const QImage& img) { images_->openImage(img, tr("dropped image")); });
    // The grid this image is laid out on (Qwen2-VL: its own per image) everywhere it is named or drawn.
    connect(canvas_, &PatchCanvas::gridSizeChanged, this, [this](int rows, int cols) {
        status_->showGrid(rows, cols);
        if (models_->info().valid()) heatmaps_->setModel(models_->info().layers, models_->info().kvHeads, rows, cols);
    });
    connect(heatmaps_, &HeatmapPanel::cellClicked, canvas_, &PatchCanvas::highlightCell);
    connect(heatmaps_, &HeatmapPanel::saveRequested, this, &MainWindow::saveHeatmapDialog);
    connect(heatmaps_, &HeatmapPanel::settingsChanged, this, [this](const HeatmapSettings& s) {
        runs_->setHeatmapSettings(s);
        document_->markDirty();
    });
    connect(heatmaps_, &HeatmapPanel::layerSelected, document_, &DocumentController::markDirty);

    connect(prompt_, &PromptPanel::runRequested, this, &MainWindow::run);
    connect(prompt_, &PromptPanel::stopRequested, this, &MainWindow::stop);
    connect(prompt_, &PromptPanel::promptEdited, this, [this] {
        atlas_->invalidate();
        streams_->setStale(streams_->tokenCount(false) > 0);
        refreshAvailability();
        document_->markDirty();
    });
    connect(prompt_, &PromptPanel::promptChanged, this, &MainWindow::refreshAvailability);
    connect(prompt_, &PromptPanel::generationChanged, this, &MainWindow::editChanged);
    connect(prompt_, &PromptPanel::liveToggled, actions_->live, &QAction::setChecked);

    connect(steering_, &SteeringPanel::planChanged, this, [this](const PlanSettings& plan) {
        atlas_->onPlanChanged(plan);
        refreshRunSummary();
        editChanged();
    });
    connect(steering_, &SteeringPanel::computeRequested, steeringCtl_, [this](const RecipeRequest& r) { steeringCtl_->compute(r, true); });
    connect(steering_, &SteeringPanel::chooseTargetImageRequested, steeringCtl_, &SteeringController::chooseTargetImage);
    connect(steering_, &SteeringPanel::importVectorsRequested, steeringCtl_, &SteeringController::importDialog);
    connect(steering_, &SteeringPanel::exportVectorsRequested, steeringCtl_, &SteeringController::exportDialog);
    connect(steering_, &SteeringPanel::clearVectorsRequested, steeringCtl_, &SteeringController::clear);
    connect(steering_, &SteeringPanel::exportMaskRequested, steeringCtl_, &SteeringController::exportMaskDialog);
    connect(steering_, &SteeringPanel::importMaskRequested, steeringCtl_, &SteeringController::importMaskDialog);
    connect(steering_, &SteeringPanel::copyPythonRequested, python_, &PythonHandOff::copyToClipboard);
    connect(steering_, &SteeringPanel::loadTextPairsRequested, steeringCtl_, &SteeringController::loadTextPairsDialog);
    connect(undo_, &QUndoStack::cleanChanged, document_, &DocumentController::updateTitle);
}

void MainWindow::wireActions() {
    StudioActions* a = actions_;
    connect(a->openImage, &QAction::triggered, images_, &ImageController::openDialog);
    connect(a->paste, &QAction::triggered, images_, &ImageController::paste);
    connect(a->openModel, &QAction::triggered, models_, &ModelController::openDialog);
    connect(a->openDemoScene, &QAction::triggered, this, &MainWindow::openDemoScene);
    connect(a->copyPython, &QAction::triggered, python_, &PythonHandOff::copyToClipboard);
    connect(a->openSession, &QAction::triggered, document_, &DocumentController::openDialog);
    connect(a->save, &QAction::triggered, document_, &DocumentController::save);
    connect(a->saveAs, &QAction::triggered, document_, &DocumentController::saveAs);
    connect(a->importVectors, &QAction::triggered, steeringCtl_, &SteeringController::importDialog);
    connect(a->exportVectors, &QAction::triggered, steeringCtl_, &SteeringController::exportDialog);
    connect(a->exportMask, &QAction::triggered, steeringCtl_, &SteeringController::exportMaskDialog);
    connect(a->importMask, &QAction::triggered, steeringCtl_, &SteeringController::importMaskDialog);
    connect(a->saveHeatmaps, &QAction::triggered, this, &MainWindow::saveHeatmapDialog);
    connect(a->preferences, &QAction::triggered, this, [this] {
        if (models_->editPreferences()) rememberSettings();
    });
    connect(a->about, &QAction::triggered, this, [this] { showAbout(this, models_->info()); });
    connect(a->run, &QAction::triggered, this, &MainWindow::run);
    connect(a->stop, &QAction::triggered, this, &MainWindow::stop);
    connect(a->live, &QAction::toggled, prompt_, &PromptPanel::setLive);
    connect(a, &StudioActions::recentImageChosen, this, &MainWindow::openImageFile);
    connect(a, &StudioActions::recentModelChosen, this, &MainWindow::openModel);
    connect(settings_, &StudioSettings::recentChanged, a, [this] {
        actions_->setRecent(settings_->recent(StudioSettings::Recent::Images), settings_->recent(StudioSettings::Recent::Models));
    });
}

void MainWindow::wireControllers() {
    connect(errors_, &ErrorReporter::shown, this, &MainWindow::errorShown);
    connect(worker_, &Worker::progress, status_, &StudioStatusBar::showProgress);
    connect(worker_, &Worker::idle, status_, &StudioStatusBar::hideProgress);
    connect(worker_, &Worker::imageSetAside, status_, [this](const QString& message) { status_->message(message, 15000); });

    connect(models_, &ModelController::aboutToLoad, this, &MainWindow::stop);
    connect(models_, &ModelController::stateChanged, this, [this] {
        refreshModelStatus();
        refreshAvailability();
    });
    connect(models_, &ModelController::loaded, this, &MainWindow::onModelLoaded);
    connect(models_, &ModelController::loadCancelled, this, [this](const QString& dir) {
        status_->message(tr("Loading %1 was cancelled").arg(QDir(dir).dirName()), 5000);
    });
    // A session's map may wait on the grid of a model that did not come: the one loaded runs it.
    for (auto ended : {&ModelController::loadFailed, &ModelController::loadCancelled})
        connect(models_, ended, this, [this] {
            if (models_->info().valid()) canvas_->setGridSize(models_->info().gridRows, models_->info().gridCols);
        });

    // A new image stops the run (its answers belong to the old image), not a model load in flight.
    connect(images_, &ImageController::aboutToOpen, runs_, &RunController::stop);
    connect(images_, &ImageController::shown, this, &MainWindow::onImageShown);
    connect(images_, &ImageController::failed, document_, &DocumentController::onImageFailed);

    connect(runs_, &RunController::stateChanged, this, &MainWindow::refreshAvailability);
    connect(runs_, &RunController::summaryChanged, this, &MainWindow::refreshRunSummary);
    connect(steeringCtl_, &SteeringController::maskNoteChanged, this, &MainWindow::refreshRunSummary);
    connect(runs_, &RunController::answered, document_, &DocumentController::markDirty);
    connect(runs_, &RunController::finished, this, &MainWindow::runDone);

    // A vector file's suggestions are applied unless a session (which has its own plan) is restored.
    connect(worker_, &Worker::vectorsReady, steeringCtl_,
            [this](const VectorsInfo& info) { steeringCtl_->onVectorsReady(info, !document_->restoring()); });
    connect(steeringCtl_, &SteeringController::vectorsReady, this, [this](const VectorsInfo& info) {
        atlas_->invalidate();
        refreshRunSummary();
        editChanged();
        Q_EMIT vectorsChanged(info);
    });
    connect(steeringCtl_, &SteeringController::vectorsCleared, this, [this] {
        atlas_->invalidate();
        document_->markDirty();
        Q_EMIT vectorsChanged(steeringCtl_->vectors());
    });
    connect(steeringCtl_, &SteeringController::inputsEdited, document_, &DocumentController::markDirty);
    // New vectors, new scale: the atlas proposes a strength for them, and the panel says how.
    connect(steeringCtl_, &SteeringController::strengthWanted, atlas_, &AtlasController::propose);
    connect(atlas_, &AtlasController::proposed, this, [this](const QString& howChosen) {
        steering_->showProposal(howChosen);
        status_->message(howChosen, 10000);
    });
    connect(steeringCtl_, &SteeringController::vectorsExported, this, &MainWindow::vectorsExported);
    connect(steeringCtl_, &SteeringController::maskExported, this, &MainWindow::maskExported);

    // A session's answers replace the ones being decoded. A model load in flight goes on: the
    // session may be for that very model (a recovery answered at start-up), and if not, it opens its own.
    connect(document_, &DocumentController::aboutToApply, this, [this] {
        runs_->stop();
        atlas_->stop();
    });
    connect(document_, &DocumentController::saved, this, &MainWindow::sessionSaved);
    connect(document_, &DocumentController::opened, this, &MainWindow::sessionOpened);
    connect(document_, &DocumentController::autosaved, this, &MainWindow::autosaved);
    connect(QCoreApplication::instance(), &QCoreApplication::aboutToQuit, document_, &DocumentController::flushAutosave);   // quit on a signal

    // Last: its steps settle after the window has shown what each signal brought.
    startup_ = new StartupSequence(options_, {errors_, status_, settings_, models_, images_, steeringCtl_, runs_, document_,
                                              {prompt_, canvas_, steering_, heatmaps_, streams_}, this, atlas_, study_},
                                   this);
    if (!options_.studyDir.isEmpty()) showStudy();
}

} // namespace kvsteer::ui
