#pragma once
// The Worker's private state: the model, the image, the kept prefill and the last steered cache,
// the held vectors, and the thread-safe flags the UI thread sets. Shared by the Worker's files
// (Worker.cpp: model, image, runs; WorkerHeatmaps.cpp; WorkerVectors.cpp: vectors and masks;
// WorkerAtlas, WorkerEval, WorkerStudy); nothing else includes it.
#include "generate/Session.h"
#include "models/ModelRegistry.h"
#include "steer/SteeringPlan.h"
#include "steer/SteeringVectors.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "worker/ScratchFolder.h"
#include "worker/Worker.h"

#include <QTemporaryDir>

namespace kvsteer::ui {

// One stream's attention at its last decoded step (the heatmaps' attention metric). A stream that
// has ended keeps the attention of its last token.
struct StreamAttention {
    std::vector<at::Tensor> layers;   // per layer [1, H, S], on the CPU
    int step = -1;
    QString token;                    // the token the stream produced at that step
};

struct Worker::State {
    std::shared_ptr<Model> model;
    ModelInfo info;

    quint64 imageId = 0;
    QString imageName;
    ImageU8 image;

    std::unique_ptr<Session> session;                    // keeps the last prompt's snapshot (Session::holds)

    std::optional<SteeredCache> steered;                 // the last run's edited cache
    StreamAttention attention[2];                        // 0 unsteered, 1 steered
    void clearAttention() { attention[0] = attention[1] = StreamAttention(); }
    quint64 lastRunId = 0;

    std::optional<SteeringVectors> vectors;
    SteeringFileInfo vectorsFile;
    VectorsInfo vectorsInfo;
    QByteArray pendingBlob;                              // vectors that arrived before a model
    QString pendingOrigin;

    QTemporaryDir temp{scratchFolderTemplate()};        // vectors computed here (ScratchFolder.h)
    std::atomic<quint64> cancelBelow{0};
    std::atomic<bool> cancelLoad{false};
    std::atomic<int> steps{0};
    std::atomic<quint64> atlasCancelBelow{0};   // the atlas (WorkerAtlas.cpp): ids below stop
    std::atomic<quint64> atlasRunning{0};
    std::atomic<bool> atlasStop{false};
    std::atomic<bool> evalStop{false};          // the dataset evaluation (WorkerEval.cpp)
    std::atomic<bool> studyStop{false};         // the study (WorkerStudy.cpp)
    mutable std::mutex heatmapMutex;
    HeatmapSettings heatmap;

    // The held vectors for the atlas or a dataset run with `op`: null when `op` needs none. Unlike
    // a single run (which shows both answers unsteered), these refuse to run without them.
    const SteeringVectors* vectorsRequiredBy(SteeringOperator op) const {
        if (!operatorNeedsVectors(op)) return nullptr;
        if (!vectors)
            throw Error("the '" + operatorName(op) + "' operator needs steering vectors: compute or import them in the Steering panel");
        return &*vectors;
    }

    HeatmapSettings heatmapSettings() const {
        std::lock_guard<std::mutex> lock(heatmapMutex);
        return heatmap;
    }
};

} // namespace kvsteer::ui
