#include "studio/StudyController.h"

#include "studio/ErrorReporter.h"
#include "studio/ModelController.h"
#include "studio/SteeringController.h"
#include "widgets/FrontierPlot.h"
#include "widgets/StudyPanel.h"
#include "widgets/SteeringPanel.h"
#include "worker/Worker.h"

#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>

namespace kvsteer::ui {

StudyController::StudyController(Worker* worker, ErrorReporter* errors, const ModelController* model, SteeringController* steering,
                                 RunController* runs, const RunPanes& panes, StudyPanel* panel, QWidget* window)
    : QObject(window), worker_(worker), errors_(errors), model_(model), steering_(steering), runs_(runs), panes_(panes), panel_(panel),
      window_(window) {
    registerStudyTypes();
    connect(this, &StudyController::studyRequested, worker, &Worker::runStudy, Qt::QueuedConnection);
    connect(worker, &Worker::studyStarted, this, &StudyController::onStarted);
    connect(worker, &Worker::studyProgress, this, &StudyController::onProgress);
    connect(worker, &Worker::studyFinished, this, &StudyController::onFinished);
    connect(worker, &Worker::studyFailed, this, &StudyController::onFailed);
    connect(panel, &StudyPanel::studyRequested, this, &StudyController::start);
    connect(panel, &StudyPanel::stopRequested, this, &StudyController::stop);
    connect(panel, &StudyPanel::browseRequested, this, &StudyController::browse);
    connect(panel, &StudyPanel::planChosen, this, &StudyController::apply);
    connect(panel, &StudyPanel::setupEdited, this, &StudyController::edited);
    // The Steering panel's vector file is the grid's first proposal. A plan's file, once loaded,
    // is the vectors its run steers with (the file's suggestions came first: the plan wins);
    // queued, after every other listener (a live re-run the new vectors scheduled is then replaced).
    connect(steering, &SteeringController::vectorsReady, this, &StudyController::proposeSteeringVectors);
    connect(
        steering, &SteeringController::vectorsReady, this,
        [this] {
            if (pendingPlan_) {
                const StudyPlanSettings plan = *pendingPlan_;
                pendingPlan_.reset();
                applyNow(plan);
            }
        },
        Qt::QueuedConnection);
    connect(steering, &SteeringController::vectorsFailed, this, [this] { pendingPlan_.reset(); });
}

StudySetup StudyController::setup() const { return panel_->setup(); }

// The Steering panel's vector file as the grid's vectors (unless another was typed), and what it
// suggests as the meaning of an empty c_k / c_v.
void StudyController::proposeSteeringVectors() {
    const VectorsInfo& v = steering_->vectors();
    panel_->proposeVectors(v.filePath);
    panel_->setFileSuggestions(v.filePath, v.suggestedCk, v.suggestedCv);
}

void StudyController::restore(const StudySetup& setup) {
    if (running_) stop();
    activeId_ = 0;   // a study still running belongs to the document before
    running_ = false;
    panel_->setRunning(false);
    panel_->setSetup(setup);
    proposeSteeringVectors();
    panel_->setProgress(0, 1);
    StudyResults results;
    QString why;
    if (!setup.outDir.isEmpty() && readStudyResults(setup.outDir, &results, &why)) {
        panel_->showResults(results);
        summarize(results);
    } else {
        panel_->clearResults();
        panel_->setStatus(setup.outDir.isEmpty() ? QString() : why);
    }
}

// A folder `kvsteer study` wrote: its frontier and table, and its suite and folder in the fields,
// so Study with another grid starts from there.
void StudyController::openFolder(const QString& dir) {
    StudyResults results;
    QString why;
    if (!readStudyResults(dir, &results, &why)) {
        errors_->show(tr("Study"), why);
        return;
    }
    StudySetup setup;
    setup.outDir = QDir(dir).absolutePath();
    setup.suite = results.suitePath;
    restore(setup);
}

void StudyController::browse() {
    const QString path = QFileDialog::getOpenFileName(window_, tr("Choose a study suite"), QFileInfo(panel_->setup().suite).absolutePath(),
                                                      tr("Study suites (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    panel_->setSuite(path);
    Q_EMIT edited();
}

void StudyController::start() {
    if (running_) return;
    if (model_->loading() || !model_->info().valid()) {
        errors_->show(tr("Study"), tr("Load a model first (File → Open Model Directory…)."));
        return;
    }
    if (!QFileInfo(panel_->setup().suite).isFile()) {
        errors_->show(tr("Study"), tr("Choose a suite: a JSON file naming the datasets and their roles (docs/study.md; "
                                      "`kvsteer demo-study` writes one)."));
        return;
    }
    if (panel_->setup().outDir.isEmpty()) panel_->setSuite(panel_->setup().suite);
    proposeSteeringVectors();
    StudyRequest req;
    req.id = nextId_++;
    req.setup = panel_->setup();
    activeId_ = req.id;
    running_ = true;
    panel_->clearResults();
    panel_->setRunning(true);
    panel_->setProgress(0, 1);
    panel_->setStatus(tr("Starting…"));
    Q_EMIT studyRequested(req);
}

void StudyController::stop() {
    if (!running_) return;
    worker_->cancelStudies();
    panel_->setStatus(tr("Stopping after the current batch…"));
}

void StudyController::apply(const StudyPlanSettings& plan) {
    if (running_) {
        panel_->setStatus(tr("A study is running: plan %1 can run once it ends (or Stop it).").arg(plan.index));
        return;
    }
    if (!model_->info().valid()) {
        errors_->show(tr("Study"), tr("Load a model first (File → Open Model Directory…)."));
        return;
    }
    if (!plan.vectors.isEmpty()) {
        QFile f(plan.vectors);
        if (!f.open(QIODevice::ReadOnly)) {
            errors_->show(tr("Study"), tr("Plan %1's vector file %2 cannot be read: %3").arg(plan.index).arg(QDir::toNativeSeparators(plan.vectors), f.errorString()));
            return;
        }
        if (f.readAll() != steering_->vectors().blob) {   // other vectors are held: load the plan's, then apply it
            pendingPlan_ = plan;
            panel_->setStatus(tr("Loading %1 for plan %2…").arg(QFileInfo(plan.vectors).fileName()).arg(plan.index));
            steering_->importFrom(plan.vectors);
            return;
        }
    }
    applyNow(plan);
}

void StudyController::applyNow(const StudyPlanSettings& plan) {
    panes_.steering->setPlanSettings(plan.planSettings());
    runs_->run();
    panel_->setStatus(tr("Plan %1 (%2) is on the Steering panel; the current image runs with it.").arg(plan.index).arg(plan.label));
    Q_EMIT planApplied(plan);
}

void StudyController::onStarted(const StudyStarted& info) {
    if (info.studyId != activeId_) return;
    panel_->setProgress(info.alreadyDone, info.total);
    panel_->setStatus(info.alreadyDone ? tr("Continuing: %1 of %2 items were done before; %n plan(s).", nullptr, int(info.planLabels.size()))
                                             .arg(info.alreadyDone)
                                             .arg(info.total)
                                       : tr("Judging %n plan(s) on %1 items…", nullptr, int(info.planLabels.size())).arg(info.total));
}

void StudyController::onProgress(const StudyProgress& progress) {
    if (progress.studyId != activeId_) return;
    panel_->setProgress(progress.done, progress.total);
}

void StudyController::onFinished(const StudyFinished& info) {
    if (info.studyId != activeId_) return;
    running_ = false;
    lastFinished_ = info;
    panel_->setRunning(false);
    if (info.stopped) {
        panel_->setStatus(tr("Stopped: %1 holds every finished item. Study continues.").arg(QDir::toNativeSeparators(info.outDir)));
    } else {
        panel_->showResults(info.results);
        summarize(info.results);
    }
    Q_EMIT finished(info);
    Q_EMIT edited();
}

void StudyController::summarize(const StudyResults& results) {
    Q_EMIT shown();
    const StudyPlanResult* best = nullptr;   // the frontier's highest target success
    for (int index : results.frontier)
        if (const StudyPlanResult* p = results.plan(index)) best = p;
    QString text = tr("%n plan(s) over %1 sets (%2 images); %3 on the frontier.", nullptr, int(results.plans.size()))
                       .arg(results.datasets.size())
                       .arg(results.clusters)
                       .arg(results.frontier.size());
    if (best)
        text += tr(" Most target success on it: plan %1 (%2), %3 at preservation %4.")
                    .arg(best->settings.index)
                    .arg(panel_->plot()->pointLabel(best->settings.index))
                    .arg(best->targetSuccess.value, 0, 'f', 3)
                    .arg(best->preservation.value, 0, 'f', 3);
    panel_->setStatus(text + tr(" Click a point to apply its plan and run the current image."));
}

void StudyController::onFailed(quint64 id, const QString& message) {
    if (id != activeId_) return;
    running_ = false;
    panel_->setRunning(false);
    // The proposed folder holds another study (the grid changed since): this one goes beside it.
    const QString taken = panel_->setup().outDir;
    if (JobForm::folderTaken(message)) {
        if (const QString fresh = panel_->proposeFreshOutDir(); !fresh.isEmpty()) {
            start();
            panel_->setStatus(tr("%1 holds another study; this one goes to %2.")
                                  .arg(QDir::toNativeSeparators(taken), QDir::toNativeSeparators(fresh)));
            Q_EMIT edited();
            return;
        }
    }
    panel_->setStatus(message);
    errors_->show(tr("Study"), message);
}

} // namespace kvsteer::ui
