#include "MainWindow.h"

#include "HeatmapPanel.h"
#include "Icons.h"
#include "PatchCanvas.h"
#include "PreferencesDialog.h"
#include "PromptPanel.h"
#include "SessionFile.h"
#include "SteeringPanel.h"
#include "StreamView.h"
#include "Worker.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QBuffer>
#include <QClipboard>
#include <QCloseEvent>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLockFile>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>

#include <cmath>

// The icons are compiled into the static kvsteer_ui library; a static library's resources must
// be registered explicitly, from outside any namespace.
static void initStudioResources() { Q_INIT_RESOURCE(studio); }

namespace kvsteer::ui {

namespace {

constexpr int kLiveDebounceMs = 150;
constexpr int kAutosaveDelayMs = 300;
constexpr int kMaxRecent = 10;
constexpr qint64 kRecoveryInlineVectorsLimit = 64LL << 20;   // bigger vector blobs go to a sibling file

const QStringList kDemoQuestions = {
    QStringLiteral("What color is the circle?"), QStringLiteral("What shape is red?"),   QStringLiteral("How many shapes are there?"),
    QStringLiteral("Is there a blue circle?"),   QStringLiteral("Where is the red circle?"), QStringLiteral("Describe the image."),
};

QString imageFilter() {
    return QObject::tr("Images (*.png *.jpg *.jpeg *.bmp *.gif);;All files (*)");
}

QString sessionFilter() { return QObject::tr("kvsteer sessions (*.kvsession);;All files (*)"); }

// A save dialog that appends `suffix` (".png") when the user typed a name without one; "" = cancelled.
QString askSavePath(QWidget* parent, const QString& title, const QString& suggested, const QString& filter, const QString& suffix) {
    QString path = QFileDialog::getSaveFileName(parent, title, suggested, filter);
    if (!path.isEmpty() && QFileInfo(path).suffix().isEmpty()) path += suffix;
    return path;
}

// Resident memory of this process, from /proc (Linux); -1 if unknown.
qint64 residentBytes() {
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly)) return -1;
    const QList<QByteArray> lines = f.readAll().split('\n');
    for (const QByteArray& line : lines)
        if (line.startsWith("VmRSS:")) {
            const QList<QByteArray> parts = line.simplified().split(' ');
            if (parts.size() >= 2) return parts[1].toLongLong() * 1024;
        }
    return -1;
}

QString formatCount(qint64 n) {
    if (n >= 1000000000) return QStringLiteral("%1B").arg(n / 1e9, 0, 'f', 2);
    if (n >= 1000000) return QStringLiteral("%1M").arg(n / 1e6, 0, 'f', 1);
    if (n >= 1000) return QStringLiteral("%1K").arg(n / 1e3, 0, 'f', 1);
    return QString::number(n);
}

QLabel* statusField(QWidget* parent, const QString& tip) {
    auto* l = new QLabel(parent);
    l->setToolTip(tip);
    l->setContentsMargins(6, 0, 6, 0);
    return l;
}

} // namespace

MainWindow::MainWindow(const StudioOptions& options, QWidget* parent) : QMainWindow(parent), options_(options) {
    initStudioResources();
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

    buildUi();
    buildActions();
    buildMenus();
    buildStatusBar();
    connectWorker();

    liveTimer_ = new QTimer(this);
    liveTimer_->setSingleShot(true);
    liveTimer_->setInterval(kLiveDebounceMs);
    connect(liveTimer_, &QTimer::timeout, this, &MainWindow::run);
    autosaveTimer_ = new QTimer(this);
    autosaveTimer_->setSingleShot(true);
    autosaveTimer_->setInterval(kAutosaveDelayMs);
    connect(autosaveTimer_, &QTimer::timeout, this, &MainWindow::autosave);
    memoryTimer_ = new QTimer(this);
    memoryTimer_->setInterval(2000);
    connect(memoryTimer_, &QTimer::timeout, this, &MainWindow::updateMemory);
    memoryTimer_->start();

    // Crash recovery: one recovery file per running studio; a second studio gets its own.
    const QString dataDir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    QDir().mkpath(dataDir);
    recoveryPath_ = options_.recoveryPath;
    bool primary = true;
    if (recoveryPath_.isEmpty()) {
        lock_ = new QLockFile(dataDir + QStringLiteral("/studio.lock"));
        lock_->setStaleLockTime(0);
        primary = lock_->tryLock(0);
        recoveryPath_ = primary ? dataDir + QStringLiteral("/recovery.kvsession")
                                : dataDir + QStringLiteral("/recovery-%1.kvsession").arg(QCoreApplication::applicationPid());
    }
    if (!primary) options_.offerRecovery = false;

    restoreSettings();
    updateTitle();
    updateStatus();
    updateRunInfo();
    updateRunAvailability();
    QTimer::singleShot(0, this, &MainWindow::startUp);
}

MainWindow::~MainWindow() {
    // Children still emit while QWidget tears them down (QUndoStack::cleanChanged, for one), when
    // this object's members are gone already: cut every connection into this window first.
    for (QObject* child : findChildren<QObject*>()) child->disconnect(this);
    worker_->disconnect(this);
    worker_->cancelRunsBefore(std::numeric_limits<quint64>::max());
    workerThread_.quit();
    workerThread_.wait();
    delete lock_;
}

// ---- construction ---------------------------------------------------------------------------

void MainWindow::buildUi() {
    // Image pane: header, paint tools, canvas, prompt.
    auto* imagePane = new QWidget(this);
    auto* iv = new QVBoxLayout(imagePane);
    iv->setContentsMargins(8, 6, 4, 8);
    iv->setSpacing(4);
    imageHeader_ = new QLabel(tr("<b>No image</b> <span style='color:#8a929c'>open one to start</span>"), imagePane);
    imageHeader_->setTextFormat(Qt::RichText);
    iv->addWidget(imageHeader_);
    paintBar_ = new QToolBar(tr("Paint"), imagePane);
    paintBar_->setIconSize(QSize(20, 20));
    paintBar_->setToolButtonStyle(Qt::ToolButtonIconOnly);
    iv->addWidget(paintBar_);
    canvas_ = new PatchCanvas(undo_, imagePane);
    iv->addWidget(canvas_, 100);   // takes the height it can use (at most its width); the rest goes below
    prompt_ = new PromptPanel(imagePane);
    prompt_->setExamples(kDemoQuestions);
    iv->addWidget(prompt_);
    runInfo_ = new QLabel(imagePane);
    runInfo_->setObjectName(QStringLiteral("runInfo"));
    runInfo_->setTextFormat(Qt::RichText);
    runInfo_->setWordWrap(true);
    runInfo_->setStyleSheet(QStringLiteral("QLabel#runInfo { background: palette(base); border: 1px solid palette(mid);"
                                           " border-radius: 6px; padding: 6px 10px; }"));
    iv->addSpacing(4);
    iv->addWidget(runInfo_);
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
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* dock = new QDockWidget(tr("Steering"), this);
    dock->setObjectName(QStringLiteral("steeringDock"));
    dock->setWidget(scroll);
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
    addDockWidget(Qt::RightDockWidgetArea, dock);
    scroll->setMinimumWidth(360);
    resizeDocks({dock}, {385}, Qt::Horizontal);

    // Widget wiring that does not involve the worker.
    connect(canvas_, &PatchCanvas::strengthChanged, this, [this](const StrengthGrid& g) {
        steering_->setPaintedCells(g.paintedCells(), g.size());
        updateRunInfo();
        editChanged();
    });
    connect(canvas_, &PatchCanvas::hoverCell, this, [this](int r, int c, float v) {
        hoverLabel_->setText(r < 0 ? QString() : tr("row %1, col %2 · token %3 · strength %4").arg(r).arg(c).arg(r * canvas_->strength().cols + c).arg(v, 0, 'f', 2));
    });
    connect(canvas_, &PatchCanvas::imageFileDropped, this, &MainWindow::openImageFile);
    connect(canvas_, &PatchCanvas::imageDropped, this, [this](const QImage& img) {
        QByteArray png;
        QBuffer buf(&png);
        buf.open(QIODevice::WriteOnly);
        img.convertToFormat(QImage::Format_RGB888).save(&buf, "PNG");
        openImageData(png, tr("dropped image"));
    });
    connect(heatmaps_, &HeatmapPanel::cellClicked, canvas_, &PatchCanvas::highlightCell);
    connect(heatmaps_, &HeatmapPanel::saveRequested, this, &MainWindow::saveHeatmapDialog);
    connect(heatmaps_, &HeatmapPanel::settingsChanged, this, [this](const HeatmapSettings& s) {
        worker_->setHeatmapSettings(s);
        if (!running_) QMetaObject::invokeMethod(worker_, &Worker::requestHeatmap, Qt::QueuedConnection);
        markDirty();
    });
    connect(heatmaps_, &HeatmapPanel::layerSelected, this, &MainWindow::markDirty);

    connect(prompt_, &PromptPanel::runRequested, this, &MainWindow::run);
    connect(prompt_, &PromptPanel::stopRequested, this, &MainWindow::stop);
    connect(prompt_, &PromptPanel::promptEdited, this, [this] {
        streams_->setStale(streams_->tokenCount(false) > 0);
        updateRunAvailability();
        markDirty();
    });
    connect(prompt_, &PromptPanel::promptChanged, this, [this] { updateRunAvailability(); });
    connect(prompt_, &PromptPanel::generationChanged, this, [this] { editChanged(); });
    connect(prompt_, &PromptPanel::liveToggled, this, [this](bool on) {
        if (liveAction_) liveAction_->setChecked(on);
    });

    connect(steering_, &SteeringPanel::planChanged, this, [this] {
        updateRunInfo();
        editChanged();
    });
    connect(steering_, &SteeringPanel::computeRequested, this, &MainWindow::computeVectors);
    connect(steering_, &SteeringPanel::chooseTargetImageRequested, this, &MainWindow::chooseTargetImage);
    connect(steering_, &SteeringPanel::importVectorsRequested, this, &MainWindow::importVectorsDialog);
    connect(steering_, &SteeringPanel::exportVectorsRequested, this, &MainWindow::exportVectorsDialog);
    connect(steering_, &SteeringPanel::clearVectorsRequested, this, [this] {
        QMetaObject::invokeMethod(worker_, &Worker::clearVectors, Qt::QueuedConnection);
    });
    connect(steering_, &SteeringPanel::exportMaskRequested, this, &MainWindow::exportMaskDialog);
    connect(steering_, &SteeringPanel::importMaskRequested, this, &MainWindow::importMaskDialog);
    connect(steering_, &SteeringPanel::loadTextPairsRequested, this, &MainWindow::loadTextPairsDialog);
    connect(undo_, &QUndoStack::cleanChanged, this, [this] { updateTitle(); });
}

