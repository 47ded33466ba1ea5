// The core (and with it libtorch/ATen) comes first: Qt's `slots` keyword would break ATen
// headers included after a Qt header. Only the files of ui/worker/ include either.
#include "Error.h"
#include "Runtime.h"
#include "io/Image.h"
#include "models/ModelRegistry.h"
#include "analysis/Heatmaps.h"
#include "models/Prompt.h"
#include "generate/Session.h"
#include "steer/SideBySide.h"
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
    }
    return info;
}

// The model's grid and processed size for an image at its processor's own size (config image_size).
ImageLayout defaultLayout(const Model& model, PreprocessedImage* pre) {
    const int side = model.config().vision.imageSize;
    *pre = model.preprocessImage(ImageU8(side, side));
    return model.imageLayout(*pre);
}

} // namespace

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

void Worker::setHeatmapSettings(const HeatmapSettings& settings) {
    std::lock_guard<std::mutex> lock(d->heatmapMutex);
    d->heatmap = settings;
}

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
        } catch (const LoadCancelled&) {
            Q_EMIT modelLoadCancelled(directory);
            Q_EMIT idle();
            return;
        }
        const bool hadVectors = d->vectors.has_value();
        d->model = model;
        d->session.reset();
        d->steered.reset();
        d->attention.clear();
        d->vectors.reset();
        d->vectorsInfo = VectorsInfo();
        if (hadVectors) Q_EMIT vectorsCleared();   // a vector file belongs to one model

        const ModelConfig& c = model->config();
        ModelInfo& m = d->info;
        m = ModelInfo();
        m.directory = directory;
        m.name = qs(c.name);
        m.family = qs(model->familyName());
        m.promptTemplate = qs(model->applyTemplate("{question}", true));
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
        d->steered.reset();
        d->attention.clear();
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
        c10::NoGradGuard noGrad;
        const Model& model = *d->model;
        RunStarted started;
        started.runId = req.id;

        // Prefill once per (model, image, prompt).
        if (!d->session || d->prefillImageId != d->imageId || d->prefillPrompt != req.prompt) {
            d->session.reset();
            d->steered.reset();
            Prompt prompt = buildPrompt(model, ss(req.prompt), false, model.hasVision() ? &d->image : nullptr);
            Q_EMIT progress(tr("Prefilling %1 prompt tokens…").arg(prompt.ids.size()), 0, 0);
            const auto t0 = std::chrono::steady_clock::now();
            auto session = std::make_unique<Session>(d->model);
            // Stop asks between layers: a superseded run (a new image, prompt or stroke, or Stop)
            // gives the thread back within one layer instead of after the whole prompt.
            if (!session->prefill(prompt, std::max(64, req.generation.maxNewTokens + 8), superseded)) {
                finishCancelled();
                return;
            }
            started.prefillMs = msSince(t0);
            started.prefilled = true;
            d->session = std::move(session);
            d->prefillImageId = d->imageId;
            d->prefillPrompt = req.prompt;
        }
        const Session& session = *d->session;
        started.promptTokens = int(session.prompt().ids.size());
        const VisualSpan span = session.snapshot().visualSpan;
        if (superseded()) {
            finishCancelled();
            return;
        }

        // The plan: exactly the painted map, the panel's settings, the held vectors. The panel
        // sets every choice, so no vector-file suggestion fills in (they were offered in the panel
        // when the file was imported): the file info passed is empty.
        PlanOptions options;
        options.op = ss(req.plan.op);
        options.ck = {req.plan.ck};
        options.cv = {req.plan.cv};
        options.layers = layerRange(req.plan, model.config().text.numLayers);
        options.heads.assign(req.plan.heads.begin(), req.plan.heads.end());
        options.propagate = req.plan.propagate;
        options.ablateTo = ss(req.plan.ablateTarget);
        const bool needsVectors = operatorNeedsVectors(parseOperator(options.op));
        const SteeringVectors* vectors = needsVectors && d->vectors ? &*d->vectors : nullptr;
        const SteeringPlan plan = makePlan(options, vectors, SteeringFileInfo(), gridTensor(req.strength), span, model.config().text.numLayers);

        const auto t1 = std::chrono::steady_clock::now();
        if (needsVectors && !d->vectors) {
            SteeredCache none;
            none.cache = session.snapshot().clone();
            d->steered = std::move(none);
            started.note = tr("No steering vectors yet: compute or import them in the Steering panel. "
                              "Until then both streams are the unsteered model.");
        } else if (req.strength.isZero() && plan.op != SteeringOperator::Spotlight) {
            d->steered = applyPlan(session, plan);
            started.note = span.isTokenStrip() ? tr("Nothing is painted: paint the prompt's tokens (or Paint → Last Token) to choose where to steer.")
                                               : tr("Nothing is painted: paint over the image to choose where to steer.");
        } else {
            d->steered = applyPlan(session, plan);
        }
        started.editMs = msSince(t1);
        started.appliedStrength = gridFromTensor(plan.strength);
        started.appliedLayers = QVector<int>(plan.layers.begin(), plan.layers.end());
        d->attention.clear();
        d->attentionStep = -1;
        GenerationOptions g;
        g.maxNewTokens = req.generation.maxNewTokens;
        g.stopAtEos = req.generation.stopAtEos;
        // The decoder has a fixed context: never ask for more tokens than fit after the prompt.
        const int fit = newTokensThatFit(model.config().text, int64_t(session.prompt().ids.size()), g.maxNewTokens);
        if (fit < g.maxNewTokens) {
            g.maxNewTokens = std::max(1, fit);
            started.note += (started.note.isEmpty() ? QString() : QStringLiteral(" ")) +
                            tr("Max tokens is limited to %1 here: the prompt fills %2 of the model's %3-token context.")
                                .arg(g.maxNewTokens)
                                .arg(session.prompt().ids.size())
                                .arg(model.config().text.maxPositionEmbeddings);
        }
        g.captureAttention = true;
        if (req.generation.sample) {
            g.sampling.temperature = req.generation.temperature;
            g.sampling.topP = req.generation.topP;
            g.sampling.topK = req.generation.topK;
        }
        g.sampling.seed = req.generation.seed;

        Q_EMIT runStarted(started);

        {   // cache statistics do not change while decoding: send them once now
            const HeatmapSettings hs = d->heatmapSettings();
            if (hs.metric != Metric::Attention) requestHeatmap();
        }

        Q_EMIT progress(tr("Decoding…"), 0, g.maxNewTokens);
        std::atomic<bool> stop{false};
        const Tokenizer& tok = model.tokenizer();
        const int64_t kvHeads = model.config().text.numKvHeads;
        const auto onStep = [&](const PairEvent& ev) {
            TokenPair pair;
            pair.runId = req.id;
            pair.step = ev.step;
            pair.unsteered = streamToken(ev.unsteered, tok);
            pair.steered = streamToken(ev.steered, tok);
            d->steps = ev.step + 1;
            if (superseded()) stop = true;
            Q_EMIT tokenPair(pair);
            if (ev.attention) {
                d->attention.clear();
                for (const at::Tensor& a : *ev.attention) d->attention.push_back(a.to(at::kCPU));   // a fresh tensor every step
                d->attentionStep = ev.step;
                d->attentionToken[0] = pair.unsteered.valid() ? readablePiece(tok, pair.unsteered.id) : QString();
                d->attentionToken[1] = pair.steered.valid() ? readablePiece(tok, pair.steered.id) : QString();
                const HeatmapSettings hs = d->heatmapSettings();
                if (hs.metric == Metric::Attention) {
                    HeatmapData h;
                    h.runId = req.id;
                    h.metric = hs.metric;
                    h.head = hs.head;
                    h.steeredRow = hs.steeredRow;
                    h.step = ev.step;
                    h.token = d->attentionToken[hs.steeredRow ? 1 : 0];
                    const at::Tensor maps = attentionHeatmaps(d->attention, span, kvHeads, hs.head, hs.steeredRow ? 1 : 0);
                    h.layers = int(maps.size(0));
                    h.rows = int(maps.size(1));
                    h.cols = int(maps.size(2));
                    h.values = toVector(maps);
                    Q_EMIT heatmapReady(h);
                }
            }
            Q_EMIT progress(tr("Decoding… %1 / %2").arg(ev.step + 1).arg(g.maxNewTokens), ev.step + 1, g.maxNewTokens);
        };
        const GenerationPair result = decodeSideBySide(session, *d->steered, g, onStep, &stop);

        RunFinished f;
        f.runId = req.id;
        f.cancelled = result.steered.cancelled || result.unsteered.cancelled;
        f.steps = d->steps.load();
        f.decodeMs = result.decodeMs;
        f.unsteeredText = qs(result.unsteered.text);
        f.steeredText = qs(result.steered.text);
        Q_EMIT idle();
        Q_EMIT runFinished(f);
    } catch (...) {
        Q_EMIT idle();
        Q_EMIT runFailed(req.id, describeFailure(stage, std::current_exception()));
    }
}

