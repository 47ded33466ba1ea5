#include "studio/AtlasController.h"

#include "studio/ErrorReporter.h"
#include "studio/ImageController.h"
#include "studio/ModelController.h"
#include "widgets/AtlasPanel.h"
#include "widgets/AtlasView.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/SteeringPanel.h"
#include "worker/Worker.h"

namespace kvsteer::ui {

AtlasController::AtlasController(Worker* worker, ErrorReporter* errors, const ModelController* model, const ImageController* image,
                                 const RunPanes& panes, AtlasPanel* panel, QObject* parent)
    : QObject(parent), worker_(worker), errors_(errors), model_(model), image_(image), panes_(panes), panel_(panel) {
    registerAtlasTypes();
    connect(this, &AtlasController::atlasRequested, worker, &Worker::runAtlas, Qt::QueuedConnection);
    connect(worker, &Worker::atlasStarted, this, &AtlasController::onStarted);
    connect(worker, &Worker::atlasCell, this, &AtlasController::onCell);
    connect(worker, &Worker::atlasFinished, this, &AtlasController::onFinished);
    connect(worker, &Worker::atlasFailed, this, &AtlasController::onFailed);
    connect(panel, &AtlasPanel::runRequested, this, &AtlasController::run);
    connect(panel, &AtlasPanel::stopRequested, this, &AtlasController::stop);
    connect(panel->view(), &AtlasView::cellClicked, this, &AtlasController::adopt);
}

PlanSettings AtlasController::withoutAxes(PlanSettings p) const {
    p.layerFrom = 0;
    p.layerTo = -1;
    if (started_.setsValues) p.cv = 0, p.cvByLayer.clear();
    if (started_.setsKeys) p.ck = 0, p.ckByLayer.clear();
    return p;
}

// A model, and what it steers: an image (a text-only model steers its prompt's token strip) and a question.
bool AtlasController::canRun() const {
    const bool needsImage = !model_->info().textOnly();
    return !model_->loading() && model_->info().valid() && (!needsImage || image_->ready()) && !panes_.prompt->prompt().trimmed().isEmpty();
}

void AtlasController::run() {
    if (!canRun()) {
        errors_->show(tr("Atlas"), model_->info().textOnly() ? tr("The atlas needs a question.") : tr("The atlas needs a model, an image and a question."));
        return;
    }
    QString error;
    AtlasRequest req;
    req.strengths = panel_->strengths(&error);
    if (!error.isEmpty()) {
        errors_->show(tr("Atlas strengths"), error);
        return;
    }
    req.layerRanges = panel_->layerRanges();
    req.maxNewTokens = panel_->maxNewTokens();
    start(req, tr("Prefill and the unsteered answer…"));
}

// A strength for vectors just computed: their scale is new, so the plan's c_v (or c_k) may be far
// too strong or too weak for them. One atlas row on the plan's own layers, five strengths around
// the plan's (c/4 … 4c), 8 tokens each; the weakest strength whose answer differs from the
// unsteered one without degenerating becomes the plan's. The atlas dock shows the row it read.
void AtlasController::propose() {
    if (running_ || !canRun()) return;
    const PlanSettings plan = panes_.steering->planSettings();
    const int last = model_->info().layers - 1;
    const int to = plan.layerTo < 0 ? last : plan.layerTo;
    AtlasRequest req;
    req.layerRanges = {plan.layerFrom == 0 && to == last ? QStringLiteral("all") : QStringLiteral("%1-%2").arg(plan.layerFrom).arg(to)};
    req.maxNewTokens = 8;
    proposing_ = true;
    start(req, tr("Finding a strength for the new vectors…"));
}

// The request's grid on the current question, map and plan, on the worker; an atlas before it is dropped.
void AtlasController::start(AtlasRequest req, const QString& status) {
    req.id = nextId_++;
    req.prompt = panes_.prompt->prompt().trimmed();
    req.strength = panes_.canvas->strength();
    req.plan = panes_.steering->planSettings();
    worker_->cancelAtlasesBefore(req.id);
    activeId_ = req.id;
    running_ = true;
    started_ = AtlasStarted();
    atlasPlan_ = req.plan;
    panel_->setRunning(true);
    panel_->setStatus(status);
    Q_EMIT stateChanged();
    Q_EMIT atlasRequested(req);
}

void AtlasController::finishProposal() {
    proposing_ = false;
    const AtlasView* view = panel_->view();
    QStringList tried;
    for (double s : started_.strengths) tried << QString::number(s, 'g', 4);
    const QString coefficient = started_.setsKeys && !started_.setsValues ? QStringLiteral("c_k") : started_.setsKeys ? QStringLiteral("c_k = c_v")
                                                                                                                       : QStringLiteral("c_v");
    for (int column = 0; column < view->columns(); ++column) {
        const AtlasCellResult& cell = view->cell(column);   // the one row
        if (!cell.valid() || cell.outcome != AtlasOutcome::Different) continue;
        adopt(cell);
        Q_EMIT proposed(tr("%1 %2 proposed for these vectors: the weakest of %3 that changes the answer (“%4”) without degenerating, "
                           "on the plan's layers %5 (atlas, 8 tokens each).")
                            .arg(coefficient, QString::number(started_.setsValues ? cell.cv : cell.ck, 'g', 4), tried.join(QStringLiteral(", ")),
                                 cell.text.trimmed(), cell.layers));
        return;
    }
    Q_EMIT proposed(tr("No %1 of %2 changes the answer cleanly on the plan's layers: the plan is left as it was; try other layers "
                       "or strengths in the atlas.")
                        .arg(coefficient, tried.join(QStringLiteral(", "))));
}

void AtlasController::stop() {
    proposing_ = false;
    worker_->cancelAtlasesBefore(nextId_);   // every atlas asked for so far, queued or running
    if (!running_) return;
    running_ = false;
    panel_->setRunning(false);
    panel_->setStatus(tr("Stopped: %1 of %2 cells").arg(panel_->view()->finishedCells()).arg(panel_->view()->rows() * panel_->view()->columns()));
    Q_EMIT stateChanged();
}

void AtlasController::invalidate() {
    if (running_) stop();
    if (panel_->view()->columns() > 0 && !panel_->view()->stale()) {
        panel_->view()->setStale(true);
        panel_->setStatus(tr("Out of date"));
    }
}

void AtlasController::clear() {
    if (running_) stop();
    panel_->view()->clear();
    panel_->setStatus(QString());
}

void AtlasController::onPlanChanged(const PlanSettings& plan) {
    if (panel_->view()->columns() > 0 || running_) {
        // Known axes only once the worker has said which coefficient a strength is.
        if (started_.atlasId == 0 || withoutAxes(plan) != withoutAxes(atlasPlan_)) invalidate();
    }
    refreshSelection();
}

void AtlasController::setAvailability(bool canRun, const QString& why) { panel_->setCanRun(canRun, why); }

void AtlasController::onStarted(const AtlasStarted& info) {
    if (info.atlasId != activeId_) return;
    started_ = info;
    panel_->view()->start(info);
    panel_->setStatus(tr("unsteered: “%1” · 0 of %2 cells").arg(info.unsteeredText, QString::number(info.layerLabels.size() * info.strengths.size())));
    refreshSelection();
}

void AtlasController::onCell(const AtlasCellResult& cell) {
    if (cell.atlasId != activeId_) return;
    panel_->view()->setCell(cell);
    refreshSelection();
    panel_->setStatus(tr("unsteered: “%1” · %2 of %3 cells")
                          .arg(started_.unsteeredText)
                          .arg(panel_->view()->finishedCells())
                          .arg(panel_->view()->rows() * panel_->view()->columns()));
}

void AtlasController::onFinished(const AtlasFinished& info) {
    if (info.atlasId != activeId_) return;
    lastFinished_ = info;
    if (running_) {
        running_ = false;
        panel_->setRunning(false);
        if (!info.cancelled)
            panel_->setStatus(tr("unsteered: “%1” · %2 cells in %3 s").arg(started_.unsteeredText).arg(info.cells).arg(info.ms / 1000.0, 0, 'f', 2));
        if (proposing_ && !info.cancelled) finishProposal();
        Q_EMIT stateChanged();
    }
    Q_EMIT finished(info);
}

void AtlasController::onFailed(quint64 id, const QString& message) {
    if (id != activeId_) return;
    running_ = false;
    proposing_ = false;
    panel_->setRunning(false);
    panel_->setStatus(tr("Failed"));
    errors_->show(tr("Atlas"), message);
    Q_EMIT stateChanged();
    AtlasFinished f;
    f.atlasId = id;
    f.cancelled = true;
    Q_EMIT finished(f);
}

void AtlasController::adopt(const AtlasCellResult& cell) {
    PlanSettings p = panes_.steering->planSettings();
    if (started_.setsValues) p.cv = cell.cv, p.cvByLayer.clear();   // the cell's one value, on every layer
    if (started_.setsKeys) p.ck = cell.ck, p.ckByLayer.clear();
    p.layerFrom = cell.layerIds.isEmpty() ? 0 : cell.layerIds.front();
    p.layerTo = cell.layerIds.isEmpty() ? -1 : cell.layerIds.back();
    panes_.steering->setPlanSettings(p);   // planChanged: a live re-run, and the selection follows
}

void AtlasController::refreshSelection() {
    AtlasView* view = panel_->view();
    const PlanSettings p = panes_.steering->planSettings();
    int selected = -1;
    for (int i = 0; i < view->rows() * view->columns() && selected < 0; ++i) {
        const AtlasCellResult& c = view->cell(i);
        if (!c.valid()) continue;
        const int from = c.layerIds.isEmpty() ? 0 : c.layerIds.front();
        const int to = c.layerIds.isEmpty() ? -1 : c.layerIds.back();
        const bool layersMatch = from == p.layerFrom && (to == p.layerTo || (c.layerIds.isEmpty() && p.layerTo == model_->info().layers - 1));
        if (layersMatch && (!started_.setsValues || c.cv == p.cv) && (!started_.setsKeys || c.ck == p.ck)) selected = i;
    }
    view->setSelected(selected);
}

} // namespace kvsteer::ui
