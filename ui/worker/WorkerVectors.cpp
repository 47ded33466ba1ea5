// The Worker's steering-vector and mask requests: compute (a recipe), import, hold a session's
// vectors, export with the panel's plan, and masks in and out. The core comes first, as in Worker.cpp.
#include "Error.h"
#include "eval/BoxCells.h"
#include "io/Image.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "steer/Mask.h"
#include "steer/SpanMask.h"
#include "steer/PlanOptions.h"
#include "steer/Recipes.h"
#include "steer/SteeringPlan.h"
#include "steer/SteeringVectors.h"

#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <algorithm>

#include "worker/CoreConversions.h"
#include "worker/WorkerState.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace kvsteer::ui {

void Worker::computeVectors(const RecipeRequest& req) {
    if (!d->model) {
        Q_EMIT vectorsComputeFailed(tr("Load a model before computing steering vectors."));
        return;
    }
    const QString what = tr("computing steering vectors");
    try {
        c10::NoGradGuard noGrad;
        ExtractOptions o;
        o.keySpace = req.preRope ? KeySpace::PreRope : KeySpace::PostRope;
        o.perPosition = req.perPosition;
        o.pca = req.pca;
        SteeringVectors v;
        QJsonObject inputs{{QStringLiteral("pca"), req.pca}, {QStringLiteral("per_position"), req.perPosition}};
        std::string recipe;
        QString origin;
        switch (req.source) {
        case VectorSource::SecondImage: {
            if (!d->model->hasVision()) throw kvsteer::Error("a text-only model takes no image: use text pairs");
            if (d->image.empty()) throw kvsteer::Error("open the image to steer first; the recipe contrasts it with the target image");
            if (req.targetImage.isEmpty()) throw kvsteer::Error("choose the image to steer toward");
            Q_EMIT progress(tr("Computing vectors: prefilling both images…"), 0, 0);
            const ImageU8 target = decodeImage(reinterpret_cast<const uint8_t*>(req.targetImage.constData()),
                                               size_t(req.targetImage.size()), ss(req.targetName));
            // Δ = target − current: adding it moves the current image toward the target.
            v = extractImagePair(d->model, ss(req.prompt), target, d->image, o);
            recipe = "image-pair";
            origin = tr("toward %1 (from %2)").arg(req.targetName, d->imageName);
            inputs.insert(QStringLiteral("prompt"), req.prompt);
            inputs.insert(QStringLiteral("image_a"), req.targetName);
            inputs.insert(QStringLiteral("image_b"), d->imageName);
            break;
        }
        case VectorSource::PaintedRegion: {
            if (!d->model->hasVision()) throw kvsteer::Error("a text-only model takes no image: use text pairs");
            if (d->image.empty()) throw kvsteer::Error("open an image first; the recipe contrasts its painted region with the rest");
            Q_EMIT progress(tr("Computing vectors: painted region vs the rest…"), 0, 0);
            v = extractRegion(d->model, ss(req.prompt), d->image, gridTensor(req.region), o);
            recipe = "region";
            origin = tr("painted region of %1 (%2 cells)").arg(d->imageName).arg(req.region.paintedCells());
            inputs.insert(QStringLiteral("prompt"), req.prompt);
            inputs.insert(QStringLiteral("image"), d->imageName);
            break;
        }
        case VectorSource::TextPairs: {
            std::vector<TextPair> pairs;
            QJsonArray list;
            for (const TextPairItem& p : req.pairs) {
                if (p.positive.trimmed().isEmpty() || p.negative.trimmed().isEmpty()) continue;
                pairs.push_back({ss(p.positive), ss(p.negative)});
                list.append(QJsonObject{{QStringLiteral("positive"), p.positive}, {QStringLiteral("negative"), p.negative}});
            }
            if (pairs.empty()) throw kvsteer::Error("text pairs: enter at least one pair with both a positive and a negative prompt");
            Q_EMIT progress(tr("Computing vectors from %1 text pairs…").arg(pairs.size()), 0, 0);
            v = extractTextPairs(d->model, pairs, o);
            recipe = "text-pairs";
            origin = tr("%n text pair(s)", nullptr, int(pairs.size()));
            inputs.insert(QStringLiteral("pairs"), list);
            break;
        }
        case VectorSource::File:
            importVectors(req.filePath);
            return;
        }
        const SteeringFileInfo info =
            newVectorsFileInfo(*d->model, recipe, QJsonDocument(inputs).toJson(QJsonDocument::Compact).toStdString(), o.keySpace);
        const QString path = d->temp.filePath(QStringLiteral("computed.safetensors"));
        saveSteeringFile(ss(path), v, info);
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly)) throw kvsteer::Error("cannot read back " + ss(path));
        const VectorsInfo out = holdVectors(std::move(v), info, f.readAll(), origin, false);
        d->steered.reset();
        Q_EMIT idle();
        Q_EMIT vectorsReady(out);
    } catch (...) {
        Q_EMIT idle();
        Q_EMIT vectorsComputeFailed(describeFailure(what, std::current_exception()));
    }
}

