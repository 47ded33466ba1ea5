#pragma once
// AtlasController: the steering atlas. Runs it on the Worker for what the panes show (image,
// prompt, painted map, plan, vectors), routes its cells into the AtlasPanel as they finish, stops
// it, marks it out of date when any of its inputs changes (a stroke, the prompt, the image, the
// vectors, the plan's operator, mode, heads or the coefficient it does not sweep), and adopts a
// clicked cell's strength and layers in the Steering panel — which does not make it out of date,
// since those are the atlas's own axes. For freshly computed vectors it proposes a strength: the
// weakest on the plan's layers that changes the answer cleanly.
#include "studio/RunController.h"
#include "types/AtlasTypes.h"

#include <QObject>

namespace kvsteer::ui {

class AtlasPanel;
class ErrorReporter;
class ImageController;
class ModelController;
class Worker;

class AtlasController : public QObject {
    Q_OBJECT
public:
    AtlasController(Worker* worker, ErrorReporter* errors, const ModelController* model, const ImageController* image, const RunPanes& panes,
                    AtlasPanel* panel, QObject* parent);

    bool running() const { return running_; }
    quint64 activeId() const { return activeId_; }
    const AtlasFinished& lastFinished() const { return lastFinished_; }

    void run();
    void propose();                             // a strength for new vectors: the plan's row, read (see .cpp)
    void stop();
    void invalidate();                          // an input changed: stop, and mark the picture out of date
    void clear();                               // a new model: no picture
    void onPlanChanged(const PlanSettings& plan);   // invalidates unless only the swept axes moved
    void setAvailability(bool canRun, const QString& why);

Q_SIGNALS:
    void atlasRequested(const kvsteer::ui::AtlasRequest& request);
    void finished(const kvsteer::ui::AtlasFinished& info);
    void stateChanged();
    void proposed(const QString& howChosen);    // the plan's strength was set (or not), and why

private:
    void onStarted(const AtlasStarted& info);
    void onCell(const AtlasCellResult& cell);
    void onFinished(const AtlasFinished& info);
    void onFailed(quint64 id, const QString& message);
    void adopt(const AtlasCellResult& cell);
    void finishProposal();
    bool canRun() const;
    void start(AtlasRequest request, const QString& status);
    void refreshSelection();
    PlanSettings withoutAxes(PlanSettings p) const;   // the plan with the swept coefficient and layers cleared

    Worker* worker_;
    ErrorReporter* errors_;
    const ModelController* model_;
    const ImageController* image_;
    RunPanes panes_;
    AtlasPanel* panel_;
    quint64 nextId_ = 1;
    quint64 activeId_ = 0;
    bool running_ = false;
    bool proposing_ = false;                    // the running atlas is propose()'s
    AtlasStarted started_;
    PlanSettings atlasPlan_;                    // the plan the picture was made with (axes cleared)
    AtlasFinished lastFinished_;
};

} // namespace kvsteer::ui
