#include "studio/StudioActions.h"

#include "studio/HelpDialogs.h"
#include "widgets/FlowLayout.h"
#include "widgets/Icons.h"
#include "widgets/PatchCanvas.h"
#include "worker/Worker.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QSlider>
#include <QSpinBox>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>

#include <cmath>

namespace kvsteer::ui {

namespace {

QAction* makeAction(QObject* parent, icons::Id icon, bool withIcon, const QString& text, const QKeySequence& key, const QString& tip) {
    auto* a = withIcon ? new QAction(icons::get(icon), text, parent) : new QAction(text, parent);
    if (!key.isEmpty()) a->setShortcut(key);
    a->setToolTip(key.isEmpty() ? tip : QStringLiteral("%1 (%2)").arg(tip, key.toString(QKeySequence::NativeText)));
    a->setStatusTip(tip);
    return a;
}

} // namespace

StudioActions::StudioActions(QMainWindow* window, QWidget* paintBar, PatchCanvas* canvas, QUndoStack* undo)
    : QObject(window), window_(window) {
    buildPaintBar(paintBar, canvas);

    run = makeAction(window, icons::Id::Run, true, tr("Run"), QKeySequence(), tr("Prefill once, apply the plan, stream both answers (Ctrl+R)"));
    run->setShortcuts({QKeySequence(tr("Ctrl+R")), QKeySequence(tr("Ctrl+Return"))});
    run->setToolTip(tr("Prefill once, apply the plan, stream both answers (Ctrl+R)"));
    run->setStatusTip(QString());
    stop = new QAction(icons::get(icons::Id::Stop), tr("Stop"), window);
    stop->setShortcut(QKeySequence(Qt::Key_Escape));
    stop->setToolTip(tr("Stop the run (the prefill or the decoding) or the model load (Esc)"));
    live = new QAction(tr("Live Re-run While Painting"), window);
    live->setCheckable(true);

    buildMenus(window, canvas, undo);
}

// Two tool bars side by side, the second wrapping under the first in a narrow pane: the tools and
// the mask's edits, then the brush's size and strength.
void StudioActions::buildPaintBar(QWidget* paintBar, PatchCanvas* canvas) {
    auto* flow = new FlowLayout(paintBar, 8, 2);
    auto* toolsBar = new QToolBar(tr("Paint tools"), paintBar);
    auto* bar = new QToolBar(tr("Brush"), paintBar);
    for (QToolBar* b : {toolsBar, bar}) {
        b->setObjectName(b == bar ? QStringLiteral("brushBar") : QStringLiteral("paintToolsBar"));
        b->setIconSize(QSize(20, 20));
        b->setToolButtonStyle(Qt::ToolButtonIconOnly);
        flow->addWidget(b);
    }
    auto add = [this, toolsBar](icons::Id icon, const QString& text, const QKeySequence& key, const QString& tip, auto slot) {
        QAction* a = makeAction(window_, icon, true, text, key, tip);
        connect(a, &QAction::triggered, this, slot);
        toolsBar->addAction(a);
        return a;
    };
    auto* tools = new QActionGroup(this);
    brush_ = add(icons::Id::Brush, tr("Brush"), QKeySequence(Qt::Key_B), tr("Paint steering strength"),
                 [canvas] { canvas->setTool(PatchCanvas::Tool::Brush); });
    eraser_ = add(icons::Id::Eraser, tr("Eraser"), QKeySequence(Qt::Key_E), tr("Erase strength"),
                  [canvas] { canvas->setTool(PatchCanvas::Tool::Eraser); });
    rectangle_ = add(icons::Id::Rectangle, tr("Rectangle"), QKeySequence(Qt::Key_R), tr("Drag a rectangle of patches (right-drag erases)"),
                     [canvas] { canvas->setTool(PatchCanvas::Tool::Rectangle); });
    for (QAction* a : {brush_, eraser_, rectangle_}) {
        a->setCheckable(true);
        tools->addAction(a);
    }
    brush_->setChecked(true);
    connect(canvas, &PatchCanvas::toolChanged, this, [this](PatchCanvas::Tool t) {
        (t == PatchCanvas::Tool::Brush ? brush_ : t == PatchCanvas::Tool::Eraser ? eraser_ : rectangle_)->setChecked(true);
    });

    bar->addWidget(new QLabel(tr(" Size "), bar));
    // The brush is measured in grid cells (patches), whatever the grid: say so on the box.
    auto* size = new QSpinBox(bar);
    size->setRange(1, int(canvas->maxBrushSize()));
    size->setValue(int(canvas->brushSize()));
    auto showUnit = [size](int v) { size->setSuffix(v == 1 ? tr(" cell") : tr(" cells")); };
    showUnit(size->value());
    size->setToolTip(tr("Brush diameter in grid cells (patches); [ and ] change it"));
    bar->addWidget(size);
    connect(size, qOverload<int>(&QSpinBox::valueChanged), canvas, [canvas, showUnit](int v) {
        showUnit(v);
        canvas->setBrushSize(v);
    });
    connect(canvas, &PatchCanvas::brushSizeChanged, size, [size](double v) { size->setValue(int(v)); });
    connect(canvas, &PatchCanvas::gridSizeChanged, size, [size, canvas] { size->setMaximum(int(canvas->maxBrushSize())); });
    bar->addWidget(new QLabel(tr("  Strength "), bar));
    auto* strength = new QSlider(Qt::Horizontal, bar);
    strength->setRange(5, 100);
    strength->setValue(100);
    strength->setFixedWidth(80);
    strength->setToolTip(tr("Strength s the brush paints (0.05–1); the plan multiplies it by c_k and c_v"));
    bar->addWidget(strength);
    auto* strengthLabel = new QLabel(QStringLiteral("1.00"), bar);
    strengthLabel->setMinimumWidth(32);
    bar->addWidget(strengthLabel);
    connect(strength, &QSlider::valueChanged, this, [canvas, strengthLabel](int v) {
        canvas->setBrushStrength(v / 100.0);
        strengthLabel->setText(QString::number(v / 100.0, 'f', 2));
    });
    connect(canvas, &PatchCanvas::brushStrengthChanged, this, [strength, strengthLabel](double v) {
        const QSignalBlocker block(strength);
        strength->setValue(int(std::lround(v * 100)));
        strengthLabel->setText(QString::number(v, 'f', 2));
    });

    toolsBar->addSeparator();
    auto* fill = add(icons::Id::Fill, tr("Fill"), QKeySequence(tr("Ctrl+Shift+F")), tr("Paint every patch with the brush strength"),
                     [canvas] { canvas->fillAll(); });
    auto* clear = add(icons::Id::Clear, tr("Clear"), QKeySequence(Qt::Key_Delete), tr("Erase the whole mask"), [canvas] { canvas->clearAll(); });
    auto* invert = add(icons::Id::Invert, tr("Invert"), QKeySequence(tr("Ctrl+Shift+I")), tr("Swap painted and unpainted patches"),
                       [canvas] { canvas->invert(); });
    grid = add(icons::Id::Grid, tr("Show Patch Grid"), QKeySequence(Qt::Key_G), QString(), [canvas](bool on) { canvas->setGridVisible(on); });
    grid->setCheckable(true);
    grid->setChecked(canvas->gridVisible());
    auto describeGrid = [this](int rows, int cols) {
        const QString tip = tr("Show the model's %1×%2 visual-token grid (thinned when the cells are small)").arg(rows).arg(cols);
        grid->setStatusTip(tip);
        grid->setToolTip(QStringLiteral("%1 (%2)").arg(tip, grid->shortcut().toString(QKeySequence::NativeText)));
    };
    describeGrid(canvas->gridRows(), canvas->gridCols());
    connect(canvas, &PatchCanvas::gridSizeChanged, this, describeGrid);
    // A text prompt's strip: published cache steering edits the last token, one click here.
    lastToken = add(icons::Id::Brush, tr("Last Token"), QKeySequence(tr("Ctrl+Shift+L")),
                    tr("Steer only the last token the cache holds (cache steering's recipe)"), [canvas] { canvas->paintLastToken(); });
    lastToken->setVisible(canvas->isTokenStrip());
    connect(canvas, &PatchCanvas::gridSizeChanged, lastToken, [this, canvas] { lastToken->setVisible(canvas->isTokenStrip()); });
    editActions_ = {fill, clear, invert, lastToken};
    needsImage_ << fill << clear << invert << lastToken;
}

void StudioActions::buildMenus(QMainWindow* window, PatchCanvas* canvas, QUndoStack* undo) {
    // Menu items show the tip in the status bar; their tooltips carry no shortcut.
    auto item = [window](QMenu* m, icons::Id icon, bool withIcon, const QString& text, const QKeySequence& key, const QString& tip) {
        QAction* a = makeAction(window, icon, withIcon, text, key, tip);
        a->setToolTip(tip);
        m->addAction(a);
        return a;
    };

    QMenu* file = window->menuBar()->addMenu(tr("&File"));
    openImage = item(file, icons::Id::OpenImage, true, tr("&Open Image…"), QKeySequence::Open, tr("Open the image to steer"));
    paste = item(file, icons::Id::Paste, true, tr("&Paste Image"), QKeySequence::Paste, tr("Use the image on the clipboard"));
    recentImages_ = file->addMenu(tr("Recent Ima&ges"));
    file->addSeparator();
    openModel = item(file, icons::Id::OpenModel, true, tr("Open &Model Directory…"), QKeySequence(tr("Ctrl+Shift+O")),
                     tr("Load a model directory in the Hugging Face layout (%1): config.json, safetensors, tokenizer")
                         .arg(Worker::supportedFamilies().join(QStringLiteral(", "))));
    recentModels_ = file->addMenu(tr("Recent Mode&ls"));
    openDemoScene = item(file, icons::Id::OpenImage, false, tr("Open &Demo Scene"), QKeySequence(),
                         tr("The bundled demo: the red circle, \"What color is the circle?\", the red→blue vectors, the circle painted"));
    file->addSeparator();
    openSession = item(file, icons::Id::OpenSession, true, tr("Open Sessio&n…"), QKeySequence(tr("Ctrl+Alt+O")),
                       tr("Open a saved session (.kvsession)"));
    save = item(file, icons::Id::SaveSession, true, tr("&Save Session"), QKeySequence::Save,
                tr("Save image, prompt, mask, plan, vectors and answers in one file"));
    saveAs = item(file, icons::Id::SaveSession, false, tr("Save Session &As…"), QKeySequence(tr("Ctrl+Shift+S")),
                  tr("Save the session under a new name"));
    file->addSeparator();
    importVectors = item(file, icons::Id::ImportVectors, true, tr("&Import Vectors…"), QKeySequence(tr("Ctrl+I")),
                         tr("Load a steering vector file made for this model"));
    exportVectors = item(file, icons::Id::ExportVectors, true, tr("&Export Vectors…"), QKeySequence(tr("Ctrl+E")),
                         tr("Save the vectors with the current plan settings and mask"));
    exportMask = item(file, icons::Id::ExportMask, true, tr("Export Mas&k as PNG…"), QKeySequence(tr("Ctrl+Shift+E")),
                      tr("Save the painted strength as a grayscale PNG"));
    importMask = item(file, icons::Id::OpenImage, false, tr("Import Mask…"), QKeySequence(), tr("Load a mask (image, .npy, .safetensors)"));
    saveHeatmaps = item(file, icons::Id::SavePlot, true, tr("Save &Heatmaps as PNG…"), QKeySequence(), tr("Save the heatmap panel as an image"));
    file->addSeparator();
    connect(item(file, icons::Id::About, false, tr("&Quit"), QKeySequence::Quit, tr("Quit kvsteer Studio")), &QAction::triggered, window,
            &QWidget::close);
    needsModel_ << importVectors << exportVectors;
    needsImage_ << exportMask << saveHeatmaps;

    QMenu* edit = window->menuBar()->addMenu(tr("&Edit"));
    QAction* undoAction = undo->createUndoAction(this, tr("&Undo"));
    undoAction->setIcon(icons::get(icons::Id::Undo));
    undoAction->setShortcut(QKeySequence::Undo);
    QAction* redoAction = undo->createRedoAction(this, tr("&Redo"));
    redoAction->setIcon(icons::get(icons::Id::Redo));
    redoAction->setShortcuts({QKeySequence(tr("Ctrl+Shift+Z")), QKeySequence(tr("Ctrl+Y"))});
    edit->addAction(undoAction);
    edit->addAction(redoAction);
    edit->addSeparator();
    edit->addActions(editActions_);
    edit->addSeparator();
    copyPython = item(edit, icons::Id::ExportVectors, false, tr("Copy as P&ython"), QKeySequence(tr("Ctrl+Shift+C")),
                      tr("Put a Hugging Face snippet for the current plan on the clipboard"));
    preferences = item(edit, icons::Id::About, false, tr("&Preferences…"), QKeySequence::Preferences, tr("Device, dtype and threads for loading models"));

    QMenu* paint = window->menuBar()->addMenu(tr("&Paint"));
    paint->addActions({brush_, eraser_, rectangle_});
    paint->addSeparator();
    connect(item(paint, icons::Id::Brush, false, tr("Larger Brush"), QKeySequence(Qt::Key_BracketRight), tr("Brush one cell wider")),
            &QAction::triggered, canvas, [canvas] { canvas->setBrushSize(canvas->brushSize() + 1); });
    connect(item(paint, icons::Id::Brush, false, tr("Smaller Brush"), QKeySequence(Qt::Key_BracketLeft), tr("Brush one cell narrower")),
            &QAction::triggered, canvas, [canvas] { canvas->setBrushSize(canvas->brushSize() - 1); });
    paint->addSeparator();
    paint->addAction(grid);

    QMenu* runMenu = window->menuBar()->addMenu(tr("&Run"));
    runMenu->addActions({run, stop});
    runMenu->addSeparator();
    runMenu->addAction(live);

    QMenu* view = window->menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : window->findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());
    QAction* mainToolbarToggle = view->addAction(tr("Main Toolbar"));
    mainToolbarToggle->setCheckable(true);

