#pragma once
// MainWindow: the studio. Composes the image pane (PatchCanvas + prompt), the side-by-side
// answers (StreamView), the heatmaps (HeatmapPanel) and the steering dock (SteeringPanel);
// owns the Worker's thread; menus, shortcuts, status bar, settings, sessions and crash recovery.
//
// Flow: a Run prefills once per (model, image, prompt) in the Worker; afterwards every stroke or
// steering change (debounced 150 ms, "Live") cancels the running decode and re-runs only the
// edit and the decode from the kept snapshot.
#include "StudioTypes.h"

#include <QMainWindow>
#include <QPointer>
#include <QThread>

class QAction;
class QLabel;
class QLockFile;
class QMenu;
class QMessageBox;
class QProgressBar;
class QSplitter;
class QTimer;
class QUndoStack;
class QSpinBox;
class QSlider;
class QToolBar;

namespace kvsteer::ui {

class HeatmapPanel;
class PatchCanvas;
class PromptPanel;
class SteeringPanel;
class StreamView;
class Worker;
struct StudioSession;

struct StudioOptions {
    QString modelDirectory;           // empty: the bundled demo model, else the most recent one
    LoadSettings load;
    bool loadOverride = false;        // `load` given on the command line (else from QSettings)
    QString imagePath;
    QString prompt;
    QString maskSpec;                 // PNG / .npy / .safetensors / rect:r0,c0,r1,c1
    QString vectorsPath;
    QString targetImagePath;          // compute image-pair vectors toward this image at start
    QString sessionPath;
    QString op;
    QString layers;                   // "A-B" or "N"
    double ck = qQNaN();
    double cv = qQNaN();
    int maxTokens = 0;
    int heatmapMetric = -1;
    int heatmapLayer = -1;
    bool perPosition = false;         // --steer-toward computes one direction per patch
    bool propagate = false;
    bool run = false;                 // run once everything above is ready
    QString readyFile;                // written when that run (and its heatmap) has finished
    bool offerRecovery = true;
    QString recoveryPath;             // empty: AppDataLocation/recovery.kvsession
    bool confirmClose = true;         // ask about unsaved changes on close
    bool useSettings = true;          // read and write QSettings (off in tests)
};

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const StudioOptions& options, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Widgets (for tests and scripting).
    PatchCanvas* canvas() const { return canvas_; }
    PromptPanel* promptPanel() const { return prompt_; }
    StreamView* streamView() const { return streams_; }
    HeatmapPanel* heatmapPanel() const { return heatmaps_; }
    SteeringPanel* steeringPanel() const { return steering_; }
    QUndoStack* undoStack() const { return undo_; }
    Worker* worker() const { return worker_; }

    const ModelInfo& modelInfo() const { return model_; }
    bool imageReady() const { return imageReady_; }
    bool running() const { return running_; }
    quint64 activeRunId() const { return activeRunId_; }   // the run whose answers the panes show
    const RunStarted& lastRunStarted() const { return lastStarted_; }
    const VectorsInfo& vectors() const { return vectors_; }
    QString lastErrorText() const { return lastError_; }
    int errorCount() const { return errorCount_; }
    QString recoveryPath() const { return recoveryPath_; }
    QByteArray imageBytes() const { return imageBytes_; }

public Q_SLOTS:
    void openImageFile(const QString& path);
    void openImageData(const QByteArray& bytes, const QString& name);
    void openModel(const QString& directory);
    void run();
    void stop();
    bool saveSessionTo(const QString& path);
    bool openSessionFrom(const QString& path);
    void exportVectorsTo(const QString& path);
    void importVectorsFrom(const QString& path);
    void exportMaskTo(const QString& path);
    void importMaskFrom(const QString& spec);

Q_SIGNALS:
    void modelReady(const kvsteer::ui::ModelInfo& info);
    void imageShown();
    void runDone(const kvsteer::ui::RunFinished& info);
    void vectorsChanged(const kvsteer::ui::VectorsInfo& info);
    void vectorsExported(const QString& path);
    void maskExported(const QString& path);
    void sessionSaved(const QString& path);
    void sessionOpened(const QString& path);
    void errorShown(const QString& title, const QString& text);
    void autosaved();

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    // construction
    void buildUi();
    void buildActions();
    void buildMenus();
    void buildStatusBar();
    void connectWorker();
    void restoreSettings();
    void saveSettings();
    void startUp();

    // actions
    void openImageDialog();
    void pasteImage();
    void openModelDialog();
    void openSessionDialog();
    bool saveSession();
    bool saveSessionAs();
    void importVectorsDialog();
    void exportVectorsDialog();
    void exportMaskDialog();
    void importMaskDialog();
    void saveHeatmapDialog();
    void preferences();
    void about();
    void chooseTargetImage();
    void loadTextPairsDialog();
    void computeVectors(const RecipeRequest& partial);