void Worker::requestHeatmap() {
    const HeatmapSettings hs = d->heatmapSettings();
    if (!d->session || !d->steered) return;
    try {
        c10::NoGradGuard noGrad;
        const KVCache& base = d->session->snapshot();
        const KVCache& edited = d->steered->cache;
        HeatmapData h;
        h.runId = d->lastRunId;
        h.metric = hs.metric;
        h.head = hs.head;
        h.steeredRow = hs.steeredRow;
        const at::Tensor maps = runHeatmaps(HeatMetric(int(hs.metric)), base, edited, hs.steeredRow, d->vectors ? &*d->vectors : nullptr,
                                            d->attention, d->model->config().text.numKvHeads, hs.head);
        if (!maps.defined()) return;   // attention before the first decode step
        if (hs.metric == Metric::Attention) {
            h.step = d->attentionStep;
            h.token = d->attentionToken[hs.steeredRow ? 1 : 0];
        }
        h.layers = int(maps.size(0));
        h.rows = int(maps.size(1));
        h.cols = int(maps.size(2));
        h.values = toVector(maps);
        Q_EMIT heatmapReady(h);
    } catch (...) {
        Q_EMIT heatmapFailed(describeFailure(tr("computing the heatmap"), std::current_exception()));
    }
}

} // namespace kvsteer::ui
