// The core (and with it libtorch/ATen) comes first: Qt's `slots` keyword would break ATen
// headers included after a Qt header. This is the only ui/ file that includes either.
#include "Error.h"
#include "Runtime.h"
#include "io/Image.h"
#include "models/llava/LlavaModel.h"
#include "analysis/Heatmaps.h"
#include "generate/Prompt.h"
#include "generate/Session.h"
#include "steer/SideBySide.h"
#include "steer/Mask.h"
#include "steer/PlanOptions.h"
#include "steer/Recipes.h"
#include "steer/SteeringPlan.h"
#include "steer/SteeringVectors.h"

#include <ATen/ops/from_blob.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/topk.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>

#include "Worker.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLocale>
#include <QJsonObject>
#include <QTemporaryDir>

namespace kvsteer::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }
std::string ss(const QString& s) { return s.toStdString(); }

double msSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Readable text for anything the core or libtorch can throw while doing `what`.
QString describeFailure(const QString& what, const std::exception_ptr& error) {
    const QString oom = QStringLiteral(
        "Out of memory while %1.\n\nClose other programs, load the model with a 16-bit dtype "
        "(Edit → Preferences), or lower “Max tokens”.")
                            .arg(what);
    try {
        std::rethrow_exception(error);
    } catch (const kvsteer::Error& e) {
        return qs(e.what());
    } catch (const std::bad_alloc&) {
        return oom;
    } catch (const c10::Error& e) {
        const QString msg = qs(e.what_without_backtrace());
        if (msg.contains(QLatin1String("out of memory"), Qt::CaseInsensitive) ||
            msg.contains(QLatin1String("can't allocate memory"), Qt::CaseInsensitive))
            return oom;
        return QStringLiteral("libtorch failed while %1:\n%2").arg(what, msg.section(QLatin1Char('\n'), 0, 2));
    } catch (const std::exception& e) {
        return QStringLiteral("Failed while %1:\n%2").arg(what, qs(e.what()));
    } catch (...) {
        return QStringLiteral("Unknown failure while %1.").arg(what);
    }
}

at::Tensor gridTensor(const StrengthGrid& g) {
    return at::from_blob(const_cast<float*>(g.values.constData()), {g.rows, g.cols}, at::TensorOptions().dtype(at::kFloat))
        .clone();
}

StrengthGrid gridFromTensor(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kCPU).to(at::kFloat).contiguous();
    StrengthGrid g(int(c.size(0)), int(c.size(1)));
    std::copy(c.data_ptr<float>(), c.data_ptr<float>() + g.size(), g.values.begin());
    return g;
}

QVector<float> toVector(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kCPU).to(at::kFloat).contiguous();
    QVector<float> v(int(c.numel()));
    std::copy(c.data_ptr<float>(), c.data_ptr<float>() + c.numel(), v.begin());
    return v;
}

QImage toQImage(const ImageU8& img) {
    QImage out(img.width, img.height, QImage::Format_RGB888);
    for (int y = 0; y < img.height; ++y)
        std::memcpy(out.scanLine(y), img.rgb.data() + size_t(y) * img.width * 3, size_t(img.width) * 3);
    return out;
}

// A token piece as a person reads it: "▁blue" → " blue", "<0x0A>" → "↵".
QString readablePiece(const Tokenizer& tok, int64_t id) {
    QString p = qs(tok.piece(id));
    if (p.size() == 6 && p.startsWith(QLatin1String("<0x")) && p.endsWith(QLatin1Char('>'))) {
        bool ok = false;
        const int byte = p.mid(3, 2).toInt(&ok, 16);
        if (ok && byte == 0x0A) return QStringLiteral("↵");
        if (ok && byte >= 0x20 && byte < 0x7F) return QString(QChar(byte));
        return p;
    }
    p.replace(QChar(0x2581), QLatin1Char(' '));
    return p;
}

std::vector<int> layerRange(const PlanSettings& p, int layers) {
    const int from = std::clamp(p.layerFrom, 0, layers - 1);
    const int to = p.layerTo < 0 ? layers - 1 : std::clamp(p.layerTo, 0, layers - 1);
    std::vector<int> r;
    for (int l = from; l <= to; ++l) r.push_back(l);
    return r;
}

} // namespace

struct Worker::State {
    std::shared_ptr<LlavaModel> model;
    ModelInfo info;

