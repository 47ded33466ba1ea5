#include "studio/PythonHandOff.h"

#include "studio/ImageController.h"
#include "studio/ModelController.h"
#include "studio/PythonSnippet.h"
#include "studio/SteeringController.h"
#include "studio/StudioStatusBar.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/SteeringPanel.h"

#include <QApplication>
#include <QClipboard>
#include <QFileInfo>

namespace kvsteer::ui {

PythonHandOff::PythonHandOff(const ModelController* models, const ImageController* images, SteeringController* steering,
                             StudioStatusBar* status, const RunPanes& panes, QObject* parent)
    : QObject(parent), models_(models), images_(images), steering_(steering), status_(status), panes_(panes) {
    connect(steering, &SteeringController::importRequested, this, [this](const QString& path) { requestedPath_ = path; });
    // The worker names an imported file by its file name: the one asked for last is its path.
    connect(steering, &SteeringController::vectorsReady, this, [this](const VectorsInfo& info) {
        vectorsPath_ = info.fromFile && QFileInfo(requestedPath_).fileName() == info.origin ? QFileInfo(requestedPath_).absoluteFilePath() : QString();
    });
    connect(steering, &SteeringController::vectorsCleared, this, [this] { vectorsPath_.clear(); });
}

QString PythonHandOff::snippet() const {
    SnippetInputs in;
    in.model = models_->info();
    in.vectorsPath = vectorsPath_;
    in.keySpace = steering_->vectors().keySpace;
    // The file, absolute, so the script runs from any folder; an image from no file (pasted) is
    // named, to be saved first.
    in.imagePath = images_->path().isEmpty() ? images_->name() : images_->path();
    in.question = panes_.prompt->prompt().trimmed();
    in.plan = panes_.steering->planSettings();
    in.strength = panes_.canvas->strength();
    in.maxNewTokens = panes_.prompt->generation().maxNewTokens;
    return pythonSnippet(in);
}

void PythonHandOff::copyToClipboard() {
    QApplication::clipboard()->setText(snippet());
    status_->message(tr("A Python snippet for the current plan is on the clipboard"), 5000);
}

} // namespace kvsteer::ui
