#include "studio/SteeringController.h"

#include "studio/ErrorReporter.h"
#include "studio/FileDialogs.h"
#include "studio/ImageController.h"
#include "studio/ModelController.h"
#include "studio/StudioStatusBar.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/SteeringPanel.h"
#include "worker/Worker.h"

#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

namespace kvsteer::ui {

SteeringController::SteeringController(Worker* worker, ErrorReporter* errors, StudioStatusBar* status, const ModelController* model,
                                       const ImageController* image, PatchCanvas* canvas, PromptPanel* prompt, SteeringPanel* panel,
                                       QWidget* window)
    : QObject(window), errors_(errors), status_(status), model_(model), image_(image), canvas_(canvas), prompt_(prompt), panel_(panel),
      window_(window) {
    constexpr auto queued = Qt::QueuedConnection;
    connect(this, &SteeringController::computeRequested, worker, &Worker::computeVectors, queued);
    connect(this, &SteeringController::importRequested, worker, &Worker::importVectors, queued);
    connect(this, &SteeringController::restoreRequested, worker, &Worker::setVectorsBlob, queued);
    connect(this, &SteeringController::clearRequested, worker, &Worker::clearVectors, queued);
    connect(this, &SteeringController::exportRequested, worker, &Worker::exportVectors, queued);
    connect(this, &SteeringController::maskExportRequested, worker, &Worker::exportMask, queued);
    connect(this, &SteeringController::maskLoadRequested, worker, &Worker::loadMask, queued);

    connect(worker, &Worker::vectorsCleared, this, &SteeringController::onCleared);
    connect(canvas, &PatchCanvas::mapResampled, this, &SteeringController::onMaskResampled);
    connect(canvas, &PatchCanvas::editFinished, this, [this] {   // the person's own map now
        if (maskNote_.isEmpty()) return;
        maskNote_.clear();
        Q_EMIT maskNoteChanged();
    });
    connect(worker, &Worker::vectorsComputeFailed, this, [this](const QString& m) { onFailed(tr("Steering vectors"), m); });
    connect(worker, &Worker::vectorsImportFailed, this, [this](const QString&, const QString& m) { onFailed(tr("Import vectors"), m); });
    connect(worker, &Worker::sessionVectorsFailed, this, [this](const QString& m) { onFailed(tr("Steering vectors"), m); });
    connect(worker, &Worker::vectorsExported, this, [this](const QString& path) {
        status_->message(tr("Vectors exported to %1").arg(QDir::toNativeSeparators(path)), 6000);
        Q_EMIT vectorsExported(path);
    });
    connect(worker, &Worker::vectorsExportFailed, this, [this](const QString&, const QString& m) { errors_->show(tr("Export vectors"), m); });
    connect(worker, &Worker::maskExported, this, [this](const QString& path) {
        status_->message(tr("Mask saved to %1").arg(QDir::toNativeSeparators(path)), 6000);
        Q_EMIT maskExported(path);
    });
    connect(worker, &Worker::maskExportFailed, this, [this](const QString&, const QString& m) { errors_->show(tr("Export mask"), m); });
    connect(worker, &Worker::maskLoaded, this, [this](const StrengthGrid& g, const QString& spec) {
        if (g.rows != canvas_->strength().rows || g.cols != canvas_->strength().cols) canvas_->setGridSize(g.rows, g.cols);
        canvas_->setStrength(g, tr("Load mask"));
        status_->message(tr("Mask loaded from %1").arg(spec), 4000);
        Q_EMIT maskLoaded(spec);
    });
    connect(worker, &Worker::maskLoadFailed, this, [this](const QString& spec, const QString& m) {
        errors_->show(tr("Load mask"), m);
        Q_EMIT maskLoadFailed(spec);
    });
}

bool SteeringController::compute(const RecipeRequest& partial, bool proposeStrength) {
    // Requests queue behind a model or image that is still loading (the Worker takes them in order).
    if (!model_->info().valid() && !model_->loading()) {
        errors_->show(tr("Steering vectors"), tr("Load a model before computing steering vectors."));
        return false;
    }
    RecipeRequest req = partial;
    req.prompt = prompt_->prompt().trimmed();
    req.region = canvas_->strength();
    const bool imageComing = image_->ready() || image_->arriving();
    if (req.source != VectorSource::TextPairs && !imageComing) {
        errors_->show(tr("Steering vectors"), tr("Open the image to steer first: the recipe prefills it."));
        return false;
    }
    if (req.source != VectorSource::TextPairs && req.prompt.isEmpty()) {
        errors_->show(tr("Steering vectors"), tr("Type the question first: the image recipes prefill the image with it."));
        return false;
    }
    if (req.source == VectorSource::SecondImage && req.targetImage.isEmpty()) {
        chooseTargetImage();
        req = panel_->recipe();
        req.prompt = prompt_->prompt().trimmed();
        req.region = canvas_->strength();
        if (req.targetImage.isEmpty()) return false;
    }
    if (req.source == VectorSource::PaintedRegion && (req.region.isZero() || req.region.paintedCells() == req.region.size())) {
        errors_->show(tr("Steering vectors"), tr("Paint the region first: the recipe contrasts the painted patches with the rest, so "
                                                 "paint some patches but not all of them."));
        return false;
    }
    computing_ = true;
    proposeStrength_ = proposeStrength;
    panel_->setBusy(true);
    Q_EMIT computeRequested(req);
    return true;
}

void SteeringController::importFrom(const QString& path) { Q_EMIT importRequested(path); }

void SteeringController::exportTo(const QString& path) { Q_EMIT exportRequested(path, panel_->planSettings(), canvas_->strength()); }

void SteeringController::restore(const QByteArray& blob, const QString& origin) {
    if (blob.isEmpty()) Q_EMIT clearRequested();
    else Q_EMIT restoreRequested(blob, origin);
}

void SteeringController::clear() { Q_EMIT clearRequested(); }

void SteeringController::exportMaskTo(const QString& path) { Q_EMIT maskExportRequested(path, canvas_->strength()); }

// The prompt goes along: a text-only model's mask is read onto that prompt's token strip.
void SteeringController::importMaskFrom(const QString& spec) { Q_EMIT maskLoadRequested(spec, prompt_->prompt().trimmed()); }

void SteeringController::onVectorsReady(const VectorsInfo& info, bool applySuggestions) {
    const bool propose = computing_ && proposeStrength_ && !info.fromFile;
    computing_ = false;
    proposeStrength_ = false;
    panel_->setBusy(false);
    vectors_ = info;
    panel_->setVectorsInfo(info);
    if (info.fromFile && applySuggestions) {
        panel_->setSource(VectorSource::File);   // the file is in use, not a recipe waiting for its inputs
        panel_->applySuggestions(info);
        if (info.hasMask && canvas_->strength().isZero() && info.mask.rows == canvas_->strength().rows &&
            info.mask.cols == canvas_->strength().cols)
            canvas_->setStrength(info.mask, tr("Mask from vector file"));
    }
    status_->message(tr("Steering vectors ready: %1").arg(info.summary()), 5000);
    Q_EMIT vectorsReady(info);
    if (propose) Q_EMIT strengthWanted();
}

void SteeringController::onCleared() {
    vectors_ = VectorsInfo();
    panel_->setVectorsInfo(vectors_);
    Q_EMIT vectorsCleared();
}

// A painted map met a grid of another size (a session or the recovery file opened with another
// model, or a model of another family loaded over a painted mask). The canvas resampled it rather
// than drop the person's work (PatchCanvas::setGridSize); say so, since the strengths and the cells
// moved: it is theirs to check before steering with it. A notice, not a question: the status bar,
// and a note beside the mask in the run summary until the next edit, not a dialog.
void SteeringController::onMaskResampled(int fromRows, int fromCols, int toRows, int toCols) {
    maskNote_ = tr("resampled from %1×%2 to %3×%4: check it before steering").arg(fromRows).arg(fromCols).arg(toRows).arg(toCols);
    status_->message(tr("The painted mask was made for a %1×%2 patch grid; %3 lays this image out as %4×%5, so each cell took the mean "
                        "strength of the part of the image it covers.")
                         .arg(fromRows)
                         .arg(fromCols)
                         .arg(model_->info().valid() ? model_->info().name : tr("the model"))
                         .arg(toRows)
                         .arg(toCols),
                     15000);
    Q_EMIT maskNoteChanged();
}

void SteeringController::onFailed(const QString& title, const QString& message) {
    if (computing_) {
        computing_ = false;
        proposeStrength_ = false;
        panel_->setBusy(false);
    }
    errors_->show(title, message);
    Q_EMIT vectorsFailed();
}

// ---- dialogs --------------------------------------------------------------------------------

void SteeringController::importDialog() {
    const QString path = QFileDialog::getOpenFileName(window_, tr("Import Steering Vectors"), QString(),
                                                      tr("Steering vectors (*.safetensors);;All files (*)"));
    if (!path.isEmpty()) importFrom(path);
}

void SteeringController::exportDialog() {
    if (!vectors_.valid()) {
        errors_->show(tr("Export vectors"), tr("There are no steering vectors yet: compute or import them in the Steering panel."));
        return;
    }
    const QString path = askSavePath(window_, tr("Export Steering Vectors"), QStringLiteral("steering.safetensors"),
                                     tr("Steering vectors (*.safetensors)"), QStringLiteral(".safetensors"));
    if (!path.isEmpty()) exportTo(path);
}

void SteeringController::exportMaskDialog() {
    const QString path = askSavePath(window_, tr("Export Mask"), QStringLiteral("mask.png"), tr("PNG images (*.png)"), QStringLiteral(".png"));
    if (!path.isEmpty()) exportMaskTo(path);
}

void SteeringController::importMaskDialog() {
    const QString path = QFileDialog::getOpenFileName(window_, tr("Import Mask"), QString(),
                                                      tr("Masks (*.png *.jpg *.bmp *.npy *.safetensors);;All files (*)"));
    if (!path.isEmpty()) importMaskFrom(path);
}

void SteeringController::loadTextPairsDialog() {
    const QString path = QFileDialog::getOpenFileName(window_, tr("Load Text Pairs"), QString(), tr("JSON Lines (*.jsonl *.json);;All files (*)"));
    if (path.isEmpty()) return;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        errors_->show(tr("Text pairs"), tr("%1 cannot be read: %2").arg(path, f.errorString()));
        return;
    }
    QVector<TextPairItem> pairs;
    int lineNo = 0;
    for (const QByteArray& line : f.readAll().split('\n')) {
        ++lineNo;
        if (line.trimmed().isEmpty()) continue;
        const QJsonDocument d = QJsonDocument::fromJson(line);
        const QJsonObject o = d.object();
        if (!d.isObject() || !o.value(QStringLiteral("positive")).isString() || !o.value(QStringLiteral("negative")).isString()) {
            errors_->show(tr("Text pairs"), tr("%1, line %2: expected {\"positive\": \"…\", \"negative\": \"…\"}").arg(QFileInfo(path).fileName()).arg(lineNo));
            return;
        }
        pairs.push_back({o.value(QStringLiteral("positive")).toString(), o.value(QStringLiteral("negative")).toString()});
    }
    panel_->setTextPairs(pairs);
    Q_EMIT inputsEdited();
}

void SteeringController::chooseTargetImage() {
    const QString dir = QFileInfo(panel_->targetImagePath()).absolutePath();
    const QString path = QFileDialog::getOpenFileName(window_, tr("Image to Steer Toward"),
                                                      panel_->targetImagePath().isEmpty() ? QStringLiteral(KVSTEER_STUDIO_DEMO_IMAGES_DIR) : dir,
                                                      imageFileFilter());
    if (path.isEmpty()) return;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        errors_->show(tr("Cannot open image"), tr("%1 cannot be read: %2").arg(path, f.errorString()));
        return;
    }
    panel_->setTargetImage(path, f.readAll());
    Q_EMIT inputsEdited();
}

} // namespace kvsteer::ui
