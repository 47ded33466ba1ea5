// The Worker's eval: the core's runEvalJob on the worker thread, a thin adapter. The request's
// plan is built exactly as a run builds it; each finished item and the summary go out as queued
// signals. Stop (cancelEvals) ends it after the current batch; the same folder continues it.
// Core (and ATen) first: Qt's `slots` keyword breaks ATen headers included after a Qt header.
#include "Error.h"
#include "eval/EvalJob.h"
#include "models/ModelRegistry.h"

#include <c10/core/GradMode.h>

#include "worker/CoreConversions.h"
#include "worker/WorkerState.h"

#include <QCryptographicHash>

namespace kvsteer::ui {

namespace {

// What the run is, for the folder's run.json: the plan, the painted map (when it is used), the
// vectors and the budget. A changed setting is another run, refused in the same folder.
std::string steeringHash(const EvalRequest& r, const QByteArray& vectors) {
    QCryptographicHash h(QCryptographicHash::Sha256);
    const PlanSettings& p = r.plan;
    h.addData(QStringLiteral("%1|%2|%3|%4|%5|%6|%7|%8|%9")
                  .arg(operatorText(p.op))
                  .arg(p.propagate)
                  .arg(ablateTargetText(p.ablateTarget))
                  .arg(p.ck)
                  .arg(p.cv)
                  .arg(p.layerFrom)
                  .arg(p.layerTo)
                  .arg(r.itemRegions)
                  .arg(r.maxNewTokens)
                  .toUtf8());
    for (int head : p.heads) h.addData(QByteArray::number(head) + ',');
    // Per-layer coefficients only when set, so a folder run with one value keeps its identity.
    for (const auto* list : {&p.ckByLayer, &p.cvByLayer}) {
        if (list->isEmpty()) continue;
        h.addData(QByteArrayLiteral("|by layer:"));
        for (double c : *list) h.addData(QByteArray::number(c, 'g', 17) + ',');
    }
    if (!r.itemRegions)
        h.addData(QByteArray(reinterpret_cast<const char*>(r.strength.values.constData()), r.strength.values.size() * int(sizeof(float))));
    h.addData(vectors);
    return h.result().toHex().left(16).toStdString();
}

EvalItemRow toRow(quint64 id, const EvalItemResult& r) {
    EvalItemRow row;
    row.evalId = id;
    row.id = qs(r.item->id);
    row.question = qs(r.item->question);
    row.image = qs(r.item->image);
    for (const std::string& a : r.item->answers) row.answers << qs(a);
    row.unsteeredText = qs(r.unsteered.text);
    row.steeredText = qs(r.steered.text);
    row.unsteeredCorrect = r.unsteeredScore.correct;
    row.steeredCorrect = r.steeredScore.correct;
    row.hasBox = r.item->box.has_value();
    if (row.hasBox)
        for (int i = 0; i < 4; ++i) row.box[i] = (*r.item->box)[size_t(i)];
    row.mask = qs(r.item->mask);
    return row;
}

EvalFinished toFinished(quint64 id, const nlohmann::ordered_json& s, const QString& outDir) {
    EvalFinished f;
    f.evalId = id;
    f.outDir = outDir;
    f.items = s.at("items").get<int>();
    f.metric = qs(s.at("metric").get<std::string>());
    for (auto it = s.at("unsteered").begin(); it != s.at("unsteered").end(); ++it) {
        const auto& d = s.at("difference").at(it.key());
        f.metricNames << qs(it.key());
        f.unsteered << it.value().get<double>();
        f.steered << s.at("steered").at(it.key()).get<double>();
        f.difference << d.at("value").get<double>();
        f.low << d.at("ci95")[0].get<double>();
        f.high << d.at("ci95")[1].get<double>();
    }
    f.changedFraction = s.at("changed_fraction").get<double>();
    f.mcnemarP = s.at("mcnemar_p").get<double>();
    f.itemsPerSecond = s.at("timings").at("items_per_s").get<double>();
    return f;
}

} // namespace

void Worker::cancelEvals() { d->evalStop = true; }

void Worker::runEval(const EvalRequest& req) {
    d->evalStop = false;
    if (!d->model) {
        Q_EMIT evalFailed(req.id, tr("No model is loaded. Use File → Open Model Directory… first."));
        return;
    }
    try {
        c10::NoGradGuard noGrad;
        const Model& model = *d->model;
        const EvalDataset dataset = loadEvalDataset(ss(req.dataset), "", false);
        EvalSteering steering;
        steering.plan = planOptions(req.plan, model.config().text.numLayers);
        steering.vectors = d->vectorsRequiredBy(*steering.plan.op);
        if (!req.itemRegions) steering.strength = gridTensor(req.strength);
        EvalOptions options;
        options.metric = parseEvalMetric(ss(req.metric));
        options.generation.maxNewTokens = req.maxNewTokens;
        // Painting replaces every item's own region: the items are evaluated without them.
        std::vector<EvalItem> painted;
        if (!req.itemRegions) {
            painted = dataset.items;
            for (EvalItem& item : painted) {
                item.box.reset();
                item.mask.clear();
            }
        }
        EvalJob job;
        job.outDir = ss(req.outDir);
        for (const EvalItem& item : req.itemRegions ? dataset.items : painted) job.items.push_back(&item);
        job.identity = runIdentity(dataset, model, steeringHash(req, d->vectorsInfo.blob), ss(req.metric), req.maxNewTokens,
                                   int64_t(job.items.size()));

        EvalJobCallbacks callbacks;
        int done = 0, total = 0;
        callbacks.onStart = [&](size_t all, size_t before) {
            total = int(all);
            done = int(before);
            Q_EMIT evalStarted({req.id, total, done});
            Q_EMIT progress(tr("Evaluating… %1 / %2").arg(done).arg(total), done, total);
        };
        callbacks.onItem = [&](const EvalItemResult& r) {
            Q_EMIT evalItem(toRow(req.id, r));
            ++done;
            Q_EMIT progress(tr("Evaluating… %1 / %2").arg(done).arg(total), done, total);
        };
        callbacks.stopRequested = [this] { return d->evalStop.load(); };
        const EvalJobResult result = runEvalJob(d->model, job, steering, options, callbacks);
        EvalFinished finished;
        if (result.stopped) {
            finished.evalId = req.id;
            finished.stopped = true;
            finished.items = done;
            finished.outDir = req.outDir;
        } else {
            finished = toFinished(req.id, result.summary, req.outDir);
        }
        Q_EMIT idle();
        Q_EMIT evalFinished(finished);
    } catch (...) {
        Q_EMIT idle();
        Q_EMIT evalFailed(req.id, describeFailure(tr("evaluating the dataset"), std::current_exception()));
    }
}

} // namespace kvsteer::ui