void MainWindow::buildActions() {
    auto add = [this](QToolBar* bar, icons::Id icon, const QString& text, const QKeySequence& key, const QString& tip, auto slot) {
        auto* a = new QAction(icons::get(icon), text, this);
        if (!key.isEmpty()) a->setShortcut(key);
        a->setToolTip(key.isEmpty() ? tip : QStringLiteral("%1 (%2)").arg(tip, key.toString(QKeySequence::NativeText)));
        a->setStatusTip(tip);
        connect(a, &QAction::triggered, this, slot);
        if (bar) bar->addAction(a);
        return a;
    };

    // Paint toolbar beside the canvas.
    auto* tools = new QActionGroup(this);
    brushAction_ = add(paintBar_, icons::Id::Brush, tr("Brush"), QKeySequence(Qt::Key_B), tr("Paint steering strength"),
                       [this] { canvas_->setTool(PatchCanvas::Tool::Brush); });
    eraserAction_ = add(paintBar_, icons::Id::Eraser, tr("Eraser"), QKeySequence(Qt::Key_E), tr("Erase strength"),
                        [this] { canvas_->setTool(PatchCanvas::Tool::Eraser); });
    rectAction_ = add(paintBar_, icons::Id::Rectangle, tr("Rectangle"), QKeySequence(Qt::Key_R),
                      tr("Drag a rectangle of patches (right-drag erases)"), [this] { canvas_->setTool(PatchCanvas::Tool::Rectangle); });
    for (QAction* a : {brushAction_, eraserAction_, rectAction_}) {
        a->setCheckable(true);
        tools->addAction(a);
    }
    brushAction_->setChecked(true);
    connect(canvas_, &PatchCanvas::toolChanged, this, [this](PatchCanvas::Tool t) {
        (t == PatchCanvas::Tool::Brush ? brushAction_ : t == PatchCanvas::Tool::Eraser ? eraserAction_ : rectAction_)->setChecked(true);
    });
    paintBar_->addSeparator();
    auto* sizeLabel = new QLabel(tr(" Size "), paintBar_);
    paintBar_->addWidget(sizeLabel);
    brushSize_ = new QSpinBox(paintBar_);
    brushSize_->setRange(1, 16);
    brushSize_->setValue(int(canvas_->brushSize()));
    brushSize_->setToolTip(tr("Brush diameter in patches ([ and ] change it)"));
    paintBar_->addWidget(brushSize_);
    connect(brushSize_, qOverload<int>(&QSpinBox::valueChanged), canvas_, [this](int v) { canvas_->setBrushSize(v); });
    connect(canvas_, &PatchCanvas::brushSizeChanged, brushSize_, [this](double v) { brushSize_->setValue(int(v)); });
    paintBar_->addWidget(new QLabel(tr("  Strength "), paintBar_));
    brushStrength_ = new QSlider(Qt::Horizontal, paintBar_);
    brushStrength_->setRange(5, 100);
    brushStrength_->setValue(100);
    brushStrength_->setFixedWidth(80);
    brushStrength_->setToolTip(tr("Strength s the brush paints (0.05–1); the plan multiplies it by c_k and c_v"));
    paintBar_->addWidget(brushStrength_);
    brushStrengthLabel_ = new QLabel(QStringLiteral("1.00"), paintBar_);
    brushStrengthLabel_->setMinimumWidth(32);
    paintBar_->addWidget(brushStrengthLabel_);
    connect(brushStrength_, &QSlider::valueChanged, this, [this](int v) {
        canvas_->setBrushStrength(v / 100.0);
        brushStrengthLabel_->setText(QString::number(v / 100.0, 'f', 2));
    });
    connect(canvas_, &PatchCanvas::brushStrengthChanged, this, [this](double v) {
        const QSignalBlocker block(brushStrength_);
        brushStrength_->setValue(int(std::lround(v * 100)));
        brushStrengthLabel_->setText(QString::number(v, 'f', 2));
    });
    paintBar_->addSeparator();
    auto* fill = add(paintBar_, icons::Id::Fill, tr("Fill"), QKeySequence(tr("Ctrl+Shift+F")), tr("Paint every patch with the brush strength"),
                     [this] { canvas_->fillAll(); });
    auto* clear = add(paintBar_, icons::Id::Clear, tr("Clear"), QKeySequence(Qt::Key_Delete), tr("Erase the whole mask"),
                      [this] { canvas_->clearAll(); });
    auto* invert = add(paintBar_, icons::Id::Invert, tr("Invert"), QKeySequence(tr("Ctrl+Shift+I")), tr("Swap painted and unpainted patches"),
                       [this] { canvas_->invert(); });
    gridAction_ = add(paintBar_, icons::Id::Grid, tr("Show Patch Grid"), QKeySequence(Qt::Key_G), tr("Show the 24×24 visual-token grid"),
                      [this](bool on) { canvas_->setGridVisible(on); });
    gridAction_->setCheckable(true);
    gridAction_->setChecked(canvas_->gridVisible());
    needsImage_ << fill << clear << invert;
    for (QAction* a : {fill, clear, invert}) a->setProperty("menu", "edit");

    runAction_ = new QAction(icons::get(icons::Id::Run), tr("Run"), this);
    runAction_->setShortcuts({QKeySequence(tr("Ctrl+R")), QKeySequence(tr("Ctrl+Return"))});
    runAction_->setToolTip(tr("Prefill once, apply the plan, stream both answers (Ctrl+R)"));
    connect(runAction_, &QAction::triggered, this, &MainWindow::run);
    stopAction_ = new QAction(icons::get(icons::Id::Stop), tr("Stop"), this);
    stopAction_->setShortcut(QKeySequence(Qt::Key_Escape));
    stopAction_->setToolTip(tr("Stop the run (the prefill or the decoding) or the model load (Esc)"));
    connect(stopAction_, &QAction::triggered, this, &MainWindow::stop);
    liveAction_ = new QAction(tr("Live Re-run While Painting"), this);
    liveAction_->setCheckable(true);
    liveAction_->setChecked(prompt_->live());
    connect(liveAction_, &QAction::toggled, prompt_, &PromptPanel::setLive);
}

