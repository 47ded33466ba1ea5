// The Worker's atlas: the core's runAtlas on the worker thread, a thin adapter. The request's
// plan is built exactly as a run builds it; each finished cell goes out as a queued signal.
// Core (and ATen) first: Qt's `slots` keyword breaks ATen headers included after a Qt header.
#include "Error.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "generate/Session.h"
#include "steer/Atlas.h"
#include "steer/PlanOptions.h"
#include "steer/SteeredRun.h"
#include "steer/SteeringPlan.h"

#include <c10/core/GradMode.h>

#include <chrono>

#include "worker/CoreConversions.h"
#include "worker/WorkerState.h"

namespace kvsteer::ui {

namespace {

AtlasOutcome outcomeOf(kvsteer::AtlasOutcome o) {
    switch (o) {
    case kvsteer::AtlasOutcome::Same: return AtlasOutcome::Same;
    case kvsteer::AtlasOutcome::Different: return AtlasOutcome::Different;
    case kvsteer::AtlasOutcome::Degenerate: return AtlasOutcome::Degenerate;
    }
    return AtlasOutcome::Pending;
}

AtlasCellResult toResult(quint64 id, const AtlasCell& c, int columns) {
    AtlasCellResult r;
    r.atlasId = id;
    r.index = c.index;
    r.row = c.index / columns;
    r.column = c.index % columns;
    r.layers = qs(c.setting.layers.label);
    r.layerIds = QVector<int>(c.setting.layers.layers.begin(), c.setting.layers.layers.end());
    r.ck = c.setting.ck;
    r.cv = c.setting.cv;
    r.outcome = outcomeOf(c.outcome);
    r.text = qs(c.generation.text);
    r.signalsText = qs(describeSignals(c.degeneration, c.generation));
    r.tokens = int(c.generation.ids.size());
    r.stoppedAtEos = c.generation.stoppedAtEos;
    return r;
}

} // namespace

void Worker::cancelAtlasesBefore(quint64 id) {
    quint64 cur = d->atlasCancelBelow.load();
    while (cur < id && !d->atlasCancelBelow.compare_exchange_weak(cur, id)) {
    }
    if (d->atlasRunning.load() < id) d->atlasStop = true;
}

void Worker::runAtlas(const AtlasRequest& req) {
    // The stop flag is cleared before the id is published, so a cancel between the two is seen by
    // the check after them (see cancelAtlasesBefore).
    d->atlasStop = false;
    d->atlasRunning = req.id;
    AtlasFinished done;
    done.atlasId = req.id;
    if (req.id < d->atlasCancelBelow.load()) {
        done.cancelled = true;
        Q_EMIT atlasFinished(done);
        return;
    }
    // A vision model needs an image; a text-only model steers its prompt's token strip.
    if (!d->model || (d->image.empty() && d->model->hasVision())) {
        Q_EMIT atlasFailed(req.id, tr("The atlas needs a model and an image: open both, paint where to steer, and run it again."));
        return;
    }
    try {
        c10::NoGradGuard noGrad;
        const auto t0 = std::chrono::steady_clock::now();
        const Model& model = *d->model;
        const int layers = model.config().text.numLayers;
        const Prompt prompt = buildPrompt(model, ss(req.prompt), false, model.hasVision() ? &d->image : nullptr);
        if (!d->session) d->session = std::make_unique<Session>(d->model);
        if (!d->session->holds(prompt)) {
            d->steered.reset();
            Q_EMIT progress(tr("Prefilling…"), 0, 0);
        }
        if (!ensurePrefilled(*d->session, prompt, req.maxNewTokens, [this] { return d->atlasStop.load(); })) {
            done.cancelled = true;
            Q_EMIT idle();
            Q_EMIT atlasFinished(done);
            return;
        }
        const Session& session = *d->session;
        PlanOptions options = planOptions(req.plan, layers);
        options.layers = std::vector<int>();   // each setting chooses its layers
        const SteeringPlan base =
            makePlan(options, d->vectorsRequiredBy(*options.op), SteeringFileInfo(), gridTensor(req.strength), prompt.span, layers);

        std::vector<LayerRange> rows;
        for (const QString& r : req.layerRanges) rows.push_back(parseLayerRange(ss(r.trimmed()), layers));
        if (rows.empty()) rows = defaultLayerRanges(layers);
        std::vector<double> strengths(req.strengths.begin(), req.strengths.end());
        if (strengths.empty()) {   // around the panel's coefficient
            const QVector<double> panel = atlasSetsValues(base) ? req.plan.cvValues() : req.plan.ckValues();   // one, or one per layer
            double c = 0;
            for (double v : panel) c = std::max(c, std::abs(v));
            strengths = logSpaced(c > 0 ? c / 4 : 1, c > 0 ? c * 4 : 16, 5);
        }
        const std::vector<AtlasSetting> settings = atlasGrid(base, rows, strengths);

        AtlasStarted started;
        started.atlasId = req.id;
        for (const LayerRange& r : rows) started.layerLabels << qs(r.label);
        started.strengths = QVector<double>(strengths.begin(), strengths.end());
        started.setsKeys = atlasSetsKeys(base);
        started.setsValues = atlasSetsValues(base);
        AtlasOptions o;
        o.maxNewTokens = newTokensThatFit(model.config().text, int64_t(session.prompt().ids.size()), std::max(1, req.maxNewTokens));
        o.batchRows = req.batchRows;
        const int columns = int(strengths.size());
        int finished = 0;
        const auto onCell = [&](const AtlasCell& cell) {
            Q_EMIT atlasCell(toResult(req.id, cell, columns));
            ++finished;
            Q_EMIT progress(tr("Atlas… %1 / %2").arg(finished).arg(settings.size()), finished, int(settings.size()));
        };
        const auto onUnsteered = [&](const Generation& g) {
            started.unsteeredText = qs(g.text);
            Q_EMIT atlasStarted(started);
        };
        Q_EMIT progress(tr("Atlas…"), 0, int(settings.size()));
        const AtlasResult result = kvsteer::runAtlas(session, base, settings, o, onCell, &d->atlasStop, onUnsteered);
        done.cancelled = result.cancelled;
        done.cells = int(result.cells.size());
        done.ms = msSince(t0);
        Q_EMIT idle();
        Q_EMIT atlasFinished(done);
    } catch (...) {
        Q_EMIT idle();
        Q_EMIT atlasFailed(req.id, describeFailure(tr("running the atlas"), std::current_exception()));
    }
}

} // namespace kvsteer::ui