    quint64 imageId = 0;
    QString imageName;
    ImageU8 image;

    std::unique_ptr<Session> session;
    quint64 prefillImageId = 0;
    QString prefillPrompt;

    std::optional<SteeredCache> steered;                 // the last run's edited cache
    std::vector<at::Tensor> attention;                   // the last step's attention, [2, H, S] per layer
    int attentionStep = -1;
    QString attentionToken[2];                           // the token each row produced at that step
    quint64 lastRunId = 0;

    std::optional<SteeringVectors> vectors;
    SteeringFileInfo vectorsFile;
    VectorsInfo vectorsInfo;
    QByteArray pendingBlob;                              // vectors that arrived before a model
    QString pendingOrigin;

    QTemporaryDir temp;
    std::atomic<quint64> cancelBelow{0};
    std::atomic<bool> cancelLoad{false};
    std::atomic<int> steps{0};
    mutable std::mutex heatmapMutex;
    HeatmapSettings heatmap;

    HeatmapSettings heatmapSettings() const {
        std::lock_guard<std::mutex> lock(heatmapMutex);
        return heatmap;
    }
};

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
        std::shared_ptr<LlavaModel> model;
        try {
            model = LlavaModel::load(ss(directory), o);
        } catch (const LoadCancelled&) {
            Q_EMIT modelLoadCancelled(directory);
            Q_EMIT idle();
            return;
        }
        if (!model->hasVision())
            throw kvsteer::Error(ss(directory) + " holds a text-only model; the studio needs a LLaVA model with a vision tower");
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
        m.dtype = qs(model->weightsDtype());
        m.device = settings.device;
        m.configHash = qs(c.configHash);
        m.threads = currentThreads();
        m.layers = c.text.numLayers;
        m.heads = c.text.numHeads;
        m.kvHeads = c.text.numKvHeads;
        m.headDim = c.text.headDim;
        m.hidden = c.text.hiddenSize;
        m.gridRows = m.gridCols = c.vision.gridSize();
        m.cropWidth = model->imageConfig().cropWidth;
        m.cropHeight = model->imageConfig().cropHeight;
        m.parameters = model->parameterCount();
        m.vocab = model->tokenizer().vocabSize();
        m.loadMs = model->loadMs();
        Q_EMIT modelLoaded(m);
    } catch (...) {
        Q_EMIT modelFailed(directory, describeFailure(tr("loading the model"), std::current_exception()));
        Q_EMIT idle();
        return;
    }
    // The image, if any, is preprocessed again for this model's processor.
    if (!d->image.empty()) {
        try {
            const PreprocessedImage pre = clipPreprocess(d->image, d->model->imageConfig());
            ImageInfo info;
            info.id = d->imageId;
            info.name = d->imageName;
            info.crop = toQImage(pre.cropped);
            info.originalWidth = d->image.width;
            info.originalHeight = d->image.height;
            Q_EMIT imageReady(info);
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
        ImageU8 img = decodeImage(reinterpret_cast<const uint8_t*>(bytes.constData()), size_t(bytes.size()), ss(name));
        const ClipPreprocessConfig cfg = d->model ? d->model->imageConfig() : ClipPreprocessConfig();
        const PreprocessedImage pre = clipPreprocess(img, cfg);
        d->image = std::move(img);
        d->imageId = id;
        d->imageName = name;
        d->steered.reset();
        d->attention.clear();
        ImageInfo info;
        info.id = id;
        info.name = name;
        info.crop = toQImage(pre.cropped);
        info.originalWidth = d->image.width;
        info.originalHeight = d->image.height;
        Q_EMIT imageReady(info);
    } catch (...) {
        Q_EMIT imageFailed(id, name, describeFailure(tr("reading the image"), std::current_exception()));
    }
}

// ---- runs -----------------------------------------------------------------------------------