void MainWindow::buildMenus() {
    auto act = [this](QMenu* m, icons::Id icon, bool withIcon, const QString& text, const QKeySequence& key, const QString& tip, auto slot) {
        QAction* a = withIcon ? m->addAction(icons::get(icon), text) : m->addAction(text);
        if (!key.isEmpty()) a->setShortcut(key);
        a->setStatusTip(tip);
        a->setToolTip(tip);
        connect(a, &QAction::triggered, this, slot);
        return a;
    };

    // File
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* openImage = act(file, icons::Id::OpenImage, true, tr("&Open Image…"), QKeySequence::Open, tr("Open the image to steer"),
                             [this] { openImageDialog(); });
    QAction* paste = act(file, icons::Id::Paste, true, tr("&Paste Image"), QKeySequence::Paste, tr("Use the image on the clipboard"),
                         [this] { pasteImage(); });
    recentImagesMenu_ = file->addMenu(tr("Recent &Images"));
    file->addSeparator();
    QAction* openModelAct = act(file, icons::Id::OpenModel, true, tr("Open &Model Directory…"), QKeySequence(tr("Ctrl+Shift+O")),
                                tr("Load a llava-hf model directory (config.json, safetensors, tokenizer.model)"),
                                [this] { openModelDialog(); });
    recentModelsMenu_ = file->addMenu(tr("Recent Mo&dels"));
    file->addSeparator();
    QAction* openSession = act(file, icons::Id::OpenSession, true, tr("Open &Session…"), QKeySequence(tr("Ctrl+Alt+O")),
                               tr("Open a saved session (.kvsession)"), [this] { openSessionDialog(); });
    QAction* save = act(file, icons::Id::SaveSession, true, tr("&Save Session"), QKeySequence::Save,
                        tr("Save image, prompt, mask, plan, vectors and answers in one file"), [this] { saveSession(); });
    act(file, icons::Id::SaveSession, false, tr("Save Session &As…"), QKeySequence(tr("Ctrl+Shift+S")), tr("Save the session under a new name"),
        [this] { saveSessionAs(); });
    file->addSeparator();
    QAction* importVectors = act(file, icons::Id::ImportVectors, true, tr("&Import Vectors…"), QKeySequence(tr("Ctrl+I")),
                                 tr("Load a steering vector file made for this model"), [this] { importVectorsDialog(); });
    QAction* exportVectors = act(file, icons::Id::ExportVectors, true, tr("&Export Vectors…"), QKeySequence(tr("Ctrl+E")),
                                 tr("Save the vectors with the current plan settings and mask"), [this] { exportVectorsDialog(); });
    QAction* exportMask = act(file, icons::Id::ExportMask, true, tr("Export Mas&k as PNG…"), QKeySequence(tr("Ctrl+Shift+E")),
                              tr("Save the painted strength as a grayscale PNG"), [this] { exportMaskDialog(); });
    act(file, icons::Id::OpenImage, false, tr("Import Mask…"), QKeySequence(), tr("Load a mask (image, .npy, .safetensors)"),
        [this] { importMaskDialog(); });
    QAction* saveHeat = act(file, icons::Id::SavePlot, true, tr("Save &Heatmaps as PNG…"), QKeySequence(), tr("Save the heatmap panel as an image"),
                            [this] { saveHeatmapDialog(); });
    file->addSeparator();
    act(file, icons::Id::About, false, tr("&Quit"), QKeySequence::Quit, tr("Quit kvsteer Studio"), [this] { close(); });
    needsModel_ << importVectors << exportVectors;
    needsImage_ << exportMask << saveHeat;
    (void)save;

    // Edit
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    QAction* undo = undo_->createUndoAction(this, tr("&Undo"));
    undo->setIcon(icons::get(icons::Id::Undo));
    undo->setShortcut(QKeySequence::Undo);
    QAction* redo = undo_->createRedoAction(this, tr("&Redo"));
    redo->setIcon(icons::get(icons::Id::Redo));
    redo->setShortcuts({QKeySequence(tr("Ctrl+Shift+Z")), QKeySequence(tr("Ctrl+Y"))});
    edit->addAction(undo);
    edit->addAction(redo);
    edit->addSeparator();
    for (QAction* a : paintBar_->actions())
        if (a->property("menu").toString() == QLatin1String("edit")) edit->addAction(a);
    edit->addSeparator();
    act(edit, icons::Id::About, false, tr("&Preferences…"), QKeySequence::Preferences, tr("Device, dtype and threads for loading models"),
        [this] { preferences(); });

    // Paint
    QMenu* paint = menuBar()->addMenu(tr("&Paint"));
    paint->addAction(brushAction_);
    paint->addAction(eraserAction_);
    paint->addAction(rectAction_);
    paint->addSeparator();
    act(paint, icons::Id::Brush, false, tr("Larger Brush"), QKeySequence(Qt::Key_BracketRight), tr("Brush one patch wider"),
        [this] { canvas_->setBrushSize(canvas_->brushSize() + 1); });
    act(paint, icons::Id::Brush, false, tr("Smaller Brush"), QKeySequence(Qt::Key_BracketLeft), tr("Brush one patch narrower"),
        [this] { canvas_->setBrushSize(canvas_->brushSize() - 1); });
    paint->addSeparator();
    paint->addAction(gridAction_);

    // Run
    QMenu* runMenu = menuBar()->addMenu(tr("&Run"));
    runMenu->addAction(runAction_);
    runMenu->addAction(stopAction_);
    runMenu->addSeparator();
    runMenu->addAction(liveAction_);

    // View
    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());
    QAction* mainToolbarToggle = view->addAction(tr("Main Toolbar"));
    mainToolbarToggle->setCheckable(true);

    // Help
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    act(help, icons::Id::About, false, tr("&Quick Guide"), QKeySequence::HelpContents, tr("How to steer in five steps"), [this] {
        QMessageBox box(QMessageBox::NoIcon, tr("Quick Guide"), QString(), QMessageBox::Close, this);
        box.setTextFormat(Qt::RichText);
        box.setText(tr("<h3>Steering in five steps</h3><ol>"
                       "<li><b>Open an image</b> (Ctrl+O, drop it on the canvas or paste it) and type a question.</li>"
                       "<li><b>Run</b> (Ctrl+R): the image and prompt are prefilled once; both answers stream.</li>"
                       "<li><b>Get a direction</b> in the Steering panel: compute it toward a second image, from a painted "
                       "region or from text pairs, or import a vector file.</li>"
                       "<li><b>Paint</b> the patches to steer (B brush, E eraser, R rectangle; right-drag erases). With "
                       "<i>Live</i> on, every stroke re-runs the edit and the decode from the kept prefill.</li>"
                       "<li><b>Compare</b>: tokens that differ are highlighted; hover one for its top-5. The heatmaps show "
                       "what the edit did to each layer's cache and where the answer looks.</li></ol>"
                       "<p>Sessions (Ctrl+S) keep everything in one file; the studio autosaves and offers recovery after a crash.</p>"));
        box.exec();
    });
    act(help, icons::Id::About, true, tr("&About kvsteer Studio"), QKeySequence(), tr("Version and credits"), [this] { about(); });
    act(help, icons::Id::About, false, tr("About &Qt"), QKeySequence(), tr("The Qt version in use"), [] { QApplication::aboutQt(); });

    // Main toolbar.
    auto* bar = addToolBar(tr("Main"));
    bar->setObjectName(QStringLiteral("mainToolbar"));
    bar->setIconSize(QSize(20, 20));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->setMovable(false);
    bar->addAction(openImage);
    bar->addAction(openModelAct);
    bar->addSeparator();
    bar->addAction(openSession);
    bar->addAction(save);
    bar->addSeparator();
    bar->addAction(undo);
    bar->addAction(redo);
    for (QAction* a : {undo, redo})   // their text names the command: keep the bar steady
        if (auto* b = qobject_cast<QToolButton*>(bar->widgetForAction(a))) b->setToolButtonStyle(Qt::ToolButtonIconOnly);
    bar->addSeparator();
    bar->addAction(runAction_);
    bar->addAction(stopAction_);
    mainToolbarToggle->setChecked(true);
    connect(mainToolbarToggle, &QAction::toggled, bar, &QToolBar::setVisible);
    (void)paste;
    rebuildRecentMenus();
}

void MainWindow::buildStatusBar() {
    QStatusBar* sb = statusBar();
    hoverLabel_ = new QLabel(sb);
    hoverLabel_->setContentsMargins(4, 0, 4, 0);
    sb->addWidget(hoverLabel_, 1);
    progress_ = new QProgressBar(sb);
    progress_->setMaximumWidth(260);
    progress_->setMinimumWidth(200);
    progress_->setTextVisible(true);
    progress_->hide();
    sb->addPermanentWidget(progress_);
    modelLabel_ = statusField(sb, tr("The loaded model"));
    dtypeLabel_ = statusField(sb, tr("Weight dtype and device"));
    threadsLabel_ = statusField(sb, tr("Threads doing the matrix multiplications"));
    memoryLabel_ = statusField(sb, tr("Memory used by the studio (resident set)"));
    for (QLabel* l : {modelLabel_, dtypeLabel_, threadsLabel_, memoryLabel_}) sb->addPermanentWidget(l);
    updateMemory();
}

void MainWindow::connectWorker() {
    connect(worker_, &Worker::progress, this, &MainWindow::onProgress);
    connect(worker_, &Worker::idle, this, &MainWindow::onIdle);
    connect(worker_, &Worker::modelLoaded, this, &MainWindow::onModelLoaded);
    connect(worker_, &Worker::modelFailed, this, &MainWindow::onModelFailed);
    connect(worker_, &Worker::modelLoadCancelled, this, &MainWindow::onModelLoadCancelled);
    connect(worker_, &Worker::imageReady, this, &MainWindow::onImageReady);
    connect(worker_, &Worker::imageFailed, this, &MainWindow::onImageFailed);
    connect(worker_, &Worker::runStarted, this, &MainWindow::onRunStarted);
    connect(worker_, &Worker::tokenPair, this, &MainWindow::onTokenPair);
    connect(worker_, &Worker::runFinished, this, &MainWindow::onRunFinished);
    connect(worker_, &Worker::runFailed, this, &MainWindow::onRunFailed);
    connect(worker_, &Worker::heatmapReady, this, [this](const HeatmapData& h) {
        if (h.runId == activeRunId_ || h.runId == lastStarted_.runId) heatmaps_->setData(h);
    });
    connect(worker_, &Worker::vectorsReady, this, &MainWindow::onVectorsReady);
    connect(worker_, &Worker::vectorsCleared, this, [this] {
        vectors_ = VectorsInfo();
        steering_->setVectorsInfo(vectors_);
        markDirty();
        Q_EMIT vectorsChanged(vectors_);
    });
    connect(worker_, &Worker::vectorsExported, this, [this](const QString& path) {
        statusBar()->showMessage(tr("Vectors exported to %1").arg(QDir::toNativeSeparators(path)), 6000);
        Q_EMIT vectorsExported(path);
    });
    connect(worker_, &Worker::maskExported, this, [this](const QString& path) {
        statusBar()->showMessage(tr("Mask saved to %1").arg(QDir::toNativeSeparators(path)), 6000);
        Q_EMIT maskExported(path);
    });
    connect(worker_, &Worker::maskLoaded, this, [this](const StrengthGrid& g, const QString& spec) {
        if (g.rows != canvas_->strength().rows || g.cols != canvas_->strength().cols) canvas_->setGridSize(g.rows, g.cols);
        canvas_->setStrength(g, tr("Load mask"));
        statusBar()->showMessage(tr("Mask loaded from %1").arg(spec), 4000);
        if (waitMask_ && options_.maskSpec == spec) {
            waitMask_ = false;
            checkStartupRun();
        }
    });
    connect(worker_, &Worker::failed, this, [this](const QString& title, const QString& message) {
        if (computing_) {
            computing_ = false;
            steering_->setBusy(false);
        }
        showError(title, message);
        if (title == tr("Load mask")) waitMask_ = false;
        else waitVectors_ = false;
        checkStartupRun();
    });
}

