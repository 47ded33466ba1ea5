#pragma once
// StudioSettings: what the studio remembers between sessions, in QSettings — how models load,
// the window's geometry and splitters, the last steering/generation/paint/heatmap choices, the
// last prompt, and the recent images and models. Off (reads defaults, writes nothing) in tests.
#include "types/StudioTypes.h"

#include <QObject>
#include <QStringList>

class QMainWindow;
class QSplitter;

namespace kvsteer::ui {

class HeatmapPanel;
class PatchCanvas;
class PromptPanel;
class SteeringPanel;

// The demo model's example questions; the first is the default prompt.
QStringList demoQuestions();
// The Examples menu for a model: the demo's questions for the demo model (and before any model),
// questions about any image for another vision model, plain prompts for a text-only model.
QStringList exampleQuestions(const ModelInfo& model);

// The widgets whose state is remembered.
struct RememberedWidgets {
    QMainWindow* window = nullptr;
    QSplitter* mainSplit = nullptr;
    QSplitter* rightSplit = nullptr;
    PatchCanvas* canvas = nullptr;
    PromptPanel* prompt = nullptr;
    SteeringPanel* steering = nullptr;
    HeatmapPanel* heatmaps = nullptr;
};

class StudioSettings : public QObject {
    Q_OBJECT
public:
    enum class Recent { Images, Models };

    StudioSettings(bool enabled, const RememberedWidgets& widgets, QObject* parent);

    // `fallback` unless remembered (and not `overridden`, e.g. by the command line).
    LoadSettings loadSettings(const LoadSettings& fallback, bool overridden) const;
    void restoreWidgets();
    void save(const LoadSettings& load);

    QStringList recent(Recent kind) const;
    void addRecent(Recent kind, const QString& value);
    QString imageDirectory(const QString& fallback) const;   // where Open Image starts
    void setImageDirectory(const QString& dir);

Q_SIGNALS:
    void recentChanged();

private:
    bool enabled_;
    RememberedWidgets w_;
};

} // namespace kvsteer::ui