namespace {

StreamToken streamToken(const TokenEvent& ev, const Tokenizer& tok) {
    StreamToken t;
    t.id = ev.id;
    if (ev.id < 0) return t;
    t.text = qs(ev.text);
    t.eos = ev.eos;
    if (ev.logits && ev.logits->defined()) {
        const at::Tensor probs = at::softmax(ev.logits->to(at::kCPU).to(at::kFloat), -1);
        const auto top = at::topk(probs, std::min<int64_t>(5, probs.size(0)));
        const at::Tensor values = std::get<0>(top).contiguous(), ids = std::get<1>(top).contiguous();
        for (int64_t i = 0; i < ids.numel(); ++i) {
            Alternative a;
            a.id = ids.data_ptr<int64_t>()[i];
            a.probability = values.data_ptr<float>()[i];
            a.text = a.id < tok.vocabSize() ? readablePiece(tok, a.id) : QStringLiteral("⟨%1⟩").arg(a.id);
            t.top.push_back(a);
        }
    }
    return t;
}

} // namespace

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
        Q_EMIT runFailed(req.id, tr("No model is loaded. Use File → Open Model Directory… to load a LLaVA model."));
        return;
    }
    if (d->image.empty()) {
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
        const LlavaModel& model = *d->model;
        RunStarted started;
        started.runId = req.id;

        // Prefill once per (model, image, prompt).
        if (!d->session || d->prefillImageId != d->imageId || d->prefillPrompt != req.prompt) {
            d->session.reset();
            d->steered.reset();
            Prompt prompt = buildPrompt(model, ss(req.prompt), false, &d->image);
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
            started.note = tr("Nothing is painted: paint over the image to choose where to steer.");
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
                for (const at::Tensor& a : *ev.attention) d->attention.push_back(a.to(at::kCPU).clone());
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

// ---- steering vectors -----------------------------------------------------------------------

namespace {

VectorsInfo describeVectors(const SteeringVectors& v, const SteeringFileInfo& info) {
    VectorsInfo out;
    out.recipe = qs(info.recipe);
    out.keySpace = qs(keySpaceName(v.keySpace));
    out.perPosition = v.perPosition();
    for (int l = 0; l < v.numLayers(); ++l) out.layersWithVectors += v.hasLayer(l) ? 1 : 0;
    out.modelName = qs(info.modelName);
    out.suggestedOperator = qs(info.operatorName);
    for (double c : info.ck) out.suggestedCk.push_back(c);
    for (double c : info.cv) out.suggestedCv.push_back(c);
    for (int l : info.layers) out.suggestedLayers.push_back(l);
    if (v.mask.defined() && v.mask.dim() == 2) {
        out.mask = gridFromTensor(v.mask);
        out.hasMask = true;
    }
    return out;
}

} // namespace

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
        Q_EMIT vectorsReady(holdVectors(std::move(v), info, f.readAll(), QFileInfo(path).fileName(), true));
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
        info.operatorName = ss(plan.op);
        info.ck = {plan.ck};
        info.cv = {plan.cv};
        info.layers = layerRange(plan, d->model->config().text.numLayers);
        info.headMask.clear();
        if (!plan.heads.isEmpty()) {
            info.headMask.assign(size_t(d->model->config().text.numLayers), {});
            for (int l : info.layers) info.headMask[size_t(l)] = std::vector<int>(plan.heads.begin(), plan.heads.end());
        }
        if (info.recipe.empty()) info.recipe = "imported";
        if (info.promptTemplate.empty()) info.promptTemplate = applyChatTemplate("{question}", true);
        info.version = KVSTEER_VERSION;
        saveSteeringFile(ss(path), v, info);
        Q_EMIT vectorsExported(path);
    } catch (...) {
        Q_EMIT vectorsExportFailed(path, describeFailure(tr("writing %1").arg(path), std::current_exception()));
    }
}

void Worker::exportMask(const QString& path, const StrengthGrid& strength) {
    try {
        const int cell = std::max(1, (d->model ? d->info.cropWidth : 336) / std::max(1, strength.cols));
        saveMaskPng(ss(path), gridTensor(strength), cell);
        Q_EMIT maskExported(path);
    } catch (...) {
        Q_EMIT maskExportFailed(path, describeFailure(tr("writing %1").arg(path), std::current_exception()));
    }
}

void Worker::loadMask(const QString& spec) {
    try {
        const int rows = d->model ? d->info.gridRows : 24, cols = d->model ? d->info.gridCols : 24;
        const at::Tensor m = kvsteer::loadMask(ss(spec), rows, cols);
        Q_EMIT maskLoaded(gridFromTensor(m), spec);
    } catch (...) {
        Q_EMIT maskLoadFailed(spec, describeFailure(tr("reading the mask %1").arg(spec), std::current_exception()));
    }
}

} // namespace kvsteer::ui