// ---- settings -------------------------------------------------------------------------------

void MainWindow::restoreSettings() {
    loadSettings_ = options_.load;
    resize(1560, 960);
    if (!options_.useSettings) return;
    restoring_ = true;
    QSettings s;
    if (!options_.loadOverride) {
        loadSettings_.device = s.value(QStringLiteral("load/device"), loadSettings_.device).toString();
        loadSettings_.dtype = s.value(QStringLiteral("load/dtype"), loadSettings_.dtype).toString();
        loadSettings_.threads = s.value(QStringLiteral("load/threads"), loadSettings_.threads).toInt();
    }
    if (s.contains(QStringLiteral("window/geometry"))) restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
    if (s.contains(QStringLiteral("window/state"))) restoreState(s.value(QStringLiteral("window/state")).toByteArray());
    if (s.contains(QStringLiteral("window/mainSplit"))) mainSplit_->restoreState(s.value(QStringLiteral("window/mainSplit")).toByteArray());
    if (s.contains(QStringLiteral("window/rightSplit"))) rightSplit_->restoreState(s.value(QStringLiteral("window/rightSplit")).toByteArray());

    PlanSettings p;
    p.op = s.value(QStringLiteral("steering/operator"), p.op).toString();
    p.propagate = s.value(QStringLiteral("steering/propagate"), p.propagate).toBool();
    p.ablateTarget = s.value(QStringLiteral("steering/ablateTo"), p.ablateTarget).toString();
    p.ck = s.value(QStringLiteral("steering/ck"), p.ck).toDouble();
    p.cv = s.value(QStringLiteral("steering/cv"), p.cv).toDouble();
    steering_->setSource(VectorSource(s.value(QStringLiteral("steering/source"), 0).toInt()));
    steering_->setRecipeOptions(s.value(QStringLiteral("steering/preRope"), false).toBool(),
                                s.value(QStringLiteral("steering/perPosition"), false).toBool(),
                                s.value(QStringLiteral("steering/pca"), false).toBool());
    steering_->setPlanSettings(p);
    GenerationSettings g;
    g.maxNewTokens = s.value(QStringLiteral("generation/maxNewTokens"), g.maxNewTokens).toInt();
    g.sample = s.value(QStringLiteral("generation/sample"), g.sample).toBool();
    g.temperature = s.value(QStringLiteral("generation/temperature"), g.temperature).toDouble();
    g.topP = s.value(QStringLiteral("generation/topP"), g.topP).toDouble();
    g.seed = s.value(QStringLiteral("generation/seed"), 0).toULongLong();
    g.stopAtEos = s.value(QStringLiteral("generation/stopAtEos"), true).toBool();
    prompt_->setGeneration(g);
    prompt_->setPrompt(s.value(QStringLiteral("prompt/last"), kDemoQuestions.front()).toString());
    prompt_->setLive(s.value(QStringLiteral("prompt/live"), true).toBool());
    canvas_->setBrushSize(s.value(QStringLiteral("paint/size"), 3.0).toDouble());
    canvas_->setBrushStrength(s.value(QStringLiteral("paint/strength"), 1.0).toDouble());
    canvas_->setGridVisible(s.value(QStringLiteral("paint/grid"), true).toBool());
    gridAction_->setChecked(canvas_->gridVisible());
    HeatmapSettings h;
    h.metric = Metric(std::clamp(s.value(QStringLiteral("heatmap/metric"), int(Metric::Attention)).toInt(), 0, kMetricCount - 1));
    h.steeredRow = s.value(QStringLiteral("heatmap/steered"), true).toBool();
    heatmaps_->setSettings(h);
    restoring_ = false;
}

void MainWindow::saveSettings() {
    if (!options_.useSettings) return;
    QSettings s;
    s.setValue(QStringLiteral("window/geometry"), saveGeometry());
    s.setValue(QStringLiteral("window/state"), saveState());
    s.setValue(QStringLiteral("window/mainSplit"), mainSplit_->saveState());
    s.setValue(QStringLiteral("window/rightSplit"), rightSplit_->saveState());
    s.setValue(QStringLiteral("load/device"), loadSettings_.device);
    s.setValue(QStringLiteral("load/dtype"), loadSettings_.dtype);
    s.setValue(QStringLiteral("load/threads"), loadSettings_.threads);
    const PlanSettings p = steering_->planSettings();
    s.setValue(QStringLiteral("steering/operator"), p.op);
    s.setValue(QStringLiteral("steering/propagate"), p.propagate);
    s.setValue(QStringLiteral("steering/ablateTo"), p.ablateTarget);
    s.setValue(QStringLiteral("steering/ck"), p.ck);
    s.setValue(QStringLiteral("steering/cv"), p.cv);
    s.setValue(QStringLiteral("steering/source"), int(steering_->source()));
    const RecipeRequest r = steering_->recipe();
    s.setValue(QStringLiteral("steering/preRope"), r.preRope);
    s.setValue(QStringLiteral("steering/perPosition"), r.perPosition);
    s.setValue(QStringLiteral("steering/pca"), r.pca);
    const GenerationSettings g = prompt_->generation();
    s.setValue(QStringLiteral("generation/maxNewTokens"), g.maxNewTokens);
    s.setValue(QStringLiteral("generation/sample"), g.sample);
    s.setValue(QStringLiteral("generation/temperature"), g.temperature);
    s.setValue(QStringLiteral("generation/topP"), g.topP);
    s.setValue(QStringLiteral("generation/seed"), QVariant::fromValue(g.seed));
    s.setValue(QStringLiteral("generation/stopAtEos"), g.stopAtEos);
    s.setValue(QStringLiteral("prompt/last"), prompt_->prompt());
    s.setValue(QStringLiteral("prompt/live"), prompt_->live());
    s.setValue(QStringLiteral("paint/size"), canvas_->brushSize());
    s.setValue(QStringLiteral("paint/strength"), canvas_->brushStrength());
    s.setValue(QStringLiteral("paint/grid"), canvas_->gridVisible());
    s.setValue(QStringLiteral("heatmap/metric"), int(heatmaps_->settings().metric));
    s.setValue(QStringLiteral("heatmap/steered"), heatmaps_->settings().steeredRow);
}

void MainWindow::addRecent(const QString& key, const QString& value) {
    if (!options_.useSettings || value.isEmpty()) return;
    QSettings s;
    QStringList list = s.value(key).toStringList();
    list.removeAll(value);
    list.prepend(value);
    while (list.size() > kMaxRecent) list.removeLast();
    s.setValue(key, list);
    rebuildRecentMenus();
}

void MainWindow::rebuildRecentMenus() {
    if (!recentImagesMenu_) return;
    const QStringList images = options_.useSettings ? QSettings().value(QStringLiteral("recent/images")).toStringList() : QStringList();
    const QStringList models = options_.useSettings ? QSettings().value(QStringLiteral("recent/models")).toStringList() : QStringList();
    recentImagesMenu_->clear();
    for (const QString& p : images) {
        QAction* a = recentImagesMenu_->addAction(QFileInfo(p).fileName(), this, [this, p] { openImageFile(p); });
        a->setToolTip(QDir::toNativeSeparators(p));
        a->setEnabled(QFileInfo::exists(p));
    }
    recentImagesMenu_->setEnabled(!images.isEmpty());
    recentModelsMenu_->clear();
    for (const QString& p : models) {
        QAction* a = recentModelsMenu_->addAction(QDir(p).dirName(), this, [this, p] { openModel(p); });
        a->setToolTip(QDir::toNativeSeparators(p));
        a->setEnabled(QFileInfo(p).isDir());
    }
    recentModelsMenu_->setEnabled(!models.isEmpty());
}

// ---- start-up -------------------------------------------------------------------------------

