#pragma once
// StudioActions: the studio's commands as a person meets them — actions with their icons,
// shortcuts and tips, placed in the menus, the main toolbar and the paint toolbar beside the
// canvas (whose tools, brush size and strength it keeps in step with the canvas). What the other
// commands do is wired by MainWindow; this file only says what they look like and where they are.
#include <QObject>
#include <QStringList>

class QAction;
class QMainWindow;
class QMenu;
class QSlider;
class QSpinBox;
class QLabel;
class QToolBar;
class QUndoStack;

namespace kvsteer::ui {

class PatchCanvas;

class StudioActions : public QObject {
    Q_OBJECT
public:
    StudioActions(QMainWindow* window, QWidget* paintBar, PatchCanvas* canvas, QUndoStack* undo);

    // Enabled only when each can do something.
    void setAvailability(bool canRun, bool running, bool modelLoading, bool modelReady, bool imageReady);
    void setRecent(const QStringList& images, const QStringList& models);

    // File
    QAction* openImage = nullptr;
    QAction* paste = nullptr;
    QAction* openModel = nullptr;
    QAction* openDemoScene = nullptr;
    QAction* openSession = nullptr;
    QAction* save = nullptr;
    QAction* saveAs = nullptr;
    QAction* importVectors = nullptr;
    QAction* exportVectors = nullptr;
    QAction* exportMask = nullptr;
    QAction* importMask = nullptr;
    QAction* saveHeatmaps = nullptr;
    // Edit, Help
    QAction* preferences = nullptr;
    QAction* copyPython = nullptr;      // the plan as a Hugging Face snippet
    QAction* about = nullptr;
    QAction* evaluate = nullptr;        // Tools: shows the Evaluate dock
    QAction* study = nullptr;           // Tools: shows the Evaluate dock's Study tab
    // Run
    QAction* run = nullptr;
    QAction* stop = nullptr;
    QAction* live = nullptr;
    // Paint
    QAction* grid = nullptr;
    QAction* lastToken = nullptr;   // shown while the canvas is a token strip

Q_SIGNALS:
    void recentImageChosen(const QString& path);
    void recentModelChosen(const QString& directory);

private:
    void buildPaintBar(QWidget* paintBar, PatchCanvas* canvas);
    void buildMenus(QMainWindow* window, PatchCanvas* canvas, QUndoStack* undo);

    QMainWindow* window_;
    QAction *brush_ = nullptr, *eraser_ = nullptr, *rectangle_ = nullptr;
    QList<QAction*> editActions_;       // paint-bar commands also in the Edit menu
    QList<QAction*> needsModel_, needsImage_;
    QMenu* recentImages_ = nullptr;
    QMenu* recentModels_ = nullptr;
};

} // namespace kvsteer::ui
