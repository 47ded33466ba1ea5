// The core (and with it libtorch/ATen) comes first: Qt's `slots` keyword would break ATen
// headers included after a Qt header. Only the files of ui/worker/ include either.
#include "Error.h"
#include "Runtime.h"
#include "io/Image.h"
#include "kernels/ComputeReport.h"
#include "models/ModelRegistry.h"
#include "analysis/Heatmaps.h"
#include "cache/SpanCells.h"
#include "models/Prompt.h"
#include "generate/Session.h"
#include "steer/SteeredRun.h"
#include "steer/Mask.h"
#include "steer/PlanOptions.h"
#include "steer/Recipes.h"
#include "steer/SteeringPlan.h"
#include "steer/SteeringVectors.h"

#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "worker/CoreConversions.h"
#include "worker/WorkerState.h"

#include <QDir>
#include <QFileInfo>
#include <QLocale>
#include <QTemporaryDir>

namespace kvsteer::ui {

namespace {

// What the UI is told about an image: its processor's view and, once a model is loaded, the patch
// grid the family lays it out on (fixed per model today; a family may make it depend on the image).
ImageInfo describeImage(quint64 id, const QString& name, const ImageU8& original, const PreprocessedImage& pre, const Model* model) {
    ImageInfo info;
    info.id = id;
    info.name = name;
    info.crop = toQImage(pre.cropped);
    info.originalWidth = original.width;
    info.originalHeight = original.height;
    if (model) {
        const ImageLayout layout = model->imageLayout(pre);
        info.gridRows = layout.gridHeight;
        info.gridCols = layout.gridWidth;
        for (const SpanView& v : layout.views) info.views << QStringLiteral("%1 %2×%3").arg(qs(v.name)).arg(v.rows).arg(v.cols);
    }
    return info;
}

// The model's grid and processed size for an image at its processor's own size (config image_size).
ImageLayout defaultLayout(const Model& model, PreprocessedImage* pre) {
    const int side = model.config().vision.imageSize;
    *pre = model.preprocessImage(ImageU8(side, side));
    return model.imageLayout(*pre);
}

// What the studio is told before the first token: the applied map and layers, the timings, and
// what the person should know, worded with the studio's menus.
RunStarted describeStart(quint64 runId, const SteeredRunStart& start, const SteeringPlan& plan) {
    RunStarted r;
    r.runId = runId;
    r.prefilled = start.prefilled;
    r.prefillMs = start.prefillMs;
    r.promptTokens = int(start.promptTokens);
    r.editMs = start.steered.editMs;
    r.appliedStrength = gridFromTensor(plan.strength);
    r.appliedLayers = QVector<int>(plan.layers.begin(), plan.layers.end());
    QStringList notes;
    if (start.notices.noVectors)
        notes << Worker::tr("No steering vectors yet: compute or import them in the Steering panel. "
                            "Until then both streams are the unsteered model.");
    else if (start.notices.nothingPainted)
        notes << (start.steered.cache.visualSpan.isTokenStrip()
                      ? Worker::tr("Nothing is painted: paint the prompt's tokens (or Paint → Last Token) to choose where to steer.")
                      : Worker::tr("Nothing is painted: paint over the image to choose where to steer."));
    if (start.notices.budgetCut)
        notes << Worker::tr("Max tokens is limited to %1 here: the prompt fills %2 of the model's %3-token context.")
                     .arg(start.maxNewTokens)
                     .arg(start.promptTokens)
                     .arg(start.contextTokens);
    notes.removeAll(QString());
    r.note = notes.join(QLatin1Char(' '));
    return r;
}

} // namespace

QStringList Worker::computeReport() {
    const kernels::ComputeReport r = kernels::computeReport();
    QStringList lines{qs(kernels::kernelsLine(r)), qs(kernels::blasLine(r))};
    if (const std::string w = kernels::blasWarning(r); !w.empty()) lines << qs(w);
    return lines;
}

QStringList Worker::supportedFamilies() {
    QStringList names;
    for (const ModelFamily& f : modelFamilies())
        if (!names.contains(qs(f.name))) names << qs(f.name);
    return names;
}

Worker::Worker(QObject* parent) : QObject(parent), d(std::make_unique<State>()) {}
Worker::~Worker() = default;

void Worker::cancelLoad() { d->cancelLoad = true; }

void Worker::cancelRunsBefore(quint64 id) {
    quint64 cur = d->cancelBelow.load();
    while (cur < id && !d->cancelBelow.compare_exchange_weak(cur, id)) {
    }
}

int Worker::stepsCompleted() const { return d->steps.load(); }

// ---- model ----------------------------------------------------------------------------------

void Worker::loadModel(const QString& directory, const LoadSettings& settings) {
    const QString name = QDir(directory).dirName();
    Q_EMIT progress(tr("Loading model %1…").arg(name), 0, 0);
    d->cancelLoad = false;
    try {
        if (!QFileInfo(directory).isDir())
            throw kvsteer::Error("model directory " + ss(directory) + " does not exist");
        LoadOptions o;
        o.device = ss(settings.device);
        o.dtype = ss(settings.dtype);
        o.threads = settings.threads;
        o.maxPixels = settings.maxPixels;
        // Progress in MiB of weights mapped or converted (a 7B float32 widening takes a while);
        // reported at most every 1 % so the event queue is not flooded. Stop cancels here.
        int lastPercent = -1;
        o.progress = [this, name, &lastPercent](int64_t done, int64_t total) {
            const int percent = total > 0 ? int(100 * done / total) : 0;
            if (percent != lastPercent) {
                lastPercent = percent;
                Q_EMIT progress(tr("Loading model %1… %2 of %3").arg(name, QLocale().formattedDataSize(done), QLocale().formattedDataSize(total)),
                                int(done >> 20), int(std::max<int64_t>(total >> 20, 1)));
            }
            return !d->cancelLoad.load();
        };
        std::shared_ptr<Model> model;
        try {
            model = kvsteer::loadModel(ss(directory), o);
            kvsteer::warmUpEdits(*model);   // on a GPU: the first steered answer pays no kernel loading
        } catch (const LoadCancelled&) {
            Q_EMIT modelLoadCancelled(directory);
            Q_EMIT idle();
            return;
        }
        const bool hadVectors = d->vectors.has_value();
        d->model = model;
        d->session.reset();
        d->steered.reset();
        d->clearAttention();
        d->vectors.reset();
        d->vectorsInfo = VectorsInfo();
        if (hadVectors) Q_EMIT vectorsCleared();   // a vector file belongs to one model

        const ModelConfig& c = model->config();
        ModelInfo& m = d->info;
        m = ModelInfo();
        m.directory = directory;
        m.name = qs(c.name);
        m.family = qs(model->familyName());
        m.promptTemplate = qs(model->applyTemplate("{question}", model->hasVision()));   // a text-only family refuses an image
        m.dtype = qs(model->weightsDtype());
        m.device = settings.device;
        m.configHash = qs(c.configHash);
        m.threads = currentThreads();
        m.layers = c.text.numLayers;
        m.heads = c.text.numHeads;
        m.kvHeads = c.text.numKvHeads;
        m.headDim = c.text.headDim;
        m.hidden = c.text.hiddenSize;
        m.hasVision = model->hasVision();
        if (m.hasVision) {   // a text-only model's strip follows each prompt (tokenizePrompt)
            PreprocessedImage blank;
            const ImageLayout layout = defaultLayout(*model, &blank);
            m.gridRows = layout.gridHeight;
            m.gridCols = layout.gridWidth;
            m.cropWidth = blank.cropped.width;
            m.cropHeight = blank.cropped.height;
        }
        m.parameters = model->parameterCount();
        m.vocab = model->tokenizer().vocabSize();
        m.loadMs = model->loadMs();
        Q_EMIT modelLoaded(m);
    } catch (...) {
        Q_EMIT modelFailed(directory, describeFailure(tr("loading the model"), std::current_exception()));
        Q_EMIT idle();
        return;
    }
    // The image, if any, is preprocessed again for this model's processor. A text-only model sets
    // it aside (its prompts have none): it is kept, and shown again when a vision model is loaded.
    if (!d->image.empty() && !d->model->hasVision()) {
        Q_EMIT imageSetAside(tr("%1 is a text-only model: %2 is set aside until a vision model is loaded; the canvas shows the prompt's tokens.")
                                 .arg(d->info.name, d->imageName));
    } else if (!d->image.empty()) {
        try {
            const PreprocessedImage pre = d->model->preprocessImage(d->image);
            Q_EMIT imageReady(describeImage(d->imageId, d->imageName, d->image, pre, d->model.get()));
        } catch (...) {
            Q_EMIT imageFailed(d->imageId, d->imageName, describeFailure(tr("preparing the image"), std::current_exception()));
        }
    }
    if (!d->pendingBlob.isEmpty()) {
        const QByteArray blob = d->pendingBlob;
        d->pendingBlob.clear();
        setVectorsBlob(blob, d->pendingOrigin);
    }
    Q_EMIT idle();
}

// ---- image ----------------------------------------------------------------------------------

void Worker::setImage(quint64 id, const QByteArray& bytes, const QString& name) {
    try {
        if (d->model && !d->model->hasVision())
            throw kvsteer::Error(ss(d->info.name) + " is a text-only model: it takes no image (steer the prompt's tokens instead)");
        ImageU8 img = decodeImage(reinterpret_cast<const uint8_t*>(bytes.constData()), size_t(bytes.size()), ss(name));
        // Before a model is loaded the image is shown as it is: how it is resized and cropped is the
        // family's choice, made again by the model's own processor when the model arrives.
        PreprocessedImage pre;
        if (d->model) pre = d->model->preprocessImage(img);
        else pre.cropped = img;
        d->image = std::move(img);
        d->imageId = id;
        d->imageName = name;
        d->session.reset();   // the last image's snapshot is not needed again: free it now
        d->steered.reset();
        d->clearAttention();
        Q_EMIT imageReady(describeImage(id, name, d->image, pre, d->model.get()));
    } catch (...) {
        Q_EMIT imageFailed(id, name, describeFailure(tr("reading the image"), std::current_exception()));
    }
}

// ---- the token strip ---------------------------------------------------------------------------

void Worker::tokenizePrompt(quint64 id, const QString& prompt) {
    if (!d->model) return;
    try {
        const Prompt p = buildPrompt(*d->model, ss(prompt), false, nullptr);
        Q_EMIT promptTokens(id, prompt, stripPieces(d->model->tokenizer(), p.ids, p.span.length));
    } catch (...) {
        Q_EMIT promptTokensFailed(id, describeFailure(tr("reading the prompt"), std::current_exception()));
    }
}

// ---- runs -----------------------------------------------------------------------------------

void Worker::run(const RunRequest& req) {
    // A newer run (or Stop) asked this one to end: checked while queued, between prefill layers,
    // after the prefill and between decode steps.
    auto superseded = [&] { return req.id < d->cancelBelow.load(); };
    if (superseded()) {   // while queued
        RunFinished f;
        f.runId = req.id;
        f.cancelled = true;
        Q_EMIT runFinished(f);
        return;
    }
    d->steps = 0;
    d->lastRunId = req.id;
    if (!d->model) {
        Q_EMIT runFailed(req.id, tr("No model is loaded. Use File → Open Model Directory… to load a model (%1).")
                                    .arg(supportedFamilies().join(QStringLiteral(", "))));
        return;
    }
    if (d->image.empty() && d->model->hasVision()) {
        Q_EMIT runFailed(req.id, tr("No image is open. Open one with File → Open Image…, drop one on the canvas or paste it."));
        return;
    }
    const QString stage = tr("running");
    auto finishCancelled = [&] {
        RunFinished f;
        f.runId = req.id;
        f.cancelled = true;
        Q_EMIT idle();
        Q_EMIT runFinished(f);
    };
    try {
        const Model& model = *d->model;
        const Prompt prompt = buildPrompt(model, ss(req.prompt), false, model.hasVision() ? &d->image : nullptr);
        // The plan: exactly the painted map, the panel's settings, the held vectors. The panel
        // sets every choice, so no vector-file suggestion fills in (they were offered in the panel
        // when the file was imported): the file info passed is empty.
        const PlanOptions options = planOptions(req.plan, model.config().text.numLayers);
        const SteeringVectors* vectors = operatorNeedsVectors(*options.op) && d->vectors ? &*d->vectors : nullptr;
        const SteeringPlan plan =
            makePlan(options, vectors, SteeringFileInfo(), gridTensor(req.strength), prompt.span, model.config().text.numLayers);
        if (!d->session) d->session = std::make_unique<Session>(d->model);
        if (!d->session->holds(prompt)) {
            d->steered.reset();
            Q_EMIT progress(tr("Prefilling %1 prompt tokens…").arg(prompt.ids.size()), 0, 0);
        }
        d->clearAttention();
        const Tokenizer& tok = model.tokenizer();
        int budget = 0;
        bool started = false;

        SteeredRunCallbacks callbacks;
        // A newer run (or Stop) ends this one between prefill layers and decode steps.
        callbacks.stopRequested = superseded;
        callbacks.onStart = [&](const SteeredRunStart& start) {
            d->steered = start.steered;
            budget = start.maxNewTokens;
            started = true;
            Q_EMIT runStarted(describeStart(req.id, start, plan));
            // Cache statistics do not change while decoding: send them once now.
            if (d->heatmapSettings().metric != Metric::Attention) requestHeatmap();
            Q_EMIT progress(tr("Decoding…"), 0, budget);
        };
        callbacks.onStep = [&](const PairEvent& ev) {
            TokenPair pair;
            pair.runId = req.id;
            pair.step = ev.step;
            pair.unsteered = streamToken(ev.unsteered, tok);
            pair.steered = streamToken(ev.steered, tok);
            d->steps = ev.step + 1;
            Q_EMIT tokenPair(pair);
            if (ev.attention) keepStepAttention(req.id, ev, pair, prompt.span);
            Q_EMIT progress(tr("Decoding… %1 / %2").arg(ev.step + 1).arg(budget), ev.step + 1, budget);
        };
        GenerationOptions g = generationOptions(req.generation);
        g.captureAttention = true;
        const SteeredRunResult result = runSteered(*d->session, prompt, plan, g, callbacks);
        if (!started) {   // stopped during the prefill
            finishCancelled();
            return;
        }
        RunFinished f;
        f.runId = req.id;
        f.cancelled = result.cancelled;
        f.steps = d->steps.load();
        f.decodeMs = result.pair.decodeMs;
        f.unsteeredText = qs(result.pair.unsteered.text);
        f.steeredText = qs(result.pair.steered.text);
        Q_EMIT idle();
        Q_EMIT runFinished(f);
    } catch (...) {
        Q_EMIT idle();
        Q_EMIT runFailed(req.id, describeFailure(stage, std::current_exception()));
    }
}

} // namespace kvsteer::ui