void MainWindow::startUp() {
    // Which model: the command line, else the bundled demo model, else the most recent one.
    QString dir = options_.modelDirectory;
    const QString demo = QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR);
    if (dir.isEmpty()) {
        if (QFileInfo(demo + QStringLiteral("/config.json")).exists()) {
            dir = demo;
        } else if (options_.useSettings) {
            for (const QString& p : QSettings().value(QStringLiteral("recent/models")).toStringList())
                if (QFileInfo(p + QStringLiteral("/config.json")).exists()) {
                    dir = p;
                    break;
                }
        }
    }
    startupRunPending_ = options_.run;
    restoring_ = true;   // setting up from the command line is not an edit
    if (!dir.isEmpty()) {
        waitModel_ = true;
        openModel(dir);
    } else {
        statusBar()->showMessage(tr("No model loaded — File → Open Model Directory…"));
        auto* box = new QMessageBox(QMessageBox::Information, tr("No model"),
                                    tr("The bundled demo model is not installed (expected in %1).\n\n"
                                       "Open a LLaVA model directory in the llava-hf layout with File → Open Model Directory…")
                                        .arg(QDir::toNativeSeparators(demo)),
                                    QMessageBox::Close, this);
        QPushButton* open = box->addButton(tr("Open Model Directory…"), QMessageBox::AcceptRole);
        connect(open, &QPushButton::clicked, this, &MainWindow::openModelDialog);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
        startupRunPending_ = false;
    }

    if (!options_.sessionPath.isEmpty()) {
        openSessionFrom(options_.sessionPath);
    } else if (options_.offerRecovery && QFileInfo::exists(recoveryPath_)) {
        offerRecovery();
    }

    if (!options_.prompt.isEmpty()) prompt_->setPrompt(options_.prompt);
    if (options_.maxTokens > 0) {
        GenerationSettings g = prompt_->generation();
        g.maxNewTokens = options_.maxTokens;
        prompt_->setGeneration(g);
    }
    if (!options_.op.isEmpty() || !std::isnan(options_.ck) || !std::isnan(options_.cv) || !options_.layers.isEmpty() ||
        options_.propagate) {
        PlanSettings p = steering_->planSettings();
        p.propagate = p.propagate || options_.propagate;
        if (!options_.op.isEmpty()) p.op = options_.op;
        if (!std::isnan(options_.ck)) p.ck = options_.ck;
        if (!std::isnan(options_.cv)) p.cv = options_.cv;
        if (!options_.layers.isEmpty()) {
            const QStringList parts = options_.layers.split(QLatin1Char('-'));
            p.layerFrom = parts.value(0).toInt();
            p.layerTo = parts.size() > 1 ? parts.value(1).toInt() : p.layerFrom;
        }
        steering_->setPlanSettings(p);
    }
    if (options_.heatmapMetric >= 0) {
        HeatmapSettings h = heatmaps_->settings();
        h.metric = Metric(std::clamp(options_.heatmapMetric, 0, kMetricCount - 1));
        heatmaps_->setSettings(h);
    }
    if (options_.heatmapLayer >= 0) pendingHeatmapLayer_ = options_.heatmapLayer;
    restoring_ = false;
    if (!options_.imagePath.isEmpty()) {
        waitImage_ = true;
        openImageFile(options_.imagePath);
    }
    if (!options_.maskSpec.isEmpty()) {
        waitMask_ = true;
        importMaskFrom(options_.maskSpec);
    }
    if (!options_.vectorsPath.isEmpty()) {
        waitVectors_ = true;
        importVectorsFrom(options_.vectorsPath);
    } else if (!options_.targetImagePath.isEmpty()) {
        QFile f(options_.targetImagePath);
        if (f.open(QIODevice::ReadOnly)) {
            steering_->setSource(VectorSource::SecondImage);
            steering_->setTargetImage(options_.targetImagePath, f.readAll());
            steering_->setRecipeOptions(steering_->preRope(), options_.perPosition, false);
            waitVectors_ = true;
            computeVectors(steering_->recipe());
        } else {
            showError(tr("Target image"), tr("Cannot read %1: %2").arg(options_.targetImagePath, f.errorString()));
        }
    }
    checkStartupRun();
}

void MainWindow::checkStartupRun() {
    if (!startupRunPending_ || waitModel_ || waitImage_ || waitMask_ || waitVectors_) return;
    startupRunPending_ = false;
    if (!model_.valid() || !imageReady_) return;
    run();
    startupRunId_ = activeRunId_;
}

// ---- image ----------------------------------------------------------------------------------

void MainWindow::openImageDialog() {
    const QString dir = options_.useSettings ? QSettings().value(QStringLiteral("dialogs/imageDir"), QStringLiteral(KVSTEER_STUDIO_DEMO_IMAGES_DIR)).toString()
                                             : QString();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Image"), dir, imageFilter());
    if (path.isEmpty()) return;
    if (options_.useSettings) QSettings().setValue(QStringLiteral("dialogs/imageDir"), QFileInfo(path).absolutePath());
    openImageFile(path);
}

void MainWindow::openImageFile(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        showError(tr("Cannot open image"), tr("%1 cannot be read: %2").arg(QDir::toNativeSeparators(path), f.errorString()));
        if (waitImage_ && path == options_.imagePath) {
            waitImage_ = false;
            checkStartupRun();
        }
        return;
    }
    pendingImagePath_ = QFileInfo(path).absoluteFilePath();
    openImageData(f.readAll(), QFileInfo(path).fileName());
}

void MainWindow::openImageData(const QByteArray& bytes, const QString& name) {
    stop();   // the answers being decoded belong to the old image
    const quint64 id = ++imageId_;
    pendingImageBytes_ = bytes;
    pendingImageName_ = name;
    QMetaObject::invokeMethod(worker_, [w = worker_, id, bytes, name] { w->setImage(id, bytes, name); }, Qt::QueuedConnection);
}

void MainWindow::pasteImage() {
    const QMimeData* m = QApplication::clipboard()->mimeData();
    if (m && m->hasImage()) {
        const QImage img = qvariant_cast<QImage>(m->imageData());
        QByteArray png;
        QBuffer buf(&png);
        buf.open(QIODevice::WriteOnly);
        img.convertToFormat(QImage::Format_RGB888).save(&buf, "PNG");
        pendingImagePath_.clear();
        openImageData(png, tr("pasted image"));
        return;
    }
    if (m && m->hasUrls() && !m->urls().isEmpty() && m->urls().front().isLocalFile()) {
        openImageFile(m->urls().front().toLocalFile());
        return;
    }
    if (m && m->hasText() && QFileInfo(m->text().trimmed()).isFile()) {
        openImageFile(m->text().trimmed());
        return;
    }
    showError(tr("Paste image"), tr("The clipboard holds no image (nor the path of an image file)."));
}

void MainWindow::onImageReady(const ImageInfo& info) {
    if (info.id != imageId_) return;   // a newer image is on its way
    const bool sameImage = imageReady_ && info.name == imageName_ && pendingImageBytes_.isEmpty();
    if (!pendingImageBytes_.isEmpty()) {
        imageBytes_ = pendingImageBytes_;
        imageName_ = pendingImageName_;
        pendingImageBytes_.clear();
        if (!pendingImagePath_.isEmpty()) addRecent(QStringLiteral("recent/images"), pendingImagePath_);
        pendingImagePath_.clear();
    }
    canvas_->setImage(info.crop, info.name);
    imageReady_ = true;
    imageHeader_->setText(tr("<b>%1</b> <span style='color:#8a929c'>%2×%3 → %4×%5 as the model sees it · %6×%7 patches</span>")
                              .arg(info.name.toHtmlEscaped())
                              .arg(info.originalWidth)
                              .arg(info.originalHeight)
                              .arg(info.crop.width())
                              .arg(info.crop.height())
                              .arg(canvas_->strength().rows)
                              .arg(canvas_->strength().cols));
    if (!sameImage) {
        haveRun_ = false;
        streams_->clear();
        heatmaps_->clear();
        markDirty();
    }
    if (pendingOutputs_ && info.id == pendingOutputsImageId_ && !modelLoading_) {   // a session's answers
        streams_->restore(pendingUnsteered_, pendingSteered_);
        pendingOutputs_ = false;
        restoring_ = false;
    }
    updateRunAvailability();
    updateTitle();
    Q_EMIT imageShown();
    if (waitImage_ && info.name == QFileInfo(options_.imagePath).fileName()) {
        waitImage_ = false;
        checkStartupRun();
    }
}

void MainWindow::onImageFailed(const QString& name, const QString& message) {
    pendingImageBytes_.clear();
    pendingImagePath_.clear();
    showError(tr("Cannot open image"), tr("%1 is not an image the studio can read.\n\n%2").arg(name, message));
    if (pendingOutputs_) {
        pendingOutputs_ = false;
        restoring_ = false;
    }
    if (waitImage_ && name == QFileInfo(options_.imagePath).fileName()) {
        waitImage_ = false;
        checkStartupRun();
    }
}

// ---- model ----------------------------------------------------------------------------------

void MainWindow::openModelDialog() {
    const QString start = model_.valid() ? QFileInfo(model_.directory).absolutePath() : QDir::homePath();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open Model Directory"), start);
    if (!dir.isEmpty()) openModel(dir);
}

void MainWindow::openModel(const QString& directory) {
    stop();
    modelLoading_ = true;
    loadingModelDir_ = directory;
    updateRunAvailability();
    updateStatus();
    const LoadSettings ls = loadSettings_;
    QMetaObject::invokeMethod(worker_, [w = worker_, directory, ls] { w->loadModel(directory, ls); }, Qt::QueuedConnection);
}

