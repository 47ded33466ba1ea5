#include "studio/MainWindow.h"

#include "studio/AtlasController.h"
#include "studio/EvalController.h"
#include "studio/DemoScene.h"
#include "studio/DocumentController.h"
#include "studio/ErrorReporter.h"
#include "studio/FileDialogs.h"
#include "studio/HelpDialogs.h"
#include "studio/ImageController.h"
#include "studio/ModelController.h"
#include "studio/PythonHandOff.h"
#include "studio/RunController.h"
#include "studio/StartupSequence.h"
#include "studio/SteeringController.h"
#include "studio/StudioActions.h"
#include "studio/TokenStripController.h"
#include "studio/StudioSettings.h"
#include "studio/StudioStatusBar.h"
#include "studio/StudyController.h"
#include "widgets/AtlasPanel.h"
#include "widgets/EvalPanel.h"
#include "widgets/FrontierPlot.h"
#include "widgets/HeatmapPanel.h"
#include "widgets/Icons.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/RunSummary.h"
#include "widgets/SteeringPanel.h"
#include "widgets/StreamView.h"
#include "widgets/StudyPanel.h"
#include "worker/Worker.h"

#include <QAction>
#include <QCloseEvent>
#include <QCoreApplication>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

namespace kvsteer::ui {

MainWindow::MainWindow(const StudioOptions& options, QWidget* parent) : QMainWindow(parent), options_(options) {
    registerStudioTypes();
    setWindowIcon(icons::application());
    setAcceptDrops(false);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);

    undo_ = new QUndoStack(this);
    worker_ = new Worker;
    worker_->moveToThread(&workerThread_);
    connect(&workerThread_, &QThread::finished, worker_, &QObject::deleteLater);
    workerThread_.setObjectName(QStringLiteral("kvsteer-worker"));
    workerThread_.start();

    buildPanes();
    createControllers();
    wirePanes();
    wireActions();
    wireControllers();

    models_->setLoadSettings(settings_->loadSettings(options_.load, options_.loadOverride));
    resize(1560, 960);
    document_->setRestoring(true);   // remembered settings are not edits
    settings_->restoreWidgets();
    fitIntoScreen();
    actions_->grid->setChecked(canvas_->gridVisible());
    document_->setRestoring(false);

    document_->updateTitle();
    refreshModelStatus();
    refreshRunSummary();
    refreshAvailability();
    QTimer::singleShot(0, startup_, &StartupSequence::start);
}

MainWindow::~MainWindow() {
    // Children still emit while QWidget tears them down (QUndoStack::cleanChanged, for one), when
    // this object's members are gone already: cut every connection into this window and delete
    // the controllers (and their connections) first.
    worker_->disconnect();
    for (QObject* child : findChildren<QObject*>()) child->disconnect(this);
    for (QObject* c : std::initializer_list<QObject*>{startup_, document_, python_, study_, eval_, steeringCtl_, atlas_, runs_, images_, models_, actions_, settings_, status_, errors_})
        delete c;
    worker_->cancelRunsBefore(std::numeric_limits<quint64>::max());
    worker_->cancelAtlasesBefore(std::numeric_limits<quint64>::max());
    worker_->cancelEvals();
    worker_->cancelStudies();
    workerThread_.quit();
    workerThread_.wait();
}

// ---- building ---------------------------------------------------------------------------------

