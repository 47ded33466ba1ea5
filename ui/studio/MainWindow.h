#pragma once
// MainWindow: the studio's window. It builds the panes — the image pane (paint bar, PatchCanvas,
// prompt, run summary), the side-by-side answers (StreamView) above the heatmaps (HeatmapPanel),
// and the steering dock (SteeringPanel) — starts the Worker's thread, creates the controllers
// that own the studio's behaviour, and wires them together. It decides nothing itself:
//   ModelController    the model and its loads           ImageController    the image and its loads
//   RunController      runs, live re-runs, answers       SteeringController vectors and masks
//   DocumentController sessions, dirty flag, autosave    StartupSequence    the start-up script
//   StudioSettings     what is remembered (QSettings)    StudioActions      menus and toolbars
//   AtlasController    the strength × layer atlas dock       EvalController     the Evaluate dock (datasets)
//   StudyController    the Evaluate dock's Study tab (a suite × a grid of plans, the frontier)
//   StudioStatusBar    the status bar                    ErrorReporter      error dialogs
//
// The public methods and signals are the studio's scripting surface (tests, app/studio_main.cpp).
#include "studio/StudioOptions.h"

#include <QMainWindow>
#include <QThread>

class QDockWidget;
class QLabel;
class QSplitter;
class QTabWidget;
class QToolBar;
class QUndoStack;

namespace kvsteer::ui {

class AtlasController;
class EvalController;
class EvalPanel;
class StudyController;
class StudyPanel;
class AtlasPanel;
class DocumentController;
class ErrorReporter;
class HeatmapPanel;
class ImageController;
class ModelController;
class PatchCanvas;
class PromptPanel;
class PythonHandOff;
class RunController;
class RunSummary;
class StartupSequence;
class SteeringController;
class SteeringPanel;
class StreamView;
class StudioActions;
class StudioSettings;
class StudioStatusBar;
class Worker;

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
    AtlasPanel* atlasPanel() const { return atlasPanel_; }
    AtlasController* atlas() const { return atlas_; }
    EvalPanel* evalPanel() const { return evalPanel_; }
    EvalController* evaluation() const { return eval_; }
    QDockWidget* evalDock() const { return evalDock_; }
    StudyPanel* studyPanel() const { return studyPanel_; }
    StudyController* study() const { return study_; }
    void showStudy();   // the Evaluate dock, its Study tab raised
    PythonHandOff* pythonHandOff() const { return python_; }
    StudioActions* actions() const { return actions_; }
    QUndoStack* undoStack() const { return undo_; }
    Worker* worker() const { return worker_; }
    StudioStatusBar* studioStatus() const { return status_; }

    const ModelInfo& modelInfo() const;
    bool imageReady() const;
    bool running() const;
    quint64 activeRunId() const;   // the run whose answers the panes show
    const RunStarted& lastRunStarted() const;
    const VectorsInfo& vectors() const;
    QString lastErrorText() const;
    QString maskNoteText() const;   // what the run summary says beside the mask (a resample), "" for nothing
    int errorCount() const;
    QString recoveryPath() const;
    QByteArray imageBytes() const;

public Q_SLOTS:
    void openImageFile(const QString& path);
    void openImageData(const QByteArray& bytes, const QString& name);
    void openModel(const QString& directory);
    void openDemoScene();   // File → Open Demo Scene (studio/DemoScene.h)
    void run();
    void stop();   // the run, and a model load in flight
    bool saveSessionTo(const QString& path);
    QString suggestedSessionPath() const;   // what Save Session would propose
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
    void showEvaluate(int tab);
    void buildPanes();
    void createControllers();
    void wirePanes();
    void wireActions();
    void wireControllers();

    void onModelLoaded(const ModelInfo& info);
    void onImageShown(const ImageInfo& info, bool newImage);
    void editChanged();                 // the map or the plan changed: live re-run, autosave
    void refreshAvailability();
    void refreshModelStatus();
    void refreshRunSummary();
    void saveHeatmapDialog();
    void rememberSettings();
    void fitIntoScreen();

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
    RunSummary* runSummary_ = nullptr;
    QSplitter* mainSplit_ = nullptr;
    QSplitter* rightSplit_ = nullptr;
    QWidget* paintBar_ = nullptr;
    AtlasPanel* atlasPanel_ = nullptr;
    EvalPanel* evalPanel_ = nullptr;
    QDockWidget* evalDock_ = nullptr;
    QDockWidget* steeringDock_ = nullptr;
    QTabWidget* evalTabs_ = nullptr;
    StudyPanel* studyPanel_ = nullptr;

    ErrorReporter* errors_ = nullptr;
    StudioStatusBar* status_ = nullptr;
    StudioSettings* settings_ = nullptr;
    StudioActions* actions_ = nullptr;
    ModelController* models_ = nullptr;
    ImageController* images_ = nullptr;
    RunController* runs_ = nullptr;
    AtlasController* atlas_ = nullptr;
    EvalController* eval_ = nullptr;
    StudyController* study_ = nullptr;
    PythonHandOff* python_ = nullptr;
    SteeringController* steeringCtl_ = nullptr;
    DocumentController* document_ = nullptr;
    StartupSequence* startup_ = nullptr;
};

} // namespace kvsteer::ui
