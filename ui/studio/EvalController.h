#pragma once
// EvalController: the Evaluate dock. Runs the dataset evaluation on the Worker with the Steering
// panel's plan, the held vectors and (when chosen) the painted map; shows progress, the summary
// and the items whose correctness changed; Stop ends it after the current batch, and Evaluate on
// the same results folder continues it. Double-clicking an item opens its image, question and
// cells (its box or mask) on the canvas, ready to Run.
#include "studio/RunController.h"
#include "types/EvalTypes.h"

#include <QObject>

#include <optional>

class QWidget;

namespace kvsteer::ui {

class ErrorReporter;
class EvalPanel;
class ImageController;
class ModelController;
class SteeringController;
class Worker;

class EvalController : public QObject {
    Q_OBJECT
public:
    EvalController(Worker* worker, ErrorReporter* errors, const ModelController* model, ImageController* image,
                   SteeringController* steering, RunController* runs, const RunPanes& panes, EvalPanel* panel, QWidget* window);

    bool running() const { return running_; }
    const EvalFinished& lastFinished() const { return lastFinished_; }

    void start();
    void stop();
    void open(const EvalItemRow& row);

Q_SIGNALS:
    void evalRequested(const kvsteer::ui::EvalRequest& request);
    void finished(const kvsteer::ui::EvalFinished& info);

private:
    void browse();
    void onStarted(const EvalStarted& info);
    void onItem(const EvalItemRow& row);
    void onFinished(const EvalFinished& info);
    void onFailed(quint64 id, const QString& message);
    void runOpenedItemIfLive();

    Worker* worker_;
    ErrorReporter* errors_;
    const ModelController* model_;
    ImageController* image_;
    SteeringController* steering_;
    RunController* runs_;
    RunPanes panes_;
    EvalPanel* panel_;
    QWidget* window_;
    quint64 nextId_ = 1;
    quint64 activeId_ = 0;
    bool running_ = false;
    int done_ = 0, total_ = 0;
    EvalFinished lastFinished_;
    // An item opened on the canvas, waiting for its image and its cells before it runs (Live on).
    struct OpenedItem {
        quint64 imageId = 0;   // 0: no image asked for (a text item) or already shown
        QString mask;          // the mask spec asked for; empty: none, or already loaded
    };
    std::optional<OpenedItem> opened_;
};

} // namespace kvsteer::ui
