#include "StudioTypes.h"

#include <QCoreApplication>
#include <QLocale>

namespace kvsteer::ui {

QString metricTitle(Metric m) {
    switch (m) {
    case Metric::KeyNorm: return QStringLiteral("‖K‖");
    case Metric::ValueNorm: return QStringLiteral("‖V‖");
    case Metric::KeyDelta: return QStringLiteral("‖ΔK‖");
    case Metric::ValueDelta: return QStringLiteral("‖ΔV‖");
    case Metric::ValueCosine: return QStringLiteral("cos(V, Δ)");
    case Metric::Attention: return QStringLiteral("Attention");
    }
    return {};
}

QString metricDescription(Metric m) {
    switch (m) {
    case Metric::KeyNorm: return QStringLiteral("Norm of the cached key at each visual token.");
    case Metric::ValueNorm: return QStringLiteral("Norm of the cached value at each visual token.");
    case Metric::KeyDelta: return QStringLiteral("How far the plan moved each key: ‖K steered − K unsteered‖.");
    case Metric::ValueDelta: return QStringLiteral("How far the plan moved each value: ‖V steered − V unsteered‖.");
    case Metric::ValueCosine: return QStringLiteral("Cosine between each cached value and the layer's steering direction.");
    case Metric::Attention:
        return QStringLiteral("Attention of the token being generated to each visual token, refreshed at every step.");
    }
    return {};
}

QString VectorsInfo::summary() const {
    if (!valid()) return QStringLiteral("No steering vectors");
    QString s = recipe.isEmpty() ? QStringLiteral("vectors") : recipe;
    s += QStringLiteral(" · %1 · %2 · %3 layer%4 · %5")
             .arg(keySpace, perPosition ? QStringLiteral("per position") : QStringLiteral("per head"))
             .arg(layersWithVectors)
             .arg(layersWithVectors == 1 ? QString() : QStringLiteral("s"))
             .arg(QLocale().formattedDataSize(blob.size()));
    return s;
}

void registerStudioTypes() {
    qRegisterMetaType<LoadSettings>();
    qRegisterMetaType<ModelInfo>();
    qRegisterMetaType<ImageInfo>();
    qRegisterMetaType<PlanSettings>();
    qRegisterMetaType<GenerationSettings>();
    qRegisterMetaType<HeatmapSettings>();
    qRegisterMetaType<HeatmapData>();
    qRegisterMetaType<RunRequest>();
    qRegisterMetaType<TokenPair>();
    qRegisterMetaType<RunStarted>();
    qRegisterMetaType<RunFinished>();
    qRegisterMetaType<RecipeRequest>();
    qRegisterMetaType<VectorsInfo>();
    qRegisterMetaType<StrengthGrid>();
}

} // namespace kvsteer::ui
