#pragma once
// DocumentController: the session as a document. Collects it from the panes and applies it back
// (a session's model is loaded when it differs; its answers are shown once its image is back);
// saves and opens .kvsession files; keeps the dirty flag and the window title; autosaves every
// change to the crash-recovery file (one per running studio, guarded by a lock file) and offers
// it back after a crash; asks before unsaved work is discarded.
//
// While a session (or the start-up) is being applied, changes are not edits: restoring() is true
// and nothing is marked dirty.
#include "studio/RunController.h"
#include "studio/SessionFile.h"
#include "studio/StudioOptions.h"

#include <QObject>

class QLockFile;
class QMainWindow;
class QTimer;
class QUndoStack;

namespace kvsteer::ui {

class ErrorReporter;
class ImageController;
class ModelController;
class RunController;
class SteeringController;
class StudioStatusBar;
class StudyController;

class DocumentController : public QObject {
    Q_OBJECT
public:
    DocumentController(const StudioOptions& options, ErrorReporter* errors, StudioStatusBar* status, ModelController* model,
                       ImageController* image, RunController* runs, SteeringController* steering, StudyController* study,
                       const RunPanes& panes, QUndoStack* undo, QMainWindow* window);
    ~DocumentController() override;

    QString recoveryPath() const { return recoveryPath_; }
    bool restoring() const { return restoring_; }
    // Changes made while restoring are not edits. A session or recovery being applied stays
    // restoring until its image is back, whatever a caller that set things up meanwhile says.
    void setRestoring(bool on) { restoring_ = on || pendingOutputs_; }
    // A session or recovery applied, its image (and the answers that come with it) still on the way.
    bool restoringSession() const { return pendingOutputs_; }

    bool saveTo(const QString& path);
    bool openFrom(const QString& path);
    bool save();
    bool saveAs();
    QString suggestedSavePath() const;   // what Save As proposes: the session's file, else the image's name
    void openDialog();
    // At start-up: offer the autosaved session if the last studio did not shut down cleanly;
    // `whatFollows` says what the command line does next (it replaces part of what is restored).
    void offerRecoveryIfAny(const QString& whatFollows = QString());
    // Nothing made yet: what is open now (the start-up's scene, a session) is what closing would
    // lose nothing of. Ignored while recovered work is saved nowhere.
    void markCleanPoint();
    bool confirmDiscard();   // asks only when the work differs from the clean point
    void closeCleanly();                // a clean exit: nothing to recover
    void flushAutosave();               // a pending autosave, written now (ending on a signal)

    void markDirty();
    void updateTitle();
    void onImageShown(quint64 imageId);   // a session's answers wait for its image
    void onImageFailed();

Q_SIGNALS:
    void aboutToApply();                // the run in progress belongs to the old session: stop it
    void saved(const QString& path);
    void opened(const QString& path);
    void restored();                    // what a session or recovery brought has all arrived
    void autosaved();

private:
    SessionDocument collect() const;
    void apply(const SessionDocument& s, const QString& origin);
    void autosave();
    void removeRecoveryFile();
    void endSessionRestore();

    const StudioOptions options_;
    ErrorReporter* errors_;
    StudioStatusBar* status_;
    ModelController* model_;
    ImageController* image_;
    RunController* runs_;
    SteeringController* steering_;
    StudyController* study_;
    const RunPanes panes_;
    QUndoStack* undo_;
    QMainWindow* window_;

    QString sessionPath_;
    QString recoveryPath_;
    QByteArray workFingerprint() const;
    QByteArray cleanPoint_;             // workFingerprint() at the clean point; empty: none yet
    bool recovered_ = false;            // the recovery file's work is shown and saved nowhere
    bool primary_ = true;               // the first running studio: its recovery file is the one offered
    QLockFile* lock_ = nullptr;
    QTimer* autosaveTimer_ = nullptr;
    bool dirty_ = false;
    bool restoring_ = false;

    // a session's answers, shown once its image is back
    bool pendingOutputs_ = false;
    quint64 pendingOutputsImageId_ = 0;
    QVector<StreamToken> pendingUnsteered_, pendingSteered_;
};

} // namespace kvsteer::ui
