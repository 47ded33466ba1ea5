#pragma once
// PythonHandOff: "Copy as Python" (Edit menu, Steering panel). Remembers which file the held
// vectors were imported from (the snippet names it) and puts pythonSnippet() for what the panes
// show on the clipboard.
#include "studio/RunController.h"

#include <QObject>

namespace kvsteer::ui {

class ImageController;
class ModelController;
class StudioStatusBar;
class SteeringController;

class PythonHandOff : public QObject {
    Q_OBJECT
public:
    PythonHandOff(const ModelController* models, const ImageController* images, SteeringController* steering, StudioStatusBar* status,
                  const RunPanes& panes, QObject* parent);

    QString snippet() const;
    QString vectorsPath() const { return vectorsPath_; }   // empty: the held vectors came from no file
    void copyToClipboard();

private:
    const ModelController* models_;
    const ImageController* images_;
    SteeringController* steering_;
    StudioStatusBar* status_;
    RunPanes panes_;
    QString requestedPath_;   // the last import asked for
    QString vectorsPath_;     // the file the held vectors came from
};

} // namespace kvsteer::ui
