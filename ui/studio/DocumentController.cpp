#include "studio/DocumentController.h"

#include "studio/ErrorReporter.h"
#include "studio/FileDialogs.h"
#include "studio/ImageController.h"
#include "studio/ModelController.h"
#include "studio/RunController.h"
#include "studio/SteeringController.h"
#include "studio/StudioOptions.h"
#include "studio/StudioStatusBar.h"
#include "studio/StudyController.h"
#include "widgets/HeatmapPanel.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/PlanForm.h"
#include "widgets/SteeringPanel.h"
#include "widgets/StreamView.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLockFile>
#include <QMainWindow>
#include <QMessageBox>
#include <QPushButton>
#include <QStandardPaths>
#include <QTimer>
#include <QUndoStack>

namespace kvsteer::ui {

namespace {

constexpr int kAutosaveDelayMs = 300;
constexpr qint64 kRecoveryInlineVectorsLimit = 64LL << 20;   // bigger vector blobs go to a sibling file
const QLatin1String kSiblingMark("\n@sibling");

QString sessionFilter() { return QObject::tr("kvsteer sessions (*.kvsession);;All files (*)"); }

} // namespace

DocumentController::DocumentController(const StudioOptions& options, ErrorReporter* errors, StudioStatusBar* status,
                                       ModelController* model, ImageController* image, RunController* runs, SteeringController* steering,
                                       StudyController* study, const RunPanes& panes, QUndoStack* undo, QMainWindow* window)
    : QObject(window), options_(options), errors_(errors), status_(status), model_(model), image_(image), runs_(runs),
      steering_(steering), study_(study), panes_(panes), undo_(undo), window_(window) {
    autosaveTimer_ = new QTimer(this);
    autosaveTimer_->setSingleShot(true);
    autosaveTimer_->setInterval(kAutosaveDelayMs);
    connect(autosaveTimer_, &QTimer::timeout, this, &DocumentController::autosave);

    // Crash recovery: one recovery file per running studio; a second studio gets its own.
    const QString dataDir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    QDir().mkpath(dataDir);
    recoveryPath_ = options.recoveryPath;
    if (recoveryPath_.isEmpty()) {
        lock_ = new QLockFile(dataDir + QStringLiteral("/studio.lock"));
        lock_->setStaleLockTime(0);
        primary_ = lock_->tryLock(0);
        recoveryPath_ = primary_ ? dataDir + QStringLiteral("/recovery.kvsession")
                                 : dataDir + QStringLiteral("/recovery-%1.kvsession").arg(QCoreApplication::applicationPid());
    }
}

DocumentController::~DocumentController() { delete lock_; }

// ---- collect and apply ------------------------------------------------------------------------

SessionDocument DocumentController::collect() const {
    const ModelInfo& m = model_->info();
    SessionDocument s;
    s.modelDirectory = m.directory;
    s.modelName = m.name;
    s.modelConfigHash = m.configHash;
    s.imageBytes = image_->bytes();
    s.imageName = image_->name();
    s.prompt = panes_.prompt->prompt();
    s.generation = panes_.prompt->generation();
    s.strength = panes_.canvas->strength();
    s.plan = panes_.steering->planSettings();
    const RecipeRequest r = panes_.steering->recipe();
    s.source = r.source;
    s.targetImagePath = panes_.steering->targetImagePath();
    s.targetImageBytes = r.targetImage;
    s.textPairs = panes_.steering->textPairs();
    s.preRope = r.preRope;
    s.perPosition = r.perPosition;
    s.pca = r.pca;
    s.vectorsBlob = steering_->vectors().blob;
    s.vectorsOrigin = steering_->vectors().origin;
    s.unsteered = panes_.streams->tokens(false);
    s.steered = panes_.streams->tokens(true);
    s.heatmap = panes_.heatmaps->settings();
    s.heatmapLayer = panes_.heatmaps->selectedLayer();
    s.live = panes_.prompt->live();
    s.study = study_->setup();
    return s;
}

void DocumentController::apply(const SessionDocument& s, const QString& origin) {
    Q_EMIT aboutToApply();
    restoring_ = true;   // until the image is back: nothing here is a new edit
    // A session belongs to a model: load it when it is not the one in use and it is available.
    // The one being loaded counts as in use: a recovery offered at start-up is answered while the
    // command line's model (often the same one) is still on its way, and reopening it would cancel it.
    const bool beingLoaded = model_->loading() && QDir(model_->loadingDirectory()).canonicalPath() == QDir(s.modelDirectory).canonicalPath();
    if (!s.modelDirectory.isEmpty() && !beingLoaded && s.modelConfigHash != model_->info().configHash) {
        if (QFileInfo(s.modelDirectory + QStringLiteral("/config.json")).exists()) model_->open(s.modelDirectory);
        else
            errors_->show(tr("Session model"), tr("%1 was made with the model “%2” (%3), which is not available here. Its vectors "
                                                  "load only into that model; open it with File → Open Model Directory….")
                                                   .arg(origin, s.modelName, QDir::toNativeSeparators(s.modelDirectory)));
    }
    PatchCanvas* canvas = panes_.canvas;
    panes_.prompt->setPrompt(s.prompt);
    panes_.prompt->setGeneration(s.generation);
    panes_.prompt->setLive(s.live);
    panes_.steering->setSource(s.source);
    panes_.steering->setTargetImage(s.targetImagePath, s.targetImageBytes);
    panes_.steering->setTextPairs(s.textPairs);
    panes_.steering->setRecipeOptions(s.preRope, s.perPosition, s.pca);
    panes_.steering->planForm()->forgetRestored();   // the session's plan, not the last session's settings
    panes_.steering->setPlanSettings(s.plan);
    // The session's map as saved, then fitted to the grid of the model it will run with: the
    // session's own model, when it is being loaded, fits it on arrival (MainWindow::onModelLoaded);
    // otherwise the model loaded now does, here. A map made for another grid (a 24×24 LLaVA mask
    // opened with a 16×16 PaliGemma) is resampled rather than dropped or applied to the wrong cells,
    // and the person is told (PatchCanvas::setGridSize, SteeringController::onMaskResampled).
    canvas->applyStrength(s.strength);
    undo_->clear();
    if (!model_->loading() && model_->info().valid()) canvas->setGridSize(model_->info().gridRows, model_->info().gridCols);
    // The Worker handles these in order: model (above), vectors, image.
    steering_->restore(s.vectorsBlob, s.vectorsOrigin);
    panes_.heatmaps->setSettings(s.heatmap);
    panes_.heatmaps->setSelectedLayer(s.heatmapLayer);
    study_->restore(s.study);   // its frontier and table from the folder's summary, when it has one
    runs_->forgetRun();
    // The answers are shown once the image is back (its arrival clears the panes).
    panes_.streams->restore(s.unsteered, s.steered);
    if (!s.imageBytes.isEmpty()) {
        pendingOutputsImageId_ = image_->openData(s.imageBytes, s.imageName);
        pendingUnsteered_ = s.unsteered;
        pendingSteered_ = s.steered;
        pendingOutputs_ = true;
    } else {
        restoring_ = false;
    }
}

void DocumentController::onImageShown(quint64 imageId) {
    if (!pendingOutputs_ || imageId < pendingOutputsImageId_) return;
    // The session's own image: its answers go back beside it (unless a model is on its way, which
    // clears them). A newer one (the command line's, a drop) replaced it: its answers do not apply.
    if (imageId == pendingOutputsImageId_ && !model_->loading()) {
        panes_.streams->restore(pendingUnsteered_, pendingSteered_);
        pendingOutputs_ = false;
        markCleanPoint();   // the session is all here (its vectors came before its image)
    }
    endSessionRestore();
}

void DocumentController::onImageFailed() {
    if (pendingOutputs_) endSessionRestore();
}

void DocumentController::endSessionRestore() {
    pendingOutputs_ = false;
    restoring_ = false;
    Q_EMIT restored();
}

// ---- files ------------------------------------------------------------------------------------

bool DocumentController::saveTo(const QString& path) {
    QString error;
    if (!SessionFile::save(path, collect(), &error)) {
        errors_->show(tr("Save session"), error);
        return false;
    }
    sessionPath_ = path;
    dirty_ = false;
    recovered_ = false;
    undo_->setClean();
    markCleanPoint();
    updateTitle();
    status_->message(tr("Session saved to %1").arg(QDir::toNativeSeparators(path)), 5000);
    Q_EMIT saved(path);
    return true;
}

bool DocumentController::openFrom(const QString& path) {
    SessionDocument s;
    QString error;
    if (!SessionFile::load(path, &s, &error)) {
        errors_->show(tr("Open session"), error);
        return false;
    }
    apply(s, QFileInfo(path).fileName());
    sessionPath_ = path;
    dirty_ = false;
    recovered_ = false;
    cleanPoint_.clear();   // set once what the session brings has arrived (StartupSequence, or below)
    updateTitle();
    autosave();
    Q_EMIT opened(path);
    return true;
}

// Recovered work is saved through the dialog, which proposes the file it came from: the person
// confirms that the recovered state replaces it.
bool DocumentController::save() { return sessionPath_.isEmpty() || recovered_ ? saveAs() : saveTo(sessionPath_); }

QString DocumentController::suggestedSavePath() const {
    return sessionPath_.isEmpty() ? QFileInfo(image_->name()).completeBaseName() + QStringLiteral(".kvsession") : sessionPath_;
}

bool DocumentController::saveAs() {
    const QString path = askSavePath(window_, tr("Save Session"), suggestedSavePath(), sessionFilter(), QStringLiteral(".kvsession"));
    if (path.isEmpty()) return false;
    return saveTo(path);
}

void DocumentController::openDialog() {
    if (!confirmDiscard()) return;
    const QString path = QFileDialog::getOpenFileName(window_, tr("Open Session"), QString(), sessionFilter());
    if (!path.isEmpty()) openFrom(path);
}

// ---- dirty, autosave, recovery ---------------------------------------------------------------

void DocumentController::markDirty() {
    if (restoring_) return;
    dirty_ = true;
    updateTitle();
    autosaveTimer_->start();
}

void DocumentController::updateTitle() {
    const QString what = sessionPath_.isEmpty() ? (image_->name().isEmpty() ? tr("Untitled") : image_->name())
                                                : QFileInfo(sessionPath_).fileName();
    window_->setWindowTitle(QStringLiteral("%1[*] — kvsteer Studio").arg(what));
    window_->setWindowModified(dirty_);
}

void DocumentController::autosave() {
    if (recoveryPath_.isEmpty()) return;
    SessionDocument s = collect();
    s.savedAs = sessionPath_;   // so that a restore names the file the work belongs to
    const QString sibling = recoveryPath_ + QStringLiteral(".vectors");
    if (s.vectorsBlob.size() > kRecoveryInlineVectorsLimit) {   // large vectors: written once, beside the recovery file
        QFile f(sibling);
        if (f.size() != s.vectorsBlob.size() && f.open(QIODevice::WriteOnly)) f.write(s.vectorsBlob);
        s.vectorsBlob.clear();
        s.vectorsOrigin += kSiblingMark;
    }
    QString error;
    if (!SessionFile::save(recoveryPath_, s, &error)) status_->message(tr("Autosave failed: %1").arg(error), 5000);
    Q_EMIT autosaved();
}

void DocumentController::removeRecoveryFile() {
    QFile::remove(recoveryPath_);
    QFile::remove(recoveryPath_ + QStringLiteral(".vectors"));
}

void DocumentController::offerRecoveryIfAny(const QString& whatFollows) {
    if (!primary_ || !options_.offerRecovery || !QFileInfo::exists(recoveryPath_)) return;
    SessionDocument s;
    QString error;
    if (!SessionFile::load(recoveryPath_, &s, &error)) {
        removeRecoveryFile();
        return;
    }
    if (s.vectorsOrigin.endsWith(kSiblingMark)) {
        s.vectorsOrigin.chop(kSiblingMark.size());
        QFile f(recoveryPath_ + QStringLiteral(".vectors"));
        if (f.open(QIODevice::ReadOnly)) s.vectorsBlob = f.readAll();
    }
    const QDateTime when = QFileInfo(recoveryPath_).lastModified();
    QMessageBox box(QMessageBox::Question, tr("Recover session?"),
                    tr("kvsteer Studio did not shut down cleanly. Restore the work autosaved at %1?")
                        .arg(QLocale().toString(when, QLocale::ShortFormat)),
                    QMessageBox::NoButton, window_);
    QString details = tr("Image: %1\nPrompt: %2").arg(s.imageName.isEmpty() ? tr("none") : s.imageName, s.prompt);
    if (!whatFollows.isEmpty()) details += QStringLiteral("\n\n") + whatFollows;
    box.setInformativeText(details);
    QPushButton* restore = box.addButton(tr("Restore"), QMessageBox::AcceptRole);
    box.addButton(tr("Discard"), QMessageBox::DestructiveRole);
    box.setDefaultButton(restore);
    box.exec();
    if (box.clickedButton() == restore) {
        apply(s, tr("The recovered session"));
        sessionPath_ = s.savedAs;   // the file it came from, if any: the title names it, Save proposes it
        recovered_ = true;          // saved nowhere yet
        dirty_ = true;
        updateTitle();
    } else {
        removeRecoveryFile();
    }
}

// What a person made and would lose: the session less its answers and view settings (a run is
// redone with one click). The vectors are hashed as they are, not as the file's base64.
QByteArray DocumentController::workFingerprint() const {
    SessionDocument s = collect();
    const QByteArray vectors = s.vectorsBlob;
    s.vectorsBlob.clear();
    s.unsteered.clear();
    s.steered.clear();
    s.heatmap = HeatmapSettings();
    s.heatmapLayer = 0;
    s.live = true;
    QCryptographicHash h(QCryptographicHash::Sha1);
    QJsonObject json = QJsonDocument::fromJson(SessionFile::toJson(s)).object();
    json.remove(QStringLiteral("saved"));   // the time it was written, not work
    h.addData(QJsonDocument(json).toJson(QJsonDocument::Compact));
    h.addData(vectors);
    return h.result();
}

void DocumentController::markCleanPoint() {
    if (!recovered_) cleanPoint_ = workFingerprint();
}

bool DocumentController::confirmDiscard() {
    // Worth asking only when there is work a person made since the last clean point (the start-up's
    // scene, a session opened or saved); without one, when there are strokes or vectors.
    const bool scene = image_->ready() || model_->info().textOnly();   // an image, or a text prompt's strip
    if (!dirty_ || !options_.confirmClose || !scene) return true;
    const bool madeNothing = cleanPoint_.isEmpty() ? undo_->isClean() && !steering_->vectors().valid() : workFingerprint() == cleanPoint_;
    if (madeNothing) return true;
    const auto answer = QMessageBox::question(window_, tr("Unsaved changes"), tr("Save the current session first?"),
                                              QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Cancel) return false;
    if (answer == QMessageBox::Save) return save();
    return true;
}

// An edit of the last moments (the autosave waits 300 ms for the next one) is written now: the
// studio is ending without the questions (a signal), and the recovery file is all that remains.
void DocumentController::flushAutosave() {
    if (!autosaveTimer_->isActive()) return;
    autosaveTimer_->stop();
    autosave();
}

void DocumentController::closeCleanly() {
    autosaveTimer_->stop();
    removeRecoveryFile();
}

} // namespace kvsteer::ui