void MainWindow::buildPanes() {
    // Image pane: header, paint tools, canvas, prompt, run summary.
    auto* imagePane = new QWidget(this);
    auto* iv = new QVBoxLayout(imagePane);
    iv->setContentsMargins(8, 6, 4, 8);
    iv->setSpacing(4);
    imageHeader_ = new QLabel(tr("<b>No image</b> <span style='color:#8a929c'>open one to start</span>"), imagePane);
    imageHeader_->setTextFormat(Qt::RichText);
    imageHeader_->setWordWrap(true);   // a long file name never widens the window
    iv->addWidget(imageHeader_);
    paintBar_ = new QWidget(imagePane);   // StudioActions fills it: the paint tools, the brush
    iv->addWidget(paintBar_);
    canvas_ = new PatchCanvas(undo_, imagePane);
    iv->addWidget(canvas_, 100);   // the height the image needs at this width, at most; the rest goes below
    prompt_ = new PromptPanel(imagePane);
    prompt_->setExamples(demoQuestions());
    iv->addWidget(prompt_);
    runSummary_ = new RunSummary(imagePane);
    iv->addSpacing(4);
    iv->addWidget(runSummary_);
    iv->addStretch(1);

    // Answers above heatmaps.
    streams_ = new StreamView(this);
    heatmaps_ = new HeatmapPanel(this);
    auto* streamBox = new QWidget(this);
    auto* sv = new QVBoxLayout(streamBox);
    sv->setContentsMargins(4, 6, 8, 4);
    sv->addWidget(streams_);
    auto* heatBox = new QWidget(this);
    auto* hv = new QVBoxLayout(heatBox);
    hv->setContentsMargins(0, 0, 2, 2);
    auto* heatTitle = new QLabel(tr("<b>Cache heatmaps</b> <span style='color:#8a929c'>per layer, over the patch grid</span>"), heatBox);
    heatTitle->setContentsMargins(8, 2, 0, 0);
    hv->addWidget(heatTitle);
    hv->addWidget(heatmaps_, 1);
    rightSplit_ = new QSplitter(Qt::Vertical, this);
    rightSplit_->addWidget(streamBox);
    rightSplit_->addWidget(heatBox);
    rightSplit_->setStretchFactor(0, 2);
    rightSplit_->setStretchFactor(1, 3);
    rightSplit_->setChildrenCollapsible(false);

    mainSplit_ = new QSplitter(Qt::Horizontal, this);
    mainSplit_->addWidget(imagePane);
    mainSplit_->addWidget(rightSplit_);
    mainSplit_->setStretchFactor(0, 2);
    mainSplit_->setStretchFactor(1, 3);
    mainSplit_->setChildrenCollapsible(false);
    mainSplit_->setSizes({560, 760});
    rightSplit_->setSizes({280, 620});
    setCentralWidget(mainSplit_);

    // Steering dock.
    steering_ = new SteeringPanel(this);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(steering_);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* dock = steeringDock_ = new QDockWidget(tr("Steering"), this);
    dock->setObjectName(QStringLiteral("steeringDock"));
    dock->setWidget(scroll);
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
    addDockWidget(Qt::RightDockWidgetArea, dock);
    scroll->setMinimumWidth(360);
    resizeDocks({dock}, {385}, Qt::Horizontal);

    // Atlas dock, below the steering dock: where steering works, strength × layer range.
    atlasPanel_ = new AtlasPanel(this);
    auto* atlasDock = new QDockWidget(tr("Atlas"), this);
    atlasDock->setObjectName(QStringLiteral("atlasDock"));
    atlasDock->setWidget(atlasPanel_);
    atlasDock->setFeatures(dock->features());
    addDockWidget(Qt::RightDockWidgetArea, atlasDock, Qt::Vertical);
    resizeDocks({dock, atlasDock}, {3, 2}, Qt::Vertical);   // the steering panel's fields first; an idle atlas is mostly empty

    // Evaluate dock (Tools → Evaluate on a Dataset… / Study a Grid…), a tab beside the atlas,
    // hidden until asked: one setting on a dataset, or a study (a suite × a grid of plans). The
    // tabs' fields, plots and tables scroll rather than stretch the dock on a laptop screen.
    evalPanel_ = new EvalPanel(this);
    studyPanel_ = new StudyPanel(this);
    auto scrolled = [this](QWidget* panel) {
        auto* area = new QScrollArea(this);
        area->setWidget(panel);
        area->setWidgetResizable(true);
        area->setFrameShape(QFrame::NoFrame);
        return area;
    };
    evalTabs_ = new QTabWidget(this);
    evalTabs_->setDocumentMode(true);
    evalTabs_->addTab(scrolled(evalPanel_), tr("Dataset"));
    evalTabs_->addTab(scrolled(studyPanel_), tr("Study"));
    evalDock_ = new QDockWidget(tr("Evaluate"), this);
    evalDock_->setObjectName(QStringLiteral("evalDock"));
    evalDock_->setWidget(evalTabs_);
    evalDock_->setFeatures(dock->features());
    tabifyDockWidget(atlasDock, evalDock_);
    atlasDock->raise();
    evalDock_->hide();
}

