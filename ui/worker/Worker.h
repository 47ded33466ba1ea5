#pragma once
// Worker: the studio's only contact with the core. A QObject moved to its own QThread; it owns
// the model, the prefilled Session (the pristine snapshot), the steering vectors and the last
// steered cache. A thin thread adapter: the UI sends each request to its own slot through a
// queued connection and listens to one typed signal per result and per failure kind; nothing
// that crosses over holds a tensor.
//
// Runs: prefill happens once per (model, image, prompt); every later run only applies the plan
// to a clone of the kept snapshot and decodes the two streams side by side. A run is cancelled
// by cancelRunsBefore() (thread-safe, callable from the UI thread): the prefill sees it between
// two decoder layers and the decode loop between two steps, so a cancelled run stops within one
// layer or one decode step.
//
// This header is plain Qt; Worker.cpp includes the core (and libtorch) before any Qt header.
#include "types/AtlasTypes.h"
#include "types/EvalTypes.h"
#include "types/StudioTypes.h"
#include "types/StudyTypes.h"

#include <QObject>
#include <QStringList>

#include <functional>
#include <memory>

namespace kvsteer {
struct PairEvent;
struct SteeringVectors;
struct SteeringFileInfo;
struct VisualSpan;
} // namespace kvsteer

namespace kvsteer::ui {

class Worker : public QObject {
    Q_OBJECT
public:
    explicit Worker(QObject* parent = nullptr);
    ~Worker() override;

    // Thread-safe. Every run whose id is below `id` stops at its next decode step (or does not
    // start at all if it is still queued).
    void cancelRunsBefore(quint64 id);
    // Thread-safe. Every atlas whose id is below `id` stops at its next decode step (WorkerAtlas.cpp).
    void cancelAtlasesBefore(quint64 id);
    // Thread-safe. A running dataset evaluation stops after its current batch (WorkerEval.cpp).
    void cancelEvals();
    // Thread-safe. A running study stops after its current batch (WorkerStudy.cpp).
    void cancelStudies();
    // Thread-safe. A model load in progress stops at its next tensor (modelLoadCancelled).
    void cancelLoad();
    // Thread-safe. Decode steps completed by the run in progress (or the last run).
    int stepsCompleted() const;
    // Thread-safe. What heatmaps the running decode should stream (picked up at the next step).
    void setHeatmapSettings(const kvsteer::ui::HeatmapSettings& settings);
    // The families a model directory may hold ("LLaVA-1.5", "PaliGemma", ...), from the core's
    // registry, for the texts that tell a person what to open.
    static QStringList supportedFamilies();
    // What computes (kernels::ComputeReport): kvsteer's kernels and ISA, the BLAS and its core, and
    // a warning line with its remedy when the BLAS fell back to a generic core.
    static QStringList computeReport();

public Q_SLOTS:
    void loadModel(const QString& directory, const kvsteer::ui::LoadSettings& settings);
    void setImage(quint64 id, const QByteArray& bytes, const QString& name);
    // A prompt without an image: its token strip (the tokens the cache will hold), for the canvas.
    void tokenizePrompt(quint64 id, const QString& prompt);
    void run(const kvsteer::ui::RunRequest& request);
    void requestHeatmap();
    void computeVectors(const kvsteer::ui::RecipeRequest& request);
    void importVectors(const QString& path);
    void setVectorsBlob(const QByteArray& blob, const QString& origin);   // e.g. from a session file
    void clearVectors();
    void exportVectors(const QString& path, const kvsteer::ui::PlanSettings& plan, const kvsteer::ui::StrengthGrid& strength);
    void exportMask(const QString& path, const kvsteer::ui::StrengthGrid& strength);
    // Reads a mask onto the grid the canvas shows: the open image's (a Qwen2-VL grid follows each
    // image; before one, the model's), or for a text-only model the token strip of `prompt`.
    void loadMask(const QString& spec, const QString& prompt);
    void runAtlas(const kvsteer::ui::AtlasRequest& request);   // WorkerAtlas.cpp
    void runEval(const kvsteer::ui::EvalRequest& request);     // WorkerEval.cpp
    void runStudy(const kvsteer::ui::StudyRequest& request);   // WorkerStudy.cpp

Q_SIGNALS:
    // One signal per result and one per failure kind; a failure's message is readable as it is.
    void progress(const QString& stage, int value, int maximum);   // maximum 0: busy, no fraction
    void idle();
    void modelLoaded(const kvsteer::ui::ModelInfo& info);
    void modelFailed(const QString& directory, const QString& message);
    void modelLoadCancelled(const QString& directory);   // the model loaded before stays
    void imageReady(const kvsteer::ui::ImageInfo& image);
    void imageFailed(quint64 id, const QString& name, const QString& message);
    // A text-only model was loaded: the open image is kept, unused, until a vision model returns.
    void imageSetAside(const QString& message);
    void promptTokens(quint64 id, const QString& prompt, const QStringList& pieces);
    void promptTokensFailed(quint64 id, const QString& message);
    void runStarted(const kvsteer::ui::RunStarted& info);
    void tokenPair(const kvsteer::ui::TokenPair& pair);
    void runFinished(const kvsteer::ui::RunFinished& info);
    void runFailed(quint64 runId, const QString& message);
    void heatmapReady(const kvsteer::ui::HeatmapData& data);
    void heatmapFailed(const QString& message);
    void vectorsReady(const kvsteer::ui::VectorsInfo& info);
    void vectorsComputeFailed(const QString& message);
    void vectorsImportFailed(const QString& path, const QString& message);
    void sessionVectorsFailed(const QString& message);   // setVectorsBlob
    void vectorsCleared();
    void vectorsExported(const QString& path);
    void vectorsExportFailed(const QString& path, const QString& message);
    void maskExported(const QString& path);
    void maskExportFailed(const QString& path, const QString& message);
    void maskLoaded(const kvsteer::ui::StrengthGrid& grid, const QString& spec);
    void maskLoadFailed(const QString& spec, const QString& message);
    void atlasStarted(const kvsteer::ui::AtlasStarted& info);
    void atlasCell(const kvsteer::ui::AtlasCellResult& cell);   // as each cell finishes
    void atlasFinished(const kvsteer::ui::AtlasFinished& info);
    void atlasFailed(quint64 atlasId, const QString& message);
    void evalStarted(const kvsteer::ui::EvalStarted& info);
    void evalItem(const kvsteer::ui::EvalItemRow& item);     // as each batch ends
    void evalFinished(const kvsteer::ui::EvalFinished& info);
    void evalFailed(quint64 evalId, const QString& message);
    void studyStarted(const kvsteer::ui::StudyStarted& info);
    void studyProgress(const kvsteer::ui::StudyProgress& progress);   // as each item's plans are on disk
    void studyFinished(const kvsteer::ui::StudyFinished& info);
    void studyFailed(quint64 studyId, const QString& message);

private:
    // Keeps `vectors` (and the file info they came with) as the ones runs use; what the UI is told.
    VectorsInfo holdVectors(kvsteer::SteeringVectors vectors, const kvsteer::SteeringFileInfo& file, const QByteArray& blob,
                            const QString& origin, bool fromFile);

    // A decode step's attention (WorkerHeatmaps.cpp): kept per stream for the heatmaps, and shown
    // at once when the attention heatmap is on.
    void keepStepAttention(quint64 runId, const kvsteer::PairEvent& ev, const TokenPair& pair, const kvsteer::VisualSpan& span);

    struct State;
    std::unique_ptr<State> d;
};

} // namespace kvsteer::ui
