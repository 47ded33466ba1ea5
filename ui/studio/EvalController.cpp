#include "studio/EvalController.h"

#include "studio/ErrorReporter.h"
#include "studio/ImageController.h"
#include "studio/ModelController.h"
#include "studio/SteeringController.h"
#include "widgets/EvalPanel.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/SteeringPanel.h"
#include "worker/Worker.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>

namespace kvsteer::ui {

EvalController::EvalController(Worker* worker, ErrorReporter* errors, const ModelController* model, ImageController* image,
                               SteeringController* steering, RunController* runs, const RunPanes& panes, EvalPanel* panel, QWidget* window)
    : QObject(window), worker_(worker), errors_(errors), model_(model), image_(image), steering_(steering), runs_(runs), panes_(panes),
      panel_(panel), window_(window) {
    registerEvalTypes();
    connect(this, &EvalController::evalRequested, worker, &Worker::runEval, Qt::QueuedConnection);
    connect(worker, &Worker::evalStarted, this, &EvalController::onStarted);
    connect(worker, &Worker::evalItem, this, &EvalController::onItem);
    connect(worker, &Worker::evalFinished, this, &EvalController::onFinished);
    connect(worker, &Worker::evalFailed, this, &EvalController::onFailed);
    connect(panel, &EvalPanel::evaluateRequested, this, &EvalController::start);
    connect(panel, &EvalPanel::stopRequested, this, &EvalController::stop);
    connect(panel, &EvalPanel::browseRequested, this, &EvalController::browse);
    connect(panel, &EvalPanel::itemActivated, this, &EvalController::open);
    // An opened item runs once its image and cells are in; a newer image, or a failure, ends the
    // wait. Queued: the window shows the image (and clears the last run's panes) first.
    connect(
        image, &ImageController::shown, this,
        [this](const ImageInfo& info) {
            if (!opened_ || opened_->imageId == 0) return;
            if (info.id > opened_->imageId) opened_.reset();
            else if (info.id == opened_->imageId) opened_->imageId = 0;
            runOpenedItemIfLive();
        },
        Qt::QueuedConnection);
    connect(image, &ImageController::failed, this, [this](quint64 id) {
        if (opened_ && id >= opened_->imageId) opened_.reset();
    });
    connect(
        steering, &SteeringController::maskLoaded, this,
        [this](const QString& spec) {
            if (!opened_ || spec != opened_->mask) return;
            opened_->mask.clear();
            runOpenedItemIfLive();
        },
        Qt::QueuedConnection);
    connect(steering, &SteeringController::maskLoadFailed, this, [this](const QString& spec) {
        if (opened_ && spec == opened_->mask) opened_.reset();
    });
}

void EvalController::browse() {
    const QString path = QFileDialog::getOpenFileName(window_, tr("Choose a dataset"), QFileInfo(panel_->dataset()).absolutePath(),
                                                      tr("JSON Lines (*.jsonl *.json);;All files (*)"));
    if (!path.isEmpty()) panel_->setDataset(path);
}

void EvalController::start() {
    if (running_) return;
    if (model_->loading() || !model_->info().valid()) {
        errors_->show(tr("Evaluate"), tr("Load a model first (File → Open Model Directory…)."));
        return;
    }
    if (!QFileInfo(panel_->dataset()).isFile()) {
        errors_->show(tr("Evaluate"), tr("Choose a dataset: a JSONL file in POPE's format or with id, image, question and answer."));
        return;
    }
    if (panel_->outDir().isEmpty()) panel_->setDataset(panel_->dataset());
    EvalRequest req;
    req.id = nextId_++;
    req.dataset = panel_->dataset();
    req.outDir = panel_->outDir();
    req.metric = panel_->metric();
    req.itemRegions = panel_->itemRegions();
    req.strength = panes_.canvas->strength();
    req.plan = panes_.steering->planSettings();
    req.maxNewTokens = panel_->maxNewTokens();
    activeId_ = req.id;
    running_ = true;
    done_ = total_ = 0;
    panel_->clearResults();
    panel_->setRunning(true);
    panel_->setStatus(tr("Starting…"));
    Q_EMIT evalRequested(req);
}

void EvalController::stop() {
    if (!running_) return;
    worker_->cancelEvals();
    panel_->setStatus(tr("Stopping after the current batch…"));
}

void EvalController::open(const EvalItemRow& row) {
    opened_.reset();
    OpenedItem item;
    if (!row.image.isEmpty() && !(item.imageId = image_->openFile(row.image))) return;   // (an error was shown)
    panes_.prompt->setPrompt(row.question);
    // The item's cells, read by the Worker after the image it just received (its queue is ordered).
    item.mask = row.hasBox ? QStringLiteral("box:%1,%2,%3,%4").arg(row.box[0]).arg(row.box[1]).arg(row.box[2]).arg(row.box[3]) : row.mask;
    if (!item.mask.isEmpty()) steering_->importMaskFrom(item.mask);
    const bool live = panes_.prompt->live();
    panel_->setStatus(live ? tr("Item %1 is on the canvas; it runs as soon as its image and cells are in.").arg(row.id)
                           : tr("Item %1 is on the canvas: press Run to see both answers.").arg(row.id));
    // With Live on it runs by itself, as a frontier point or the demo scene does.
    if (live) {
        opened_ = item;
        runOpenedItemIfLive();
    }
}

void EvalController::runOpenedItemIfLive() {
    if (!opened_ || opened_->imageId != 0 || !opened_->mask.isEmpty()) return;
    opened_.reset();
    if (panes_.prompt->live()) runs_->run();
}

void EvalController::onStarted(const EvalStarted& info) {
    if (info.evalId != activeId_) return;
    done_ = info.alreadyDone;
    total_ = info.total;
    panel_->setProgress(done_, total_);
    panel_->setStatus(info.alreadyDone ? tr("Continuing: %1 of %2 items were done before.").arg(info.alreadyDone).arg(info.total)
                                       : tr("Evaluating %1 items…").arg(info.total));
}

void EvalController::onItem(const EvalItemRow& row) {
    if (row.evalId != activeId_) return;
    panel_->addItem(row);
    panel_->setProgress(++done_, total_);
}

void EvalController::onFinished(const EvalFinished& info) {
    if (info.evalId != activeId_) return;
    running_ = false;
    lastFinished_ = info;
    panel_->setRunning(false);
    if (info.stopped) {
        panel_->setStatus(tr("Stopped: %1 holds every finished item. Evaluate continues.").arg(QDir::toNativeSeparators(info.outDir)));
    } else {
        panel_->showSummary(info);
        const int acc = info.metricNames.indexOf(QStringLiteral("accuracy"));
        panel_->setStatus(tr("%1 items: accuracy %2 → %3 (%4 [%5, %6]); steering changed %7 % of the answers; McNemar p = %8.")
                              .arg(info.items)
                              .arg(info.unsteered.value(acc), 0, 'f', 3)
                              .arg(info.steered.value(acc), 0, 'f', 3)
                              .arg(info.difference.value(acc), 0, 'f', 3)
                              .arg(info.low.value(acc), 0, 'f', 3)
                              .arg(info.high.value(acc), 0, 'f', 3)
                              .arg(100 * info.changedFraction, 0, 'f', 1)
                              .arg(info.mcnemarP, 0, 'g', 3));
    }
    Q_EMIT finished(info);
}

void EvalController::onFailed(quint64 id, const QString& message) {
    if (id != activeId_) return;
    running_ = false;
    panel_->setRunning(false);
    // The proposed folder holds another run (a study's, or one with other settings): this one
    // goes beside it.
    const QString taken = panel_->outDir();
    if (JobForm::folderTaken(message)) {
        if (const QString fresh = panel_->proposeFreshOutDir(); !fresh.isEmpty()) {
            start();
            panel_->setStatus(tr("%1 holds another run; this one goes to %2.")
                                  .arg(QDir::toNativeSeparators(taken), QDir::toNativeSeparators(fresh)));
            return;
        }
    }
    panel_->setStatus(message);
    errors_->show(tr("Evaluate"), message);
}

} // namespace kvsteer::ui