void MainWindow::createControllers() {
    actions_ = new StudioActions(this, paintBar_, canvas_, undo_);   // after the dock: the View menu lists it
    actions_->live->setChecked(prompt_->live());
    status_ = new StudioStatusBar(statusBar());
    errors_ = new ErrorReporter(this);
    settings_ = new StudioSettings(options_.useSettings, {this, mainSplit_, rightSplit_, canvas_, prompt_, steering_, heatmaps_}, this);
    actions_->setRecent(settings_->recent(StudioSettings::Recent::Images), settings_->recent(StudioSettings::Recent::Models));

    const RunPanes panes{prompt_, canvas_, steering_, heatmaps_, streams_};
    models_ = new ModelController(worker_, errors_, this);
    images_ = new ImageController(worker_, errors_, settings_, this);
    runs_ = new RunController(worker_, errors_, status_, models_, images_, panes, this);
    atlas_ = new AtlasController(worker_, errors_, models_, images_, panes, atlasPanel_, this);
    steeringCtl_ = new SteeringController(worker_, errors_, status_, models_, images_, canvas_, prompt_, steering_, this);
    eval_ = new EvalController(worker_, errors_, models_, images_, steeringCtl_, runs_, panes, evalPanel_, this);
    study_ = new StudyController(worker_, errors_, models_, steeringCtl_, runs_, panes, studyPanel_, this);
    connect(study_, &StudyController::shown, this, [this] {   // the results below the fields: scrolled into view
        if (auto* area = qobject_cast<QScrollArea*>(evalTabs_->widget(1))) area->ensureWidgetVisible(studyPanel_->plot(), 0, 0);
    });
    connect(actions_->evaluate, &QAction::triggered, this, [this] { showEvaluate(0); });
    connect(actions_->study, &QAction::triggered, this, &MainWindow::showStudy);
    python_ = new PythonHandOff(models_, images_, steeringCtl_, status_, panes, this);
    new TokenStripController(worker_, models_, prompt_, canvas_, imageHeader_, this);   // a text-only model's canvas
    document_ = new DocumentController(options_, errors_, status_, models_, images_, runs_, steeringCtl_, study_, panes, undo_, this);
    connect(study_, &StudyController::edited, document_, &DocumentController::markDirty);
}

// ---- what a signal brings ---------------------------------------------------------------------

void MainWindow::onModelLoaded(const ModelInfo& info) {
    runs_->forgetRun();
    atlas_->clear();
    // A painted map of another grid is resampled (and said so) once, onto the grid it lands on:
    // with an image open that is the image's grid under this model, which comes next (the Worker
    // prepares the image again), not the model's square default.
    if (!(info.hasVision && !images_->bytes().isEmpty())) canvas_->setGridSize(info.gridRows, info.gridCols);
    steering_->setModel(info.layers, info.kvHeads);
    heatmaps_->setModel(info.layers, info.kvHeads, info.gridRows, info.gridCols);
    prompt_->setTemplate(info.family, info.promptTemplate);
    prompt_->setExamples(exampleQuestions(info));
    streams_->clear();
    settings_->addRecent(StudioSettings::Recent::Models, info.directory);
    status_->message(tr("Loaded %1 in %2 s").arg(info.name).arg(info.loadMs / 1000.0, 0, 'f', 1), 5000);
    refreshModelStatus();
    refreshAvailability();
    document_->updateTitle();
    refreshRunSummary();
    Q_EMIT modelReady(info);
}