    QMenu* tools = window->menuBar()->addMenu(tr("&Tools"));
    evaluate = tools->addAction(tr("&Evaluate on a Dataset…"));
    evaluate->setToolTip(tr("Score the current steering on a dataset, steered against unsteered"));
    study = tools->addAction(tr("&Study a Grid of Settings…"));
    study->setToolTip(tr("Judge a grid of plans on a suite of datasets: target success against preservation, and the frontier"));

    QMenu* help = window->menuBar()->addMenu(tr("&Help"));
    connect(item(help, icons::Id::About, false, tr("Quick &Guide"), QKeySequence::HelpContents, tr("How to steer in five steps")),
            &QAction::triggered, window, [window] { showQuickGuide(window); });
    about = item(help, icons::Id::About, true, tr("&About kvsteer Studio"), QKeySequence(), tr("Version and credits"));
    connect(item(help, icons::Id::About, false, tr("About &Qt"), QKeySequence(), tr("The Qt version in use")), &QAction::triggered, qApp,
            &QApplication::aboutQt);

    auto* bar = window->addToolBar(tr("Main"));
    bar->setObjectName(QStringLiteral("mainToolbar"));
    bar->setIconSize(QSize(20, 20));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->setMovable(false);
    bar->addActions({openImage, openModel});
    bar->addSeparator();
    bar->addActions({openSession, save});
    bar->addSeparator();
    bar->addActions({undoAction, redoAction});
    for (QAction* a : {undoAction, redoAction})   // their text names the command: keep the bar steady
        if (auto* b = qobject_cast<QToolButton*>(bar->widgetForAction(a))) b->setToolButtonStyle(Qt::ToolButtonIconOnly);
    bar->addSeparator();
    bar->addActions({run, stop});
    mainToolbarToggle->setChecked(true);
    connect(mainToolbarToggle, &QAction::toggled, bar, &QToolBar::setVisible);
}

