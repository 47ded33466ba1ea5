#include "studio/StudioSettings.h"

#include "widgets/HeatmapPanel.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PlanForm.h"
#include "widgets/PromptPanel.h"
#include "widgets/SteeringPanel.h"

#include <QMainWindow>
#include <QSettings>
#include <QSplitter>

#include <algorithm>

namespace kvsteer::ui {

namespace {

constexpr int kMaxRecent = 10;

QString recentKey(StudioSettings::Recent kind) {
    return kind == StudioSettings::Recent::Images ? QStringLiteral("recent/images") : QStringLiteral("recent/models");
}

} // namespace

QStringList demoQuestions() {
    return {QStringLiteral("What color is the circle?"), QStringLiteral("What shape is red?"),   QStringLiteral("How many shapes are there?"),
            QStringLiteral("Is there a blue circle?"),   QStringLiteral("Where is the red circle?"), QStringLiteral("Describe the image.")};
}

QStringList exampleQuestions(const ModelInfo& model) {
    if (!model.valid() || model.name == QStringLiteral("kvsteer/shapes-demo")) return demoQuestions();
    if (model.textOnly())
        return {QStringLiteral("Write a short review of a restaurant."), QStringLiteral("Is it going to rain today?"),
                QStringLiteral("Tell me about your favourite city."), QStringLiteral("Describe a sunny morning.")};
    return {QStringLiteral("Describe the image."), QStringLiteral("What is in the picture?"),
            QStringLiteral("What colour is the largest object?"), QStringLiteral("How many objects are there?")};
}

StudioSettings::StudioSettings(bool enabled, const RememberedWidgets& widgets, QObject* parent)
    : QObject(parent), enabled_(enabled), w_(widgets) {}

LoadSettings StudioSettings::loadSettings(const LoadSettings& fallback, bool overridden) const {
    LoadSettings l = fallback;
    if (!enabled_ || overridden) return l;
    QSettings s;
    l.device = s.value(QStringLiteral("load/device"), l.device).toString();
    l.dtype = s.value(QStringLiteral("load/dtype"), l.dtype).toString();
    l.threads = s.value(QStringLiteral("load/threads"), l.threads).toInt();
    return l;
}

void StudioSettings::restoreWidgets() {
    if (!enabled_) return;
    QSettings s;
    if (s.contains(QStringLiteral("window/geometry"))) w_.window->restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
    if (s.contains(QStringLiteral("window/state"))) w_.window->restoreState(s.value(QStringLiteral("window/state")).toByteArray());
    if (s.contains(QStringLiteral("window/mainSplit"))) w_.mainSplit->restoreState(s.value(QStringLiteral("window/mainSplit")).toByteArray());
    if (s.contains(QStringLiteral("window/rightSplit"))) w_.rightSplit->restoreState(s.value(QStringLiteral("window/rightSplit")).toByteArray());

    PlanSettings p;
    // A name absent, or one only another version of the studio knows, keeps the default.
    const auto knownOr = [](auto parse, const QVariant& name, auto fallback) {
        try {
            return parse(name.toString().toStdString(), std::string());
        } catch (const Error&) {
            return fallback;
        }
    };
    p.op = knownOr(&parseOperator, s.value(QStringLiteral("steering/operator")), p.op);
    p.ablateTarget = knownOr(&parseAblateTarget, s.value(QStringLiteral("steering/ablateTo")), p.ablateTarget);
    p.propagate = s.value(QStringLiteral("steering/propagate"), p.propagate).toBool();
    p.ck = s.value(QStringLiteral("steering/ck"), p.ck).toDouble();
    p.cv = s.value(QStringLiteral("steering/cv"), p.cv).toDouble();
    w_.steering->setSource(VectorSource(s.value(QStringLiteral("steering/source"), 0).toInt()));
    w_.steering->setRecipeOptions(s.value(QStringLiteral("steering/preRope"), false).toBool(),
                                  s.value(QStringLiteral("steering/perPosition"), false).toBool(),
                                  s.value(QStringLiteral("steering/pca"), false).toBool());
    w_.steering->setPlanSettings(p);
    w_.steering->planForm()->setRestored(p);   // said in the panel while it is in effect
    GenerationSettings g;
    g.maxNewTokens = s.value(QStringLiteral("generation/maxNewTokens"), g.maxNewTokens).toInt();
    g.sample = s.value(QStringLiteral("generation/sample"), g.sample).toBool();
    g.temperature = s.value(QStringLiteral("generation/temperature"), g.temperature).toDouble();
    g.topP = s.value(QStringLiteral("generation/topP"), g.topP).toDouble();
    g.seed = s.value(QStringLiteral("generation/seed"), 0).toULongLong();
    g.stopAtEos = s.value(QStringLiteral("generation/stopAtEos"), true).toBool();
    w_.prompt->setGeneration(g);
    w_.prompt->setPrompt(s.value(QStringLiteral("prompt/last"), demoQuestions().front()).toString());
    w_.prompt->setLive(s.value(QStringLiteral("prompt/live"), true).toBool());
    w_.canvas->setBrushSize(s.value(QStringLiteral("paint/size"), 3.0).toDouble());
    w_.canvas->setBrushStrength(s.value(QStringLiteral("paint/strength"), 1.0).toDouble());
    w_.canvas->setGridVisible(s.value(QStringLiteral("paint/grid"), true).toBool());
    HeatmapSettings h;
    h.metric = Metric(std::clamp(s.value(QStringLiteral("heatmap/metric"), int(Metric::Attention)).toInt(), 0, kMetricCount - 1));
    h.steeredRow = s.value(QStringLiteral("heatmap/steered"), true).toBool();
    w_.heatmaps->setSettings(h);
}

void StudioSettings::save(const LoadSettings& load) {
    if (!enabled_) return;
    QSettings s;
    s.setValue(QStringLiteral("window/geometry"), w_.window->saveGeometry());
    s.setValue(QStringLiteral("window/state"), w_.window->saveState());
    s.setValue(QStringLiteral("window/mainSplit"), w_.mainSplit->saveState());
    s.setValue(QStringLiteral("window/rightSplit"), w_.rightSplit->saveState());
    s.setValue(QStringLiteral("load/device"), load.device);
    s.setValue(QStringLiteral("load/dtype"), load.dtype);
    s.setValue(QStringLiteral("load/threads"), load.threads);
    const PlanSettings p = w_.steering->planSettings();
    s.setValue(QStringLiteral("steering/operator"), operatorText(p.op));
    s.setValue(QStringLiteral("steering/propagate"), p.propagate);
    s.setValue(QStringLiteral("steering/ablateTo"), ablateTargetText(p.ablateTarget));
    s.setValue(QStringLiteral("steering/ck"), p.ck);
    s.setValue(QStringLiteral("steering/cv"), p.cv);
    s.setValue(QStringLiteral("steering/source"), int(w_.steering->source()));
    const RecipeRequest r = w_.steering->recipe();
    s.setValue(QStringLiteral("steering/preRope"), r.preRope);
    s.setValue(QStringLiteral("steering/perPosition"), r.perPosition);
    s.setValue(QStringLiteral("steering/pca"), r.pca);
    const GenerationSettings g = w_.prompt->generation();
    s.setValue(QStringLiteral("generation/maxNewTokens"), g.maxNewTokens);
    s.setValue(QStringLiteral("generation/sample"), g.sample);
    s.setValue(QStringLiteral("generation/temperature"), g.temperature);
    s.setValue(QStringLiteral("generation/topP"), g.topP);
    s.setValue(QStringLiteral("generation/seed"), QVariant::fromValue(g.seed));
    s.setValue(QStringLiteral("generation/stopAtEos"), g.stopAtEos);
    s.setValue(QStringLiteral("prompt/last"), w_.prompt->prompt());
    s.setValue(QStringLiteral("prompt/live"), w_.prompt->live());
    s.setValue(QStringLiteral("paint/size"), w_.canvas->brushSize());
    s.setValue(QStringLiteral("paint/strength"), w_.canvas->brushStrength());
    s.setValue(QStringLiteral("paint/grid"), w_.canvas->gridVisible());
    s.setValue(QStringLiteral("heatmap/metric"), int(w_.heatmaps->settings().metric));
    s.setValue(QStringLiteral("heatmap/steered"), w_.heatmaps->settings().steeredRow);
}

QStringList StudioSettings::recent(Recent kind) const {
    return enabled_ ? QSettings().value(recentKey(kind)).toStringList() : QStringList();
}

void StudioSettings::addRecent(Recent kind, const QString& value) {
    if (!enabled_ || value.isEmpty()) return;
    QSettings s;
    QStringList list = s.value(recentKey(kind)).toStringList();
    list.removeAll(value);
    list.prepend(value);
    while (list.size() > kMaxRecent) list.removeLast();
    s.setValue(recentKey(kind), list);
    Q_EMIT recentChanged();
}

QString StudioSettings::imageDirectory(const QString& fallback) const {
    return enabled_ ? QSettings().value(QStringLiteral("dialogs/imageDir"), fallback).toString() : QString();
}

void StudioSettings::setImageDirectory(const QString& dir) {
    if (enabled_) QSettings().setValue(QStringLiteral("dialogs/imageDir"), dir);
}

} // namespace kvsteer::ui