void MainWindow::onImageShown(const ImageInfo& info, bool newImage) {
    status_->showViews(info.views);   // before the grid, which names them
    heatmaps_->setViews(info.views);
    if (info.gridRows > 0) canvas_->setGridSize(info.gridRows, info.gridCols);   // the grid this image is laid out on
    canvas_->setImage(info.crop, info.name);
    // A picture in views (LLaVA-NeXT): the canvas is its crops' grid; the base view takes its
    // strength from the cells it covers.
    const QString grid = info.views.size() > 1 ? tr("views %1, painted on the last").arg(info.views.join(QStringLiteral(" + ")))
                                               : tr("%1×%2 patches").arg(canvas_->strength().rows).arg(canvas_->strength().cols);
    imageHeader_->setText(tr("<b>%1</b> <span style='color:#8a929c'>%2×%3 → %4×%5 as the model sees it · %6</span>")
                              .arg(info.name.toHtmlEscaped())
                              .arg(info.originalWidth)
                              .arg(info.originalHeight)
                              .arg(info.crop.width())
                              .arg(info.crop.height())
                              .arg(grid));
    if (newImage) {
        runs_->forgetRun();
        atlas_->invalidate();
        streams_->clear();
        heatmaps_->clear();
        document_->markDirty();
    }
    document_->onImageShown(info.id);
    refreshAvailability();
    document_->updateTitle();
    Q_EMIT imageShown();
}

void MainWindow::editChanged() {
    document_->markDirty();
    if (!document_->restoring()) runs_->editChanged();
}

void MainWindow::refreshAvailability() {
    const ModelInfo& model = models_->info();
    QString why;
    if (models_->loading()) why = tr("The model is loading…");
    else if (!model.valid()) why = tr("Load a model first (File → Open Model Directory…)");
    else if (!images_->ready() && !model.textOnly()) why = tr("Open an image first (File → Open Image…)");
    else if (prompt_->prompt().trimmed().isEmpty()) why = tr("Type a question first");
    prompt_->setCanRun(why.isEmpty(), why);
    atlas_->setAvailability(why.isEmpty(), why);
    prompt_->setRunning(runs_->running());
    actions_->setAvailability(why.isEmpty(), runs_->running(), models_->loading(), model.valid(), images_->ready() || model.textOnly());
}

void MainWindow::refreshModelStatus() { status_->showModel(models_->info(), models_->loading(), models_->loadingDirectory()); }

void MainWindow::refreshRunSummary() {
    runSummary_->show({steering_->planSettings(), canvas_->strength(), steeringCtl_->maskNote(), models_->info().layers, steeringCtl_->vectors(),
                       runs_->lastPrefill(), runs_->lastStarted(), runs_->lastFinished()});
}

// The default or remembered size, never larger than the screen the window opens on (a 1560×960
// studio on a 1280×800 laptop would put the docks and the status bar off-screen), and placed on it.
// The allowance is for the window manager's frame, which is not known before the window is shown.
void MainWindow::fitIntoScreen() {
    const QRect screen = this->screen()->availableGeometry();
    const QSize frame(8, 40);
    const QSize fitted = size().boundedTo(screen.size() - frame).expandedTo(minimumSizeHint());
    if (fitted != size()) resize(fitted);
    QRect placed(pos(), fitted + frame);
    if (!screen.contains(placed)) {
        move(screen.x() + std::max(0, (screen.width() - placed.width()) / 2), screen.y() + std::max(0, (screen.height() - placed.height()) / 2));
    }
}

void MainWindow::saveHeatmapDialog() {
    const QString path = askSavePath(this, tr("Save Heatmaps"), QStringLiteral("heatmaps.png"), tr("PNG images (*.png)"), QStringLiteral(".png"));
    if (path.isEmpty()) return;
    if (!heatmaps_->savePng(path)) errors_->show(tr("Save heatmaps"), tr("%1 could not be written.").arg(path));
    else status_->message(tr("Heatmaps saved to %1").arg(path), 5000);
}