VectorsInfo Worker::holdVectors(SteeringVectors vectors, const SteeringFileInfo& file, const QByteArray& blob, const QString& origin,
                                bool fromFile) {
    VectorsInfo out = describeVectors(vectors, file);
    out.blob = blob;
    out.origin = origin;
    out.fromFile = fromFile;
    if (out.recipe.isEmpty()) out.recipe = QStringLiteral("imported");
    d->vectors = std::move(vectors);
    d->vectorsFile = file;
    d->vectorsInfo = out;
    return out;
}

void Worker::importVectors(const QString& path) {
    if (!d->model) {
        Q_EMIT vectorsImportFailed(path, tr("Load a model before importing steering vectors: a vector file belongs to one model."));
        return;
    }
    try {
        SteeringFileInfo info;
        SteeringVectors v = loadSteeringFile(ss(path), *d->model, &info);   // validates against the model
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly)) throw kvsteer::Error("cannot read " + ss(path));
        VectorsInfo out = holdVectors(std::move(v), info, f.readAll(), QFileInfo(path).fileName(), true);
        out.filePath = d->vectorsInfo.filePath = QFileInfo(path).absoluteFilePath();
        Q_EMIT vectorsReady(out);
    } catch (...) {
        Q_EMIT vectorsImportFailed(path, describeFailure(tr("importing %1").arg(QFileInfo(path).fileName()), std::current_exception()));
    }
}

void Worker::setVectorsBlob(const QByteArray& blob, const QString& origin) {
    if (blob.isEmpty()) {
        clearVectors();
        return;
    }
    if (!d->model) {   // validated when a model arrives
        d->pendingBlob = blob;
        d->pendingOrigin = origin;
        return;
    }
    const QString path = d->temp.filePath(QStringLiteral("session-vectors.safetensors"));
    try {
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(blob) != blob.size())
            throw kvsteer::Error("cannot write a temporary copy of the vectors to " + ss(path));
        f.close();
        SteeringFileInfo info;
        SteeringVectors v = loadSteeringFile(ss(path), *d->model, &info);
        Q_EMIT vectorsReady(holdVectors(std::move(v), info, blob, origin, false));
    } catch (...) {
        QString msg = describeFailure(tr("loading the session's steering vectors"), std::current_exception());
        msg.replace(path, tr("the session's vectors"));
        Q_EMIT sessionVectorsFailed(msg);
    }
}

void Worker::clearVectors() {
    d->vectors.reset();
    d->vectorsInfo = VectorsInfo();
    d->pendingBlob.clear();
    Q_EMIT vectorsCleared();
}

