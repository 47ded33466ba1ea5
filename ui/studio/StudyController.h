#pragma once
// StudyController: the Evaluate dock's Study tab. Runs the suite × grid on the Worker (the core's
// runStudyJob, as `kvsteer study`), with progress; Stop ends it after the current batch and Study
// on the same folder continues it. Shows the frontier and the per-category table when it ends,
// and again when a session that holds the study is opened (read from the folder's summary.json,
// nothing re-run). Choosing a plan (a click on its point) puts it on the Steering panel —
// operator, c_k, c_v, layers, and its vector file when the held vectors are not that file's — and
// runs the current image with it.
#include "studio/RunController.h"
#include "types/StudyTypes.h"

#include <QObject>

#include <optional>

class QWidget;

namespace kvsteer::ui {

class ErrorReporter;
class ModelController;
class SteeringController;
class StudyPanel;
class Worker;

class StudyController : public QObject {
    Q_OBJECT
public:
    StudyController(Worker* worker, ErrorReporter* errors, const ModelController* model, SteeringController* steering,
                    RunController* runs, const RunPanes& panes, StudyPanel* panel, QWidget* window);

    bool running() const { return running_; }
    const StudyFinished& lastFinished() const { return lastFinished_; }

    StudySetup setup() const;                     // what a session keeps
    void restore(const StudySetup& setup);        // a session's: its fields, and its folder's results if it has them
    void openFolder(const QString& dir);          // a finished study's folder (kvsteer-studio --study DIR)

    void start();
    void stop();
    void apply(const StudyPlanSettings& plan);    // on the Steering panel, then Run

Q_SIGNALS:
    void studyRequested(const kvsteer::ui::StudyRequest& request);
    void finished(const kvsteer::ui::StudyFinished& info);
    void edited();                                // the setup changed, or a study ended: the session changed
    void planApplied(const kvsteer::ui::StudyPlanSettings& plan);   // on the panel, its run started
    void shown();                                 // a study's frontier and table are on the panel

private:
    void browse();
    void proposeSteeringVectors();
    void applyNow(const StudyPlanSettings& plan);
    void onStarted(const StudyStarted& info);
    void onProgress(const StudyProgress& progress);
    void onFinished(const StudyFinished& info);
    void onFailed(quint64 id, const QString& message);
    void summarize(const StudyResults& results);

    Worker* worker_;
    ErrorReporter* errors_;
    const ModelController* model_;
    SteeringController* steering_;
    RunController* runs_;
    RunPanes panes_;
    StudyPanel* panel_;
    QWidget* window_;
    quint64 nextId_ = 1;
    quint64 activeId_ = 0;
    bool running_ = false;
    StudyFinished lastFinished_;
    std::optional<StudyPlanSettings> pendingPlan_;   // waits for its vector file to load
};

} // namespace kvsteer::ui