void MainWindow::onModelLoaded(const ModelInfo& info) {
    model_ = info;
    modelLoading_ = false;
    haveRun_ = false;
    canvas_->setGridSize(info.gridRows, info.gridCols);
    steering_->setModel(info.layers, info.kvHeads);
    heatmaps_->setModel(info.layers, info.kvHeads);
    if (pendingHeatmapLayer_ >= 0) {
        heatmaps_->setSelectedLayer(pendingHeatmapLayer_);
        pendingHeatmapLayer_ = -1;
    }
    streams_->clear();
    addRecent(QStringLiteral("recent/models"), info.directory);
    statusBar()->showMessage(tr("Loaded %1 in %2 s").arg(info.name).arg(info.loadMs / 1000.0, 0, 'f', 1), 5000);
    updateStatus();
    updateRunAvailability();
    updateTitle();
    updateRunInfo();
    Q_EMIT modelReady(info);
    if (waitModel_) {
        waitModel_ = false;
        checkStartupRun();
    }
}

void MainWindow::onModelFailed(const QString& dir, const QString& message) {
    modelLoading_ = false;
    updateStatus();
    updateRunAvailability();
    showError(tr("Cannot load model"),
              tr("The model in %1 could not be loaded.\n\n%2\n\nChoose a llava-hf model directory (config.json, "
                 "model*.safetensors, tokenizer.model) with File → Open Model Directory…")
                  .arg(QDir::toNativeSeparators(dir), message));
    if (waitModel_) {
        waitModel_ = false;
        startupRunPending_ = false;
    }
}

void MainWindow::onModelLoadCancelled(const QString& dir) {
    if (dir != loadingModelDir_) return;   // a load superseded by a newer one: that one goes on
    modelLoading_ = false;
    updateStatus();
    updateRunAvailability();
    statusBar()->showMessage(tr("Loading %1 was cancelled").arg(QDir(dir).dirName()), 5000);
    if (waitModel_) {
        waitModel_ = false;
        startupRunPending_ = false;
    }
}

// ---- runs -----------------------------------------------------------------------------------

void MainWindow::updateRunAvailability() {
    QString why;
    if (modelLoading_) why = tr("The model is loading…");
    else if (!model_.valid()) why = tr("Load a model first (File → Open Model Directory…)");
    else if (!imageReady_) why = tr("Open an image first (File → Open Image…)");
    else if (prompt_->prompt().trimmed().isEmpty()) why = tr("Type a question first");
    const bool can = why.isEmpty();
    prompt_->setCanRun(can, why);
    prompt_->setRunning(running_);
    if (runAction_) {
        runAction_->setEnabled(can);
        stopAction_->setEnabled(running_ || modelLoading_);   // Stop also cancels a model load
    }
    for (QAction* a : needsModel_) a->setEnabled(model_.valid() && !modelLoading_);
    for (QAction* a : needsImage_) a->setEnabled(imageReady_);
}

void MainWindow::run() {
    liveTimer_->stop();
    if (modelLoading_ || !model_.valid() || !imageReady_) {
        if (!modelLoading_) showError(tr("Cannot run"), !model_.valid() ? tr("No model is loaded. Use File → Open Model Directory….")
                                                                       : tr("No image is open. Use File → Open Image…, drop an image on the canvas or paste one."));
        return;
    }
    if (prompt_->prompt().trimmed().isEmpty()) {
        showError(tr("Cannot run"), tr("Type a question about the image first."));
        return;
    }
    RunRequest req;
    req.id = nextRunId_++;
    req.prompt = prompt_->prompt().trimmed();
    req.strength = canvas_->strength();
    req.plan = steering_->planSettings();
    req.generation = prompt_->generation();
    req.heatmap = heatmaps_->settings();
    worker_->cancelRunsBefore(req.id);   // a running prefill stops at its next layer, a decode at its next step
    worker_->setHeatmapSettings(req.heatmap);
    activeRunId_ = req.id;
    running_ = true;
    haveRun_ = true;
    streams_->setStale(false);
    updateRunAvailability();
    QMetaObject::invokeMethod(worker_, [w = worker_, req] { w->run(req); }, Qt::QueuedConnection);
}

void MainWindow::stop() {
    liveTimer_->stop();
    worker_->cancelRunsBefore(nextRunId_);
    if (modelLoading_) worker_->cancelLoad();
}

void MainWindow::onRunStarted(const RunStarted& info) {
    if (info.runId != activeRunId_) return;
    lastStarted_ = info;
    streams_->beginRun(info);
    if (info.prefilled) lastPrefill_ = info;
    updateRunInfo();
    if (info.prefilled)
        statusBar()->showMessage(tr("Prefilled %1 tokens in %2 ms; edit %3 ms").arg(info.promptTokens).arg(info.prefillMs, 0, 'f', 0).arg(info.editMs, 0, 'f', 1), 5000);
}

void MainWindow::onTokenPair(const TokenPair& pair) {
    if (pair.runId != activeRunId_) return;
    streams_->addPair(pair);
}

void MainWindow::onRunFinished(const RunFinished& info) {
    if (info.runId != activeRunId_) {   // superseded (e.g. by a stroke): its panes were already replaced
        Q_EMIT runDone(info);
        return;
    }
    running_ = false;
    streams_->finishRun(info);
    lastFinished_ = info;
    updateRunInfo();
    updateRunAvailability();
    if (!info.cancelled && info.steps > 0)
        statusBar()->showMessage(tr("%n step(s) in %1 s", nullptr, info.steps).arg(info.decodeMs / 1000.0, 0, 'f', 2), 5000);
    markDirty();
    Q_EMIT runDone(info);
    if (startupRunId_ != 0 && info.runId == startupRunId_ && !options_.readyFile.isEmpty()) {
        startupRunId_ = 0;
        QTimer::singleShot(700, this, [this] {   // let the last heatmap and the panes paint
            QFile f(options_.readyFile);
            if (f.open(QIODevice::WriteOnly)) f.write(QStringLiteral("unsteered: %1\nsteered: %2\n").arg(streams_->text(false), streams_->text(true)).toUtf8());
        });
    }
}

void MainWindow::onRunFailed(quint64 runId, const QString& message) {
    if (runId != activeRunId_) return;
    running_ = false;
    streams_->failRun(message);
    updateRunAvailability();
    showError(tr("Run failed"), message);
}

void MainWindow::editChanged() {
    markDirty();
    if (restoring_) return;
    if (streams_->tokenCount(false) > 0 && !running_ && !(prompt_->live() && haveRun_)) streams_->setStale(true);
    scheduleLiveRun();
}

void MainWindow::scheduleLiveRun() {
    if (!prompt_->live() || !haveRun_ || !model_.valid() || !imageReady_ || modelLoading_) return;
    liveTimer_->start();   // restarts: a burst of strokes becomes one run, 150 ms after the last
}

void MainWindow::onProgress(const QString& stage, int value, int maximum) {
    progress_->setRange(0, maximum);
    progress_->setValue(value);
    progress_->setFormat(stage);
    progress_->show();
}

void MainWindow::onIdle() { progress_->hide(); }

// ---- steering vectors -----------------------------------------------------------------------

void MainWindow::chooseTargetImage() {
    const QString dir = QFileInfo(steering_->targetImagePath()).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Image to Steer Toward"),
                                                      steering_->targetImagePath().isEmpty() ? QStringLiteral(KVSTEER_STUDIO_DEMO_IMAGES_DIR) : dir,
                                                      imageFilter());
    if (path.isEmpty()) return;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        showError(tr("Cannot open image"), tr("%1 cannot be read: %2").arg(path, f.errorString()));
        return;
    }
    steering_->setTargetImage(path, f.readAll());
    markDirty();
}

void MainWindow::computeVectors(const RecipeRequest& partial) {
    // Requests queue behind a model or image that is still loading (the Worker takes them in order).
    const bool fail = [&] {
        if (!model_.valid() && !modelLoading_) {
            showError(tr("Steering vectors"), tr("Load a model before computing steering vectors."));
            return true;
        }
        return false;
    }();
    if (fail) {
        waitVectors_ = false;
        return;
    }
    RecipeRequest req = partial;
    req.prompt = prompt_->prompt().trimmed();
    req.region = canvas_->strength();
    const bool imageComing = imageReady_ || !pendingImageBytes_.isEmpty();
    if (req.source != VectorSource::TextPairs && !imageComing) {
        waitVectors_ = false;
        showError(tr("Steering vectors"), tr("Open the image to steer first: the recipe prefills it."));
        return;
    }
    if (req.source != VectorSource::TextPairs && req.prompt.isEmpty()) {
        waitVectors_ = false;
        showError(tr("Steering vectors"), tr("Type the question first: the image recipes prefill the image with it."));
        return;
    }
    if (req.source == VectorSource::SecondImage && req.targetImage.isEmpty()) {
        chooseTargetImage();
        req = steering_->recipe();
        req.prompt = prompt_->prompt().trimmed();
        req.region = canvas_->strength();
        if (req.targetImage.isEmpty()) return;
    }
    if (req.source == VectorSource::PaintedRegion && (req.region.isZero() || req.region.paintedCells() == req.region.size())) {
        waitVectors_ = false;
        showError(tr("Steering vectors"), tr("Paint the region first: the recipe contrasts the painted patches with the rest, so "
                                             "paint some patches but not all of them."));
        return;
    }
    computing_ = true;
    steering_->setBusy(true);
    QMetaObject::invokeMethod(worker_, [w = worker_, req] { w->computeVectors(req); }, Qt::QueuedConnection);
}