void Worker::exportVectors(const QString& path, const PlanSettings& plan, const StrengthGrid& strength) {
    if (!d->model || !d->vectors) {
        Q_EMIT vectorsExportFailed(path, tr("There are no steering vectors to export yet: compute or import them first."));
        return;
    }
    try {
        SteeringVectors v = *d->vectors;
        v.mask = gridTensor(strength);
        SteeringFileInfo info = d->vectorsFile;
        info.modelName = d->model->config().name;
        info.configHash = d->model->config().configHash;
        info.op = plan.op;
        const QVector<double> ck = plan.ckValues(), cv = plan.cvValues();   // the file suggests what runs
        info.ck.assign(ck.begin(), ck.end());
        info.cv.assign(cv.begin(), cv.end());
        info.layers = layerRange(plan, d->model->config().text.numLayers);
        info.headMask.clear();
        if (!plan.heads.isEmpty()) {
            info.headMask.assign(size_t(d->model->config().text.numLayers), {});
            for (int l : info.layers) info.headMask[size_t(l)] = std::vector<int>(plan.heads.begin(), plan.heads.end());
        }
        if (info.recipe.empty()) info.recipe = "imported";
        if (info.promptTemplate.empty()) info.promptTemplate = d->model->applyTemplate("{question}", true);
        info.version = KVSTEER_VERSION;
        saveSteeringFile(ss(path), v, info);
        Q_EMIT vectorsExported(path);
    } catch (...) {
        Q_EMIT vectorsExportFailed(path, describeFailure(tr("writing %1").arg(path), std::current_exception()));
    }
}

void Worker::exportMask(const QString& path, const StrengthGrid& strength) {
    try {
        // One cell of the PNG per image patch (the processed width over the grid), 14 px without a model.
        const int cell = d->model ? std::max(1, d->info.cropWidth / std::max(1, strength.cols)) : 14;
        saveMaskPng(ss(path), gridTensor(strength), cell);
        Q_EMIT maskExported(path);
    } catch (...) {
        Q_EMIT maskExportFailed(path, describeFailure(tr("writing %1").arg(path), std::current_exception()));
    }
}

namespace {

std::array<double, 4> boxFromSpec(const QString& spec) {
    const QStringList parts = spec.mid(4).split(QLatin1Char(','));
    std::array<double, 4> box{};
    bool ok = parts.size() == 4;
    for (int i = 0; ok && i < 4; ++i) box[size_t(i)] = parts[i].toDouble(&ok);
    if (!ok) throw kvsteer::Error("mask " + ss(spec) + ": expected box:x0,y0,x1,y1 (image pixels)");
    return box;
}

} // namespace

void Worker::loadMask(const QString& spec, const QString& prompt) {
    try {
        if (!d->model) throw kvsteer::Error("load a model first: a mask is read onto the model's patch grid");
        // The open image's own span (Qwen2-VL's grid and LLaVA-NeXT's views follow each image),
        // the text prompt's token strip, or the model's grid.
        VisualSpan span;
        span.gridHeight = d->info.gridRows;
        span.gridWidth = d->info.gridCols;
        if (!d->model->hasVision()) span = buildPrompt(*d->model, ss(prompt), false, nullptr).span;
        else if (!d->image.empty()) span = imageSpan(*d->model, d->image);
        // "box:x0,y0,x1,y1": an eval item's box in the open image's pixels, through the family's
        // resize and crop onto its grid (the Evaluate dock's click-through).
        const bool box = spec.startsWith(QLatin1String("box:"));
        if (box && d->image.empty()) throw kvsteer::Error("a box needs an open image");
        const at::Tensor m = box ? boxStrength(boxFromSpec(spec), d->image, buildPrompt(*d->model, ss(prompt), false, &d->image))
                                 : loadSpanMask(ss(spec), span);
        Q_EMIT maskLoaded(gridFromTensor(m), spec);
    } catch (...) {
        Q_EMIT maskLoadFailed(spec, describeFailure(tr("reading the mask %1").arg(spec), std::current_exception()));
    }
}

} // namespace kvsteer::ui
