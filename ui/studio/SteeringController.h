#pragma once
// SteeringController: the steering vectors the Worker holds and the files around them — computing
// them with a recipe (refused here, before any work, when the recipe cannot run), importing and
// exporting vector files, restoring a session's vectors, importing and exporting the painted
// mask (and saying so when a painted mask was resampled onto another model's grid), loading text
// pairs and choosing the image to steer toward.
#include "types/StudioTypes.h"

#include <QObject>

class QWidget;

namespace kvsteer::ui {

class ErrorReporter;
class ImageController;
class ModelController;
class PatchCanvas;
class PromptPanel;
class SteeringPanel;
class StudioStatusBar;
class Worker;

class SteeringController : public QObject {
    Q_OBJECT
public:
    SteeringController(Worker* worker, ErrorReporter* errors, StudioStatusBar* status, const ModelController* model,
                       const ImageController* image, PatchCanvas* canvas, PromptPanel* prompt, SteeringPanel* panel, QWidget* window);

    const VectorsInfo& vectors() const { return vectors_; }
    // Said beside the mask until the next edit: it was resampled from another grid ("" otherwise).
    QString maskNote() const { return maskNote_; }

    // False: refused (an error was shown, or no target image was chosen); nothing was requested.
    // `proposeStrength`: once the vectors are in, strengthWanted() asks for a strength to suit them
    // (the Compute button; not a script's --steer-toward, whose plan is the command line's).
    bool compute(const RecipeRequest& partial, bool proposeStrength = false);
    void importFrom(const QString& path);
    void exportTo(const QString& path);
    void restore(const QByteArray& blob, const QString& origin);   // a session's vectors; empty: none
    void clear();
    void exportMaskTo(const QString& path);
    void importMaskFrom(const QString& spec);
    // Vectors arrived; a file's suggestions (operator, coefficients, layers, mask) are applied
    // unless a session is being restored.
    void onVectorsReady(const VectorsInfo& info, bool applySuggestions);

    void importDialog();
    void exportDialog();
    void exportMaskDialog();
    void importMaskDialog();
    void loadTextPairsDialog();
    void chooseTargetImage();

Q_SIGNALS:
    void maskNoteChanged();
    void computeRequested(const kvsteer::ui::RecipeRequest& request);
    void importRequested(const QString& path);
    void restoreRequested(const QByteArray& blob, const QString& origin);
    void clearRequested();
    void exportRequested(const QString& path, const kvsteer::ui::PlanSettings& plan, const kvsteer::ui::StrengthGrid& mask);
    void maskExportRequested(const QString& path, const kvsteer::ui::StrengthGrid& mask);
    void maskLoadRequested(const QString& spec, const QString& prompt);

    void vectorsReady(const kvsteer::ui::VectorsInfo& info);
    void strengthWanted();
    void vectorsCleared();
    void vectorsFailed();               // computing, importing or restoring them failed (an error was shown)
    void vectorsExported(const QString& path);
    void maskLoaded(const QString& spec);
    void maskLoadFailed(const QString& spec);
    void maskExported(const QString& path);
    void inputsEdited();                // text pairs or the target image changed

private:
    void onCleared();
    void onMaskResampled(int fromRows, int fromCols, int toRows, int toCols);
    void onFailed(const QString& title, const QString& message);

    ErrorReporter* errors_;
    StudioStatusBar* status_;
    const ModelController* model_;
    const ImageController* image_;
    PatchCanvas* canvas_;
    PromptPanel* prompt_;
    SteeringPanel* panel_;
    QWidget* window_;
    VectorsInfo vectors_;
    QString maskNote_;
    bool computing_ = false;
    bool proposeStrength_ = false;
};

} // namespace kvsteer::ui
