#pragma once
// RunController: runs. Starts one from what the panes show (Run, or a live re-run 150 ms after
// the last edit, so a burst of strokes becomes one run), stops it, and routes the Worker's
// answers and heatmaps for the active run into the panes; superseded runs are dropped.
#include "types/StudioTypes.h"

#include <QObject>

class QTimer;

namespace kvsteer::ui {

class ErrorReporter;
class HeatmapPanel;
class ImageController;
class ModelController;
class PatchCanvas;
class PromptPanel;
class SteeringPanel;
class StreamView;
class StudioStatusBar;
class Worker;

// The panes a run reads its request from and writes its answers to.
struct RunPanes {
    PromptPanel* prompt = nullptr;
    PatchCanvas* canvas = nullptr;
    SteeringPanel* steering = nullptr;
    HeatmapPanel* heatmaps = nullptr;
    StreamView* streams = nullptr;
};

class RunController : public QObject {
    Q_OBJECT
public:
    RunController(Worker* worker, ErrorReporter* errors, StudioStatusBar* status, const ModelController* model,
                  const ImageController* image, const RunPanes& panes, QObject* parent);

    bool running() const { return running_; }
    quint64 activeRunId() const { return activeRunId_; }   // the run whose answers the panes show
    const RunStarted& lastStarted() const { return lastStarted_; }
    const RunStarted& lastPrefill() const { return lastPrefill_; }   // the last run that prefilled
    const RunFinished& lastFinished() const { return lastFinished_; }

    void run();
    void stop();                        // every run stops at its next layer or decode step
    void forgetRun();                   // a new image, model or session: no live re-run before the next Run
    void editChanged();                 // the map or the plan changed: mark the answers stale, re-run if live
    void setHeatmapSettings(const HeatmapSettings& settings);

Q_SIGNALS:
    void runRequested(const kvsteer::ui::RunRequest& request);
    void heatmapRequested();
    void stateChanged();                // a run started or ended
    void summaryChanged();              // the last run's timings changed
    void answered(const kvsteer::ui::RunFinished& info);   // the active run finished: its answers are the document's
    void finished(const kvsteer::ui::RunFinished& info);   // every run, superseded ones too

private:
    void onStarted(const RunStarted& info);
    void onTokenPair(const TokenPair& pair);
    void onFinished(const RunFinished& info);
    void onFailed(quint64 runId, const QString& message);
    void onHeatmap(const HeatmapData& data);

    Worker* worker_;
    ErrorReporter* errors_;
    StudioStatusBar* status_;
    const ModelController* model_;
    const ImageController* image_;
    bool sceneReady() const;
    RunPanes panes_;
    QTimer* liveTimer_ = nullptr;

    quint64 nextRunId_ = 1;
    quint64 activeRunId_ = 0;
    bool running_ = false;
    bool haveRun_ = false;              // a run happened for this image: live re-runs are allowed
    RunStarted lastStarted_;
    RunStarted lastPrefill_;
    RunFinished lastFinished_;
};

} // namespace kvsteer::ui
