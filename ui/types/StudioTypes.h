#pragma once
// Plain data that crosses the thread boundary between the UI and the Worker. Nothing here
// knows about tensors: token ids, strings, floats in QVectors, QImages. Every struct is a
// registered metatype so it can travel through queued signals.
#include "StrengthGrid.h"
#include "analysis/HeatMetric.h"
#include "steer/SteeringOperator.h"

#include <QByteArray>
#include <QImage>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

#include <optional>

namespace kvsteer::ui {

// ---- model -------------------------------------------------------------------------------

struct LoadSettings {
    QString device = QStringLiteral("cpu");   // cpu | cuda | cuda:N
    QString dtype = QStringLiteral("auto");   // auto (as stored) | f32 | f16 | bf16
    int threads = 0;                           // 0 = all cores
    qint64 maxPixels = 0;                      // Qwen2-VL / Qwen2.5-VL image budget; 0 = the processor's (LoadOptions)
};

struct ModelInfo {
    QString directory;
    QString name;
    QString family;                  // the family that read the directory: "LLaVA-1.5", "PaliGemma", ...
    QString promptTemplate;          // the family's prompt around "{question}" with an image (Model::applyTemplate)
    QString dtype;
    QString device;
    QString configHash;
    int threads = 0;
    int layers = 0;
    int heads = 0;
    int kvHeads = 0;
    int headDim = 0;
    int hidden = 0;
    // The patch grid and the processor's output size for an image at the processor's own size
    // (an opened image's grid comes with its ImageInfo); 0 until a model is loaded.
    int gridRows = 0;
    int gridCols = 0;
    int cropWidth = 0;
    int cropHeight = 0;
    qint64 parameters = 0;
    qint64 vocab = 0;
    double loadMs = 0;
    bool hasVision = true;           // false: a text-only model; the canvas is the prompt's token strip
    bool valid() const { return layers > 0; }
    bool textOnly() const { return valid() && !hasVision; }
};

// ---- image -------------------------------------------------------------------------------

struct ImageInfo {
    quint64 id = 0;
    QString name;            // file name or "pasted image"
    QImage crop;             // what the model sees: its processor's resize (and crop), RGB888
    int originalWidth = 0;
    int originalHeight = 0;
    int gridRows = 0;        // the image's patch grid under the loaded model (0 before a model)
    int gridCols = 0;
    // A picture the model sees in several views (LLaVA-NeXT): each view's name and grid, in
    // token order ("base 24×24", "crops 24×40"); the canvas paints the last. Empty otherwise.
    QStringList views;
};

// ---- steering plan -----------------------------------------------------------------------

// The steering panel's choices in Qt types. Three names, three stages: the worker turns these into
// the core's PlanOptions (what a person chose, the CLI's flags too: CoreConversions), and the
// core's makePlan turns those into a SteeringPlan (what is applied). The operator and the ablate
// target are the core's own types, parsed where text comes in (the session file, the settings,
// the command line); PlanForm's combo boxes hold them as item data.
struct PlanSettings {
    kvsteer::SteeringOperator op = kvsteer::SteeringOperator::Add;
    bool propagate = false;                        // edit-only (false) or propagate
    kvsteer::AblateTarget ablateTarget = kvsteer::AblateTarget::Mean;
    double ck = 1.0;
    double cv = 1.0;
    // One coefficient per model layer (the command line's --ck 0,1,2, a vector file's suggestion):
    // when set, these run instead of ck / cv above.
    QVector<double> ckByLayer, cvByLayer;
    int layerFrom = 0;
    int layerTo = -1;                              // -1: the last layer
    QVector<int> heads;                            // KV heads; empty = all

    QVector<double> ckValues() const { return ckByLayer.isEmpty() ? QVector<double>{ck} : ckByLayer; }   // what runs
    QVector<double> cvValues() const { return cvByLayer.isEmpty() ? QVector<double>{cv} : cvByLayer; }
    bool operator==(const PlanSettings& o) const {
        return op == o.op && propagate == o.propagate && ablateTarget == o.ablateTarget && ck == o.ck && cv == o.cv &&
               ckByLayer == o.ckByLayer && cvByLayer == o.cvByLayer && layerFrom == o.layerFrom && layerTo == o.layerTo && heads == o.heads;
    }
    bool operator!=(const PlanSettings& o) const { return !(*this == o); }
};

// The core's names as Qt text: what a session file, the settings and the labels show.
inline QString operatorText(SteeringOperator op) { return QString::fromStdString(operatorName(op)); }
inline QString ablateTargetText(AblateTarget target) { return QString::fromStdString(ablateTargetName(target)); }

// ---- generation --------------------------------------------------------------------------

struct GenerationSettings {
    int maxNewTokens = 32;
    bool sample = false;          // false = greedy
    double temperature = 0.7;
    double topP = 0.9;
    int topK = 0;
    quint64 seed = 0;
    bool stopAtEos = true;        // false: keep generating past the end of the answer