void MainWindow::onVectorsReady(const VectorsInfo& info) {
    computing_ = false;
    steering_->setBusy(false);
    vectors_ = info;
    steering_->setVectorsInfo(info);
    updateRunInfo();
    if (info.fromFile && !restoring_) {
        steering_->applySuggestions(info);
        if (info.hasMask && canvas_->strength().isZero() && info.mask.rows == canvas_->strength().rows &&
            info.mask.cols == canvas_->strength().cols)
            canvas_->setStrength(info.mask, tr("Mask from vector file"));
    }
    statusBar()->showMessage(tr("Steering vectors ready: %1").arg(info.summary()), 5000);
    editChanged();
    Q_EMIT vectorsChanged(info);
    if (waitVectors_) {
        waitVectors_ = false;
        checkStartupRun();
    }
}

void MainWindow::importVectorsDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Import Steering Vectors"), QString(),
                                                      tr("Steering vectors (*.safetensors);;All files (*)"));
    if (!path.isEmpty()) importVectorsFrom(path);
}

void MainWindow::importVectorsFrom(const QString& path) {
    QMetaObject::invokeMethod(worker_, [w = worker_, path] { w->importVectors(path); }, Qt::QueuedConnection);
}

void MainWindow::exportVectorsDialog() {
    if (!vectors_.valid()) {
        showError(tr("Export vectors"), tr("There are no steering vectors yet: compute or import them in the Steering panel."));
        return;
    }
    const QString path = askSavePath(this, tr("Export Steering Vectors"), QStringLiteral("steering.safetensors"),
                                     tr("Steering vectors (*.safetensors)"), QStringLiteral(".safetensors"));
    if (path.isEmpty()) return;
    exportVectorsTo(path);
}

void MainWindow::exportVectorsTo(const QString& path) {
    const PlanSettings plan = steering_->planSettings();
    const StrengthGrid mask = canvas_->strength();
    QMetaObject::invokeMethod(worker_, [w = worker_, path, plan, mask] { w->exportVectors(path, plan, mask); }, Qt::QueuedConnection);
}

void MainWindow::exportMaskDialog() {
    const QString path = askSavePath(this, tr("Export Mask"), QStringLiteral("mask.png"), tr("PNG images (*.png)"), QStringLiteral(".png"));
    if (path.isEmpty()) return;
    exportMaskTo(path);
}

void MainWindow::exportMaskTo(const QString& path) {
    const StrengthGrid mask = canvas_->strength();
    QMetaObject::invokeMethod(worker_, [w = worker_, path, mask] { w->exportMask(path, mask); }, Qt::QueuedConnection);
}

void MainWindow::importMaskDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Import Mask"), QString(),
                                                      tr("Masks (*.png *.jpg *.bmp *.npy *.safetensors);;All files (*)"));
    if (!path.isEmpty()) importMaskFrom(path);
}

void MainWindow::importMaskFrom(const QString& spec) {
    QMetaObject::invokeMethod(worker_, [w = worker_, spec] { w->loadMask(spec); }, Qt::QueuedConnection);
}

void MainWindow::loadTextPairsDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Load Text Pairs"), QString(), tr("JSON Lines (*.jsonl *.json);;All files (*)"));
    if (path.isEmpty()) return;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        showError(tr("Text pairs"), tr("%1 cannot be read: %2").arg(path, f.errorString()));
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
            showError(tr("Text pairs"), tr("%1, line %2: expected {\"positive\": \"…\", \"negative\": \"…\"}").arg(QFileInfo(path).fileName()).arg(lineNo));
            return;
        }
        pairs.push_back({o.value(QStringLiteral("positive")).toString(), o.value(QStringLiteral("negative")).toString()});
    }
    steering_->setTextPairs(pairs);
    markDirty();
}

void MainWindow::saveHeatmapDialog() {
    const QString path = askSavePath(this, tr("Save Heatmaps"), QStringLiteral("heatmaps.png"), tr("PNG images (*.png)"), QStringLiteral(".png"));
    if (path.isEmpty()) return;
    if (!heatmaps_->savePng(path)) showError(tr("Save heatmaps"), tr("%1 could not be written.").arg(path));
    else statusBar()->showMessage(tr("Heatmaps saved to %1").arg(path), 5000);
}

// ---- sessions -------------------------------------------------------------------------------

StudioSession MainWindow::collectSession() const {
    StudioSession s;
    s.modelDirectory = model_.directory;
    s.modelName = model_.name;
    s.modelConfigHash = model_.configHash;
    s.imageBytes = imageBytes_;
    s.imageName = imageName_;
    s.prompt = prompt_->prompt();
    s.generation = prompt_->generation();
    s.strength = canvas_->strength();
    s.plan = steering_->planSettings();
    const RecipeRequest r = steering_->recipe();
    s.source = r.source;
    s.targetImagePath = steering_->targetImagePath();
    s.targetImageBytes = r.targetImage;
    s.textPairs = steering_->textPairs();
    s.preRope = r.preRope;
    s.perPosition = r.perPosition;
    s.pca = r.pca;
    s.vectorsBlob = vectors_.blob;
    s.vectorsOrigin = vectors_.origin;
    s.unsteered = streams_->tokens(false);
    s.steered = streams_->tokens(true);
    s.heatmap = heatmaps_->settings();
    s.heatmapLayer = heatmaps_->selectedLayer();
    s.live = prompt_->live();
    return s;
}

void MainWindow::applySession(const StudioSession& s, const QString& origin) {
    stop();
    restoring_ = true;   // until the image is back: nothing here is a new edit
    // A session belongs to a model: load it when it is not the one in use and it is available.
    if (!s.modelDirectory.isEmpty() && s.modelConfigHash != model_.configHash) {
        if (QFileInfo(s.modelDirectory + QStringLiteral("/config.json")).exists()) openModel(s.modelDirectory);
        else
            showError(tr("Session model"), tr("%1 was made with the model “%2” (%3), which is not available here. Its vectors "
                                              "load only into that model; open it with File → Open Model Directory….")
                                               .arg(origin, s.modelName, QDir::toNativeSeparators(s.modelDirectory)));
    }
    prompt_->setPrompt(s.prompt);
    prompt_->setGeneration(s.generation);
    prompt_->setLive(s.live);
    steering_->setSource(s.source);
    steering_->setTargetImage(s.targetImagePath, s.targetImageBytes);
    steering_->setTextPairs(s.textPairs);
    steering_->setRecipeOptions(s.preRope, s.perPosition, s.pca);
    steering_->setPlanSettings(s.plan);
    if (s.strength.rows != canvas_->strength().rows || s.strength.cols != canvas_->strength().cols)
        canvas_->setGridSize(s.strength.rows, s.strength.cols);
    canvas_->applyStrength(s.strength);
    undo_->clear();
    // The Worker handles these in order: model (above), vectors, image.
    const QByteArray blob = s.vectorsBlob;
    const QString vorigin = s.vectorsOrigin;
    if (blob.isEmpty()) QMetaObject::invokeMethod(worker_, &Worker::clearVectors, Qt::QueuedConnection);
    else QMetaObject::invokeMethod(worker_, [w = worker_, blob, vorigin] { w->setVectorsBlob(blob, vorigin); }, Qt::QueuedConnection);
    heatmaps_->setSettings(s.heatmap);
    heatmaps_->setSelectedLayer(s.heatmapLayer);
    haveRun_ = false;
    // The answers are shown once the image is back (its arrival clears the panes).
    streams_->restore(s.unsteered, s.steered);
    if (!s.imageBytes.isEmpty()) {
        pendingImagePath_.clear();
        openImageData(s.imageBytes, s.imageName);
        pendingUnsteered_ = s.unsteered;
        pendingSteered_ = s.steered;
        pendingOutputsImageId_ = imageId_;
        pendingOutputs_ = true;
    } else {
        restoring_ = false;
    }
}

bool MainWindow::saveSessionTo(const QString& path) {
    QString error;
    if (!SessionFile::save(path, collectSession(), &error)) {
        showError(tr("Save session"), error);
        return false;
    }
    sessionPath_ = path;
    dirty_ = false;
    undo_->setClean();
    updateTitle();
    statusBar()->showMessage(tr("Session saved to %1").arg(QDir::toNativeSeparators(path)), 5000);
    Q_EMIT sessionSaved(path);
    return true;
}

bool MainWindow::openSessionFrom(const QString& path) {
    StudioSession s;
    QString error;
    if (!SessionFile::load(path, &s, &error)) {
        showError(tr("Open session"), error);
        return false;
    }
    applySession(s, QFileInfo(path).fileName());
    sessionPath_ = path;
    dirty_ = false;
    updateTitle();
    autosave();
    Q_EMIT sessionOpened(path);
    return true;
}

bool MainWindow::saveSession() { return sessionPath_.isEmpty() ? saveSessionAs() : saveSessionTo(sessionPath_); }

bool MainWindow::saveSessionAs() {
    const QString suggested = sessionPath_.isEmpty() ? QFileInfo(imageName_).completeBaseName() + QStringLiteral(".kvsession") : sessionPath_;
    const QString path = askSavePath(this, tr("Save Session"), suggested, sessionFilter(), QStringLiteral(".kvsession"));
    if (path.isEmpty()) return false;
    return saveSessionTo(path);
}

void MainWindow::openSessionDialog() {
    if (!confirmDiscard()) return;
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Session"), QString(), sessionFilter());
    if (!path.isEmpty()) openSessionFrom(path);
}

void MainWindow::markDirty() {
    if (restoring_) return;
    dirty_ = true;
    updateTitle();
    autosaveTimer_->start();
}

