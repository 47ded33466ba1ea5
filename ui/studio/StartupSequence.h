#pragma once
// StartupSequence: the start-up script of a studio window, as the command line (or a test) asks
// for it — the model (the given one, else the bundled demo model, else the most recent one), a
// session or the crash-recovery offer, the prompt/plan/heatmap options, then the image, the mask
// and the vectors, and, with --run, one run once all of those have settled (and --ready-file
// written when that run has finished).
//
// Each step waits for the signals of its own request — the model step for the model controller's
// loaded/failed/cancelled, the image step for its request id, the mask step for its spec, the
// vectors step for the steering controller's ready/failed — so a step knows its own failure. A
// failed model step calls the run off; the other steps settle either way.
#include "studio/RunController.h"
#include "studio/StudioOptions.h"

#include <QObject>

class QWidget;

namespace kvsteer::ui {

class AtlasController;
class DocumentController;
class ErrorReporter;
class ImageController;
class ModelController;
class SteeringController;
class StudioSettings;
class StudioStatusBar;
class StudyController;

struct StartupParts {
    ErrorReporter* errors = nullptr;
    StudioStatusBar* status = nullptr;
    StudioSettings* settings = nullptr;
    ModelController* models = nullptr;
    ImageController* images = nullptr;
    SteeringController* steering = nullptr;
    RunController* runs = nullptr;
    DocumentController* document = nullptr;
    RunPanes panes;
    QWidget* window = nullptr;
    AtlasController* atlas = nullptr;
    StudyController* study = nullptr;
};

class StartupSequence : public QObject {
    Q_OBJECT
public:
    StartupSequence(const StudioOptions& options, const StartupParts& parts, QObject* parent);
    void start();

private:
    enum Step { Setup, Model, Session, Image, Mask, Vectors, StepCount };   // Setup: start() itself; Session: a session's or recovery's image

    QString chooseModel() const;
    QString commandLineNote() const;
    void showNoModel(const QString& demoDir);
    void applyViewOptions();            // prompt, max tokens, plan, heatmap metric
    void applyPlanOptions();            // operator, c_k, c_v, layers, propagate
    void startVectors();
    void settle(Step step);
    void runIfReady();
    void onRunFinished(const RunFinished& info);
    void writeReadyFile();

    const StudioOptions options_;
    const StartupParts p_;
    bool waiting_[StepCount] = {};
    bool runWanted_ = false;
    bool settled_ = false;              // every step has settled once
    bool planOptionsApplied_ = false;   // the command line's plan replaced the restored one
    quint64 imageRequest_ = 0;
    QString maskSpec_;                  // the mask being waited for: the command line's or the demo scene's
    quint64 runId_ = 0;
    int heatmapLayer_ = -1;             // applied once the model (and so its layer count) is there
};

} // namespace kvsteer::ui