void MainWindow::rememberSettings() { settings_->save(models_->loadSettings()); }

void MainWindow::closeEvent(QCloseEvent* event) {
    if (!document_->confirmDiscard()) {
        event->ignore();
        return;
    }
    stop();
    rememberSettings();
    document_->closeCleanly();
    event->accept();
}

// ---- scripting surface ------------------------------------------------------------------------

const ModelInfo& MainWindow::modelInfo() const { return models_->info(); }
bool MainWindow::imageReady() const { return images_->ready(); }
bool MainWindow::running() const { return runs_->running(); }
quint64 MainWindow::activeRunId() const { return runs_->activeRunId(); }
const RunStarted& MainWindow::lastRunStarted() const { return runs_->lastStarted(); }
const VectorsInfo& MainWindow::vectors() const { return steeringCtl_->vectors(); }
QString MainWindow::lastErrorText() const { return errors_->lastText(); }
QString MainWindow::maskNoteText() const { return steeringCtl_->maskNote(); }
int MainWindow::errorCount() const { return errors_->count(); }
QString MainWindow::recoveryPath() const { return document_->recoveryPath(); }
QByteArray MainWindow::imageBytes() const { return images_->bytes(); }

void MainWindow::openImageFile(const QString& path) { images_->openFile(path); }
void MainWindow::openImageData(const QByteArray& bytes, const QString& name) { images_->openData(bytes, name); }
void MainWindow::openModel(const QString& directory) { models_->open(directory); }
void MainWindow::openDemoScene() {
    kvsteer::ui::openDemoScene(models_, images_, steeringCtl_, prompt_, steering_);
    // The scene is the studio's, not the person's work: once its vectors (its last part) are in.
    // Checked by path: when they fail to load, the next vectors to arrive are someone's work.
    const QString demoVectors = QFileInfo(demoScenePaths().vectors).absoluteFilePath();
    connect(
        steeringCtl_, &SteeringController::vectorsReady, document_,
        [this, demoVectors](const VectorsInfo& info) {
            if (info.fromFile && QFileInfo(info.filePath).absoluteFilePath() == demoVectors) document_->markCleanPoint();
        },
        Qt::SingleShotConnection);
}
void MainWindow::run() { runs_->run(); }

void MainWindow::showStudy() { showEvaluate(1); }

// The Evaluate dock on one of its tabs (0: Dataset, 1: Study), given the larger part of the
// column it shares with the Steering dock when it opens: its chart and table are what is looked at.
void MainWindow::showEvaluate(int tab) {
    const bool opening = !evalDock_->isVisible();
    evalDock_->show();
    evalDock_->raise();
    evalTabs_->setCurrentIndex(tab);
    if (opening && !evalDock_->isFloating() && dockWidgetArea(evalDock_) == dockWidgetArea(steeringDock_))
        resizeDocks({steeringDock_, evalDock_}, {2, 3}, Qt::Vertical);
}

void MainWindow::stop() {
    runs_->stop();
    atlas_->stop();
    models_->cancelLoad();
}

bool MainWindow::saveSessionTo(const QString& path) { return document_->saveTo(path); }
QString MainWindow::suggestedSessionPath() const { return document_->suggestedSavePath(); }
bool MainWindow::openSessionFrom(const QString& path) { return document_->openFrom(path); }
void MainWindow::exportVectorsTo(const QString& path) { steeringCtl_->exportTo(path); }
void MainWindow::importVectorsFrom(const QString& path) { steeringCtl_->importFrom(path); }
void MainWindow::exportMaskTo(const QString& path) { steeringCtl_->exportMaskTo(path); }
void MainWindow::importMaskFrom(const QString& spec) { steeringCtl_->importMaskFrom(spec); }

} // namespace kvsteer::ui