void MainWindow::autosave() {
    if (recoveryPath_.isEmpty()) return;
    StudioSession s = collectSession();
    const QString sibling = recoveryPath_ + QStringLiteral(".vectors");
    if (s.vectorsBlob.size() > kRecoveryInlineVectorsLimit) {   // large vectors: written once, beside the recovery file
        QFile f(sibling);
        if (f.size() != s.vectorsBlob.size() && f.open(QIODevice::WriteOnly)) f.write(s.vectorsBlob);
        s.vectorsBlob.clear();
        s.vectorsOrigin += QStringLiteral("\n@sibling");
    }
    QString error;
    if (!SessionFile::save(recoveryPath_, s, &error)) statusBar()->showMessage(tr("Autosave failed: %1").arg(error), 5000);
    Q_EMIT autosaved();
}

void MainWindow::removeRecoveryFile() {
    QFile::remove(recoveryPath_);
    QFile::remove(recoveryPath_ + QStringLiteral(".vectors"));
}

void MainWindow::offerRecovery() {
    StudioSession s;
    QString error;
    if (!SessionFile::load(recoveryPath_, &s, &error)) {
        removeRecoveryFile();
        return;
    }
    if (s.vectorsOrigin.endsWith(QLatin1String("\n@sibling"))) {
        s.vectorsOrigin.chop(9);
        QFile f(recoveryPath_ + QStringLiteral(".vectors"));
        if (f.open(QIODevice::ReadOnly)) s.vectorsBlob = f.readAll();
    }
    const QDateTime when = QFileInfo(recoveryPath_).lastModified();
    QMessageBox box(QMessageBox::Question, tr("Recover session?"),
                    tr("kvsteer Studio did not shut down cleanly. Restore the work autosaved at %1?")
                        .arg(QLocale().toString(when, QLocale::ShortFormat)),
                    QMessageBox::NoButton, this);
    box.setInformativeText(tr("Image: %1\nPrompt: %2").arg(s.imageName.isEmpty() ? tr("none") : s.imageName, s.prompt));
    QPushButton* restore = box.addButton(tr("Restore"), QMessageBox::AcceptRole);
    box.addButton(tr("Discard"), QMessageBox::DestructiveRole);
    box.setDefaultButton(restore);
    box.exec();
    if (box.clickedButton() == restore) {
        applySession(s, tr("The recovered session"));
        dirty_ = true;
        updateTitle();
    } else {
        removeRecoveryFile();
    }
}

bool MainWindow::confirmDiscard() {
    // Worth asking only when there is work a person made: strokes, or vectors.
    if (!dirty_ || !options_.confirmClose || !imageReady_ || (undo_->isClean() && !vectors_.valid())) return true;
    const auto answer = QMessageBox::question(this, tr("Unsaved changes"), tr("Save the current session first?"),
                                              QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Cancel) return false;
    if (answer == QMessageBox::Save) return saveSession();
    return true;
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (!confirmDiscard()) {
        event->ignore();
        return;
    }
    stop();
    saveSettings();
    autosaveTimer_->stop();
    removeRecoveryFile();   // a clean exit: nothing to recover
    event->accept();
}

// ---- dialogs ----------------------------------------------------------------------------------

void MainWindow::showError(const QString& title, const QString& text) {
    lastError_ = text;
    ++errorCount_;
    Q_EMIT errorShown(title, text);
    if (errorBox_ && errorBox_->isVisible() && errorBox_->text() == text) return;   // no pile of identical dialogs
    auto* box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setWindowModality(Qt::WindowModal);
    box->open();   // not exec(): the studio keeps running (and streaming) behind the dialog
    errorBox_ = box;
}

void MainWindow::preferences() {
    PreferencesDialog dlg(loadSettings_, this);
    if (dlg.exec() != QDialog::Accepted) return;
    const LoadSettings before = loadSettings_;
    loadSettings_ = dlg.settings();
    saveSettings();
    if (model_.valid() && (before.device != loadSettings_.device || before.dtype != loadSettings_.dtype || before.threads != loadSettings_.threads)) {
        if (QMessageBox::question(this, tr("Reload model?"), tr("Reload %1 with the new settings now?").arg(model_.name)) == QMessageBox::Yes)
            openModel(model_.directory);
    }
}

void MainWindow::about() {
    QMessageBox box(this);
    box.setWindowTitle(tr("About kvsteer Studio"));
    box.setIconPixmap(icons::application().pixmap(96, 96));
    box.setTextFormat(Qt::RichText);
    box.setText(tr("<h3>kvsteer Studio %1</h3>"
                   "<p>Steer a vision-language model by editing its KV cache at the image's patch tokens: "
                   "paint where, choose how, and compare the steered and unsteered answers as they stream.</p>")
                    .arg(QStringLiteral(KVSTEER_STUDIO_VERSION)));
    box.setInformativeText(tr("LLaVA-1.5 in libtorch %1 · Qt %2 · QCustomPlot for the heatmaps.\n\n"
                              "Model: %3")
                               .arg(QStringLiteral("1.13"), QString::fromLatin1(qVersion()),
                                    model_.valid() ? QStringLiteral("%1 (%2 parameters)").arg(model_.name, formatCount(model_.parameters))
                                                   : tr("none loaded")));
    box.exec();
}

// ---- status -----------------------------------------------------------------------------------

void MainWindow::updateRunInfo() {
    const PlanSettings p = steering_->planSettings();
    const StrengthGrid& g = canvas_->strength();
    const int last = std::max(0, model_.layers - 1);
    const int to = p.layerTo < 0 ? last : p.layerTo;
    QString heads = p.heads.isEmpty() ? tr("all KV heads") : tr("KV heads %1").arg([&] {
        QStringList l;
        for (int h : p.heads) l << QString::number(h);
        return l.join(QLatin1Char(','));
    }());
    const QString grey = QStringLiteral("color:#6b737d");
    QString html = QStringLiteral("<table cellspacing='0' cellpadding='1'>");
    auto row = [&](const QString& k, const QString& v) {
        html += QStringLiteral("<tr><td style='%1; padding-right:10px'>%2</td><td>%3</td></tr>").arg(grey, k, v);
    };
    row(tr("Plan"), tr("<b>%1</b> · c<sub>k</sub> %2 · c<sub>v</sub> %3 · %4 · %5 · %6")
                        .arg(p.op)
                        .arg(p.ck, 0, 'g', 4)
                        .arg(p.cv, 0, 'g', 4)
                        .arg(p.propagate ? tr("propagate") : tr("edit only"))
                        .arg(!model_.valid() ? tr("layers —") : p.layerFrom == to ? tr("layer %1").arg(to) : tr("layers %1–%2").arg(p.layerFrom).arg(to))
                        .arg(heads));
    row(tr("Mask"), tr("%1 of %2 patches painted · max strength %3").arg(g.paintedCells()).arg(g.size()).arg(g.maximum(), 0, 'f', 2));
    row(tr("Vectors"), vectors_.valid() ? QStringLiteral("%1 · %2").arg(vectors_.recipe.toHtmlEscaped(), vectors_.origin.toHtmlEscaped())
                                        : QStringLiteral("<span style='%1'>%2</span>").arg(grey, tr("none yet")));
    if (lastPrefill_.runId != 0) {
        QString run = tr("prefill %1 tokens in %2 ms (kept) · edit %3 ms")
                          .arg(lastPrefill_.promptTokens)
                          .arg(lastPrefill_.prefillMs, 0, 'f', 0)
                          .arg(lastStarted_.editMs, 0, 'f', 1);
        if (lastFinished_.runId == lastStarted_.runId && lastFinished_.decodeMs > 0)
            run += tr(" · decode %1 tok/s").arg(1000.0 * lastFinished_.steps / lastFinished_.decodeMs, 0, 'f', 0);
        row(tr("Last run"), run);
    }
    html += QStringLiteral("</table>");
    runInfo_->setText(html);
}

void MainWindow::updateTitle() {
    QString what = sessionPath_.isEmpty() ? (imageName_.isEmpty() ? tr("Untitled") : imageName_) : QFileInfo(sessionPath_).fileName();
    setWindowTitle(QStringLiteral("%1[*] — kvsteer Studio").arg(what));
    setWindowModified(dirty_);
}

void MainWindow::updateStatus() {
    if (modelLoading_) {
        modelLabel_->setText(tr("Loading %1…").arg(QDir(loadingModelDir_).dirName()));
    } else if (model_.valid()) {
        modelLabel_->setText(tr("<b>%1</b> · %2 params · %3 layers").arg(model_.name.toHtmlEscaped(), formatCount(model_.parameters)).arg(model_.layers));
        modelLabel_->setToolTip(QDir::toNativeSeparators(model_.directory));
    } else {
        modelLabel_->setText(tr("<span style='color:#b3261e'>No model</span> — File → Open Model Directory…"));
    }
    dtypeLabel_->setText(model_.valid() ? QStringLiteral("%1 · %2").arg(model_.dtype, model_.device) : QString());
    threadsLabel_->setText(model_.valid() ? tr("%n thread(s)", nullptr, model_.threads) : QString());
    dtypeLabel_->setVisible(model_.valid());
    threadsLabel_->setVisible(model_.valid());
}

void MainWindow::updateMemory() {
    const qint64 rss = residentBytes();
    memoryLabel_->setText(rss > 0 ? tr("%1 RAM").arg(QLocale().formattedDataSize(rss, 1)) : QString());
}

} // namespace kvsteer::ui