    bool operator==(const GenerationSettings& o) const {
        return maxNewTokens == o.maxNewTokens && sample == o.sample && temperature == o.temperature && topP == o.topP &&
               topK == o.topK && seed == o.seed && stopAtEos == o.stopAtEos;
    }
};

// ---- heatmaps ----------------------------------------------------------------------------

// The core's metrics (core/analysis/HeatMetric.h): one enum for both.
using Metric = kvsteer::HeatMetric;
constexpr int kMetricCount = kvsteer::kHeatMetricCount;
QString metricTitle(Metric m);        // "‖K‖", "‖V‖", "‖ΔK‖", ...
QString metricDescription(Metric m);  // one sentence for tooltips

struct HeatmapSettings {
    Metric metric = Metric::Attention;
    int head = -1;                    // KV head, -1 = mean over heads
    bool steeredRow = true;           // which stream's cache / attention
    int view = -1;                    // a picture in views: which (0 the base view, ...); -1 the painted grid's
};

struct HeatmapData {
    quint64 runId = 0;
    Metric metric = Metric::Attention;
    int head = -1;
    bool steeredRow = true;
    int step = -1;                    // decoding step of an attention map (-1: cache statistic)
    QString token;                    // the token whose attention this is
    int view = -1;                    // as HeatmapSettings::view: -1 (or a plain grid) is the canvas's grid
    QString viewName;                 // "base", "crops"; empty for a plain grid
    int layers = 0;
    int rows = 0;
    int cols = 0;
    QVector<float> values;            // [layers][rows][cols]
    bool valid() const { return layers > 0 && values.size() == layers * rows * cols; }
    float at(int layer, int r, int c) const { return values[(layer * rows + r) * cols + c]; }
};

// ---- runs --------------------------------------------------------------------------------

struct RunRequest {
    quint64 id = 0;
    QString prompt;
    StrengthGrid strength;
    PlanSettings plan;
    GenerationSettings generation;
    HeatmapSettings heatmap;
};

struct Alternative {
    qint64 id = -1;
    QString text;
    float probability = 0;
};

struct StreamToken {
    qint64 id = -1;                   // -1: this stream had already finished
    QString text;                     // decoded text this token completed (may be empty)
    bool eos = false;
    QVector<Alternative> top;         // top-5 of the distribution it was chosen from
    bool valid() const { return id >= 0; }
};

struct TokenPair {
    quint64 runId = 0;
    int step = 0;
    StreamToken unsteered;
    StreamToken steered;
};

struct RunStarted {
    quint64 runId = 0;
    bool prefilled = false;           // this run had to prefill (new image / prompt / model)
    int promptTokens = 0;
    double prefillMs = 0;
    double editMs = 0;
    StrengthGrid appliedStrength;     // the map the plan was built with, read back from the tensor
    QVector<int> appliedLayers;
    QString note;                     // e.g. "no steering vectors yet"
};

struct RunFinished {
    quint64 runId = 0;
    bool cancelled = false;
    int steps = 0;
    double decodeMs = 0;
    QString unsteeredText;
    QString steeredText;
};

// ---- steering vectors ---------------------------------------------------------------------

enum class VectorSource { SecondImage = 0, PaintedRegion, TextPairs, File };

struct TextPairItem {
    QString positive;
    QString negative;
};

struct RecipeRequest {
    VectorSource source = VectorSource::SecondImage;
    QString prompt;                   // the question the image recipes prefill with
    QByteArray targetImage;           // SecondImage: encoded file bytes of the image to steer toward
    QString targetName;
    StrengthGrid region;              // PaintedRegion
    QVector<TextPairItem> pairs;      // TextPairs
    QString filePath;                 // File
    bool preRope = false;
    bool perPosition = false;
    bool pca = false;
};

// What the studio knows about the vectors the Worker holds. `blob` is the whole vector file
// (safetensors, the core's format); sessions embed it and hand it back to the Worker.
struct VectorsInfo {
    QByteArray blob;
    QString recipe;                   // image-pair | region | text-pairs | imported
    QString origin;                   // human-readable: which files / pairs
    QString filePath;                 // the file imported (absolute); "" for computed or a session's vectors
    QString keySpace;                 // post-rope | pre-rope
    bool perPosition = false;
    int layersWithVectors = 0;
    QString modelName;
    // Suggestions stored in a file (imported files only).
    std::optional<kvsteer::SteeringOperator> suggestedOperator;
    QVector<double> suggestedCk, suggestedCv;
    QVector<int> suggestedLayers;
    StrengthGrid mask;                // the recipe's region, if the file has one
    bool hasMask = false;
    bool fromFile = false;            // imported (suggestions may be applied)
    bool valid() const { return !blob.isEmpty(); }
    QString summary() const;          // one line for the panel
};

// Registers every type above for queued connections (call once, before the Worker starts).
void registerStudioTypes();

} // namespace kvsteer::ui

Q_DECLARE_METATYPE(kvsteer::ui::LoadSettings)
Q_DECLARE_METATYPE(kvsteer::ui::ModelInfo)
Q_DECLARE_METATYPE(kvsteer::ui::ImageInfo)
Q_DECLARE_METATYPE(kvsteer::ui::PlanSettings)
Q_DECLARE_METATYPE(kvsteer::ui::GenerationSettings)
Q_DECLARE_METATYPE(kvsteer::ui::HeatmapSettings)
Q_DECLARE_METATYPE(kvsteer::ui::HeatmapData)
Q_DECLARE_METATYPE(kvsteer::ui::RunRequest)
Q_DECLARE_METATYPE(kvsteer::ui::TokenPair)
Q_DECLARE_METATYPE(kvsteer::ui::RunStarted)
Q_DECLARE_METATYPE(kvsteer::ui::RunFinished)
Q_DECLARE_METATYPE(kvsteer::ui::RecipeRequest)
Q_DECLARE_METATYPE(kvsteer::ui::VectorsInfo)