    // worker results
    void onModelLoaded(const ModelInfo& info);
    void onModelFailed(const QString& dir, const QString& message);
    void onModelLoadCancelled(const QString& dir);
    void onImageReady(const ImageInfo& info);
    void onImageFailed(const QString& name, const QString& message);
    void onRunStarted(const RunStarted& info);
    void onTokenPair(const TokenPair& pair);
    void onRunFinished(const RunFinished& info);
    void onRunFailed(quint64 runId, const QString& message);
    void onVectorsReady(const VectorsInfo& info);
    void onProgress(const QString& stage, int value, int maximum);
    void onIdle();

    // helpers
    void showError(const QString& title, const QString& text);
    void editChanged();                 // the map or the plan changed: live re-run, autosave
    void scheduleLiveRun();
    void markDirty();
    void autosave();
    void removeRecoveryFile();
    void offerRecovery();
    StudioSession collectSession() const;
    void applySession(const StudioSession& s, const QString& origin);
    void updateRunAvailability();
    void updateTitle();
    void updateStatus();
    void updateMemory();
    void updateRunInfo();
    void addRecent(const QString& key, const QString& value);
    void rebuildRecentMenus();
    void checkStartupRun();
    bool confirmDiscard();

    StudioOptions options_;
    QThread workerThread_;
    Worker* worker_ = nullptr;
    QUndoStack* undo_ = nullptr;

    PatchCanvas* canvas_ = nullptr;
    PromptPanel* prompt_ = nullptr;
    StreamView* streams_ = nullptr;
    HeatmapPanel* heatmaps_ = nullptr;
    SteeringPanel* steering_ = nullptr;
    QLabel* imageHeader_ = nullptr;
    QLabel* runInfo_ = nullptr;
    QSplitter* mainSplit_ = nullptr;
    QSplitter* rightSplit_ = nullptr;
    QToolBar* paintBar_ = nullptr;
    QSpinBox* brushSize_ = nullptr;
    QSlider* brushStrength_ = nullptr;
    QLabel* brushStrengthLabel_ = nullptr;

    QProgressBar* progress_ = nullptr;
    QLabel* hoverLabel_ = nullptr;
    QLabel* modelLabel_ = nullptr;
    QLabel* dtypeLabel_ = nullptr;
    QLabel* threadsLabel_ = nullptr;
    QLabel* memoryLabel_ = nullptr;

    QMenu* recentImagesMenu_ = nullptr;
    QMenu* recentModelsMenu_ = nullptr;
    QAction* runAction_ = nullptr;
    QAction* stopAction_ = nullptr;
    QAction* liveAction_ = nullptr;
    QAction* brushAction_ = nullptr;
    QAction* eraserAction_ = nullptr;
    QAction* rectAction_ = nullptr;
    QAction* gridAction_ = nullptr;
    QList<QAction*> needsModel_;
    QList<QAction*> needsImage_;

    QTimer* liveTimer_ = nullptr;
    QTimer* autosaveTimer_ = nullptr;
    QTimer* memoryTimer_ = nullptr;
    QLockFile* lock_ = nullptr;

    ModelInfo model_;
    QString loadingModelDir_;
    bool modelLoading_ = false;
    LoadSettings loadSettings_;

    quint64 imageId_ = 0;
    QByteArray imageBytes_, pendingImageBytes_;
    QString imageName_, pendingImageName_, pendingImagePath_;
    bool imageReady_ = false;

    quint64 nextRunId_ = 1;
    quint64 activeRunId_ = 0;
    bool running_ = false;
    bool haveRun_ = false;              // a run happened for this image: live re-runs are allowed
    RunStarted lastStarted_;
    RunStarted lastPrefill_;            // the last run that prefilled
    RunFinished lastFinished_;
    VectorsInfo vectors_;
    bool computing_ = false;

    QString sessionPath_;
    QString recoveryPath_;
    bool dirty_ = false;
    bool restoring_ = false;            // applying a session: no live runs
    QString lastError_;
    int errorCount_ = 0;
    QPointer<QMessageBox> errorBox_;

    // a session's answers, shown once its image is back
    bool pendingOutputs_ = false;
    quint64 pendingOutputsImageId_ = 0;
    QVector<StreamToken> pendingUnsteered_, pendingSteered_;

    // start-up scripting: what the --run waits for
    bool startupRunPending_ = false;
    bool waitModel_ = false, waitImage_ = false, waitMask_ = false, waitVectors_ = false;
    quint64 startupRunId_ = 0;
    int pendingHeatmapLayer_ = -1;
};

} // namespace kvsteer::ui
