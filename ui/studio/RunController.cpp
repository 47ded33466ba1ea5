#include "studio/RunController.h"

#include "studio/ErrorReporter.h"
#include "studio/ImageController.h"
#include "studio/ModelController.h"
#include "studio/StudioStatusBar.h"
#include "widgets/HeatmapPanel.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/SteeringPanel.h"
#include "widgets/StreamView.h"
#include "worker/Worker.h"

#include <QTimer>

namespace kvsteer::ui {

namespace {
constexpr int kLiveDebounceMs = 150;
}

RunController::RunController(Worker* worker, ErrorReporter* errors, StudioStatusBar* status, const ModelController* model,
                             const ImageController* image, const RunPanes& panes, QObject* parent)
    : QObject(parent), worker_(worker), errors_(errors), status_(status), model_(model), image_(image), panes_(panes) {
    liveTimer_ = new QTimer(this);
    liveTimer_->setSingleShot(true);
    liveTimer_->setInterval(kLiveDebounceMs);
    connect(liveTimer_, &QTimer::timeout, this, &RunController::run);

    connect(this, &RunController::runRequested, worker, &Worker::run, Qt::QueuedConnection);
    connect(this, &RunController::heatmapRequested, worker, &Worker::requestHeatmap, Qt::QueuedConnection);
    connect(worker, &Worker::runStarted, this, &RunController::onStarted);
    connect(worker, &Worker::tokenPair, this, &RunController::onTokenPair);
    connect(worker, &Worker::runFinished, this, &RunController::onFinished);
    connect(worker, &Worker::runFailed, this, &RunController::onFailed);
    connect(worker, &Worker::heatmapReady, this, &RunController::onHeatmap);
    connect(worker, &Worker::heatmapFailed, this, [this](const QString& message) { errors_->show(tr("Heatmap"), message); });
}

void RunController::run() {
    liveTimer_->stop();
    if (model_->loading() || !model_->info().valid() || !sceneReady()) {
        if (!model_->loading())
            errors_->show(tr("Cannot run"), !model_->info().valid() ? tr("No model is loaded. Use File → Open Model Directory….")
                                                                    : tr("No image is open. Use File → Open Image…, drop an image on the canvas or paste one."));
        return;
    }
    if (panes_.prompt->prompt().trimmed().isEmpty()) {
        errors_->show(tr("Cannot run"), tr("Type a question about the image first."));
        return;
    }
    RunRequest req;
    req.id = nextRunId_++;
    req.prompt = panes_.prompt->prompt().trimmed();
    req.strength = panes_.canvas->strength();
    req.plan = panes_.steering->planSettings();
    req.generation = panes_.prompt->generation();
    req.heatmap = panes_.heatmaps->settings();
    worker_->cancelRunsBefore(req.id);   // a running prefill stops at its next layer, a decode at its next step
    worker_->setHeatmapSettings(req.heatmap);
    activeRunId_ = req.id;
    running_ = true;
    haveRun_ = true;
    panes_.streams->setStale(false);
    Q_EMIT stateChanged();
    Q_EMIT runRequested(req);
}

// An image is open, or the model is text-only (the prompt's tokens are the canvas).
bool RunController::sceneReady() const { return image_->ready() || model_->info().textOnly(); }

void RunController::stop() {
    liveTimer_->stop();
    worker_->cancelRunsBefore(nextRunId_);
}

// A new image, model or session: the last run described another scene, so Live waits for a Run and
// the run summary drops its "Last run" line.
void RunController::forgetRun() {
    haveRun_ = false;
    if (lastPrefill_.runId == 0) return;
    lastPrefill_ = RunStarted();
    Q_EMIT summaryChanged();
}

void RunController::editChanged() {
    PromptPanel* prompt = panes_.prompt;
    if (panes_.streams->tokenCount(false) > 0 && !running_ && !(prompt->live() && haveRun_)) panes_.streams->setStale(true);
    if (!prompt->live() || !haveRun_ || !model_->info().valid() || !sceneReady() || model_->loading()) return;
    liveTimer_->start();   // restarts: a burst of strokes becomes one run, 150 ms after the last
}

void RunController::setHeatmapSettings(const HeatmapSettings& settings) {
    worker_->setHeatmapSettings(settings);
    if (!running_) Q_EMIT heatmapRequested();   // a running decode picks them up at its next step
}

void RunController::onStarted(const RunStarted& info) {
    if (info.runId != activeRunId_) return;
    lastStarted_ = info;
    panes_.streams->beginRun(info);
    if (info.prefilled) lastPrefill_ = info;
    Q_EMIT summaryChanged();
    if (info.prefilled)
        status_->message(tr("Prefilled %1 tokens in %2 ms; edit %3 ms").arg(info.promptTokens).arg(info.prefillMs, 0, 'f', 0).arg(info.editMs, 0, 'f', 1), 5000);
}

void RunController::onTokenPair(const TokenPair& pair) {
    if (pair.runId != activeRunId_) return;
    panes_.streams->addPair(pair);
}

void RunController::onFinished(const RunFinished& info) {
    if (info.runId != activeRunId_) {   // superseded (e.g. by a stroke): its panes were already replaced
        Q_EMIT finished(info);
        return;
    }
    running_ = false;
    panes_.streams->finishRun(info);
    lastFinished_ = info;
    Q_EMIT summaryChanged();
    Q_EMIT stateChanged();
    if (!info.cancelled && info.steps > 0)
        status_->message(info.decodeMs < 1000 ? tr("Both answers done: %n decoding step(s) in %1 ms", nullptr, info.steps).arg(info.decodeMs, 0, 'f', 1)
                                              : tr("Both answers done: %n decoding step(s) in %1 s", nullptr, info.steps).arg(info.decodeMs / 1000.0, 0, 'f', 2),
                         5000);
    Q_EMIT answered(info);
    Q_EMIT finished(info);
}

void RunController::onFailed(quint64 runId, const QString& message) {
    if (runId != activeRunId_) return;
    running_ = false;
    panes_.streams->failRun(message);
    Q_EMIT stateChanged();
    errors_->show(tr("Run failed"), message);
}

void RunController::onHeatmap(const HeatmapData& data) {
    if (data.runId == activeRunId_ || data.runId == lastStarted_.runId) panes_.heatmaps->setData(data);
}

} // namespace kvsteer::ui