void StudioActions::setAvailability(bool canRun, bool running, bool modelLoading, bool modelReady, bool imageReady) {
    run->setEnabled(canRun);
    stop->setEnabled(running || modelLoading);   // Stop also cancels a model load
    for (QAction* a : needsModel_) a->setEnabled(modelReady && !modelLoading);
    for (QAction* a : needsImage_) a->setEnabled(imageReady);
}

void StudioActions::setRecent(const QStringList& images, const QStringList& models) {
    recentImages_->clear();
    for (const QString& p : images) {
        QAction* a = recentImages_->addAction(QFileInfo(p).fileName(), this, [this, p] { Q_EMIT recentImageChosen(p); });
        a->setToolTip(QDir::toNativeSeparators(p));
        a->setEnabled(QFileInfo::exists(p));
    }
    recentImages_->setEnabled(!images.isEmpty());
    recentModels_->clear();
    for (const QString& p : models) {
        QAction* a = recentModels_->addAction(QDir(p).dirName(), this, [this, p] { Q_EMIT recentModelChosen(p); });
        a->setToolTip(QDir::toNativeSeparators(p));
        a->setEnabled(QFileInfo(p).isDir());
    }
    recentModels_->setEnabled(!models.isEmpty());
}

} // namespace kvsteer::ui
