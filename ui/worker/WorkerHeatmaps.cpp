// The Worker's heatmaps: the cache statistics of the last run (requestHeatmap) and the attention
// of each decode step as it lands (keepStepAttention, called by Worker::run). The core comes
// before any Qt header, as in Worker.cpp.
#include "analysis/Heatmaps.h"
#include "cache/SpanCells.h"
#include "steer/SideBySide.h"

#include <c10/core/GradMode.h>

#include <mutex>

#include "worker/CoreConversions.h"
#include "worker/WorkerState.h"

namespace kvsteer::ui {

namespace {

// The core's view index for the studio's choice: -1, or a view the span does not have (a plain
// grid), is the span's grid.
size_t spanView(const VisualSpan& span, int view) { return view >= 0 && size_t(view) < viewCount(span) ? size_t(view) : kSpanGrid; }

void setView(HeatmapData& h, const VisualSpan& span, int view) {
    const size_t v = spanView(span, view);
    h.view = v == kSpanGrid || v + 1 == viewCount(span) ? -1 : int(v);
    if (span.hasViews()) h.viewName = qs(viewName(span, v == kSpanGrid ? viewCount(span) - 1 : v));
}

void setMaps(HeatmapData& h, const at::Tensor& maps) {
    h.layers = int(maps.size(0));
    h.rows = int(maps.size(1));
    h.cols = int(maps.size(2));
    h.values = toVector(maps);
}

HeatmapData heatmapFor(quint64 runId, const HeatmapSettings& hs) {
    HeatmapData h;
    h.runId = runId;
    h.metric = hs.metric;
    h.head = hs.head;
    h.steeredRow = hs.steeredRow;
    return h;
}

} // namespace

void Worker::setHeatmapSettings(const HeatmapSettings& settings) {
    std::lock_guard<std::mutex> lock(d->heatmapMutex);
    d->heatmap = settings;
}

void Worker::keepStepAttention(quint64 runId, const PairEvent& ev, const TokenPair& pair, const VisualSpan& span) {
    // Each stream's attention at its last step: a stream that ended has left the batch (and keeps
    // the attention of its last token).
    const Tokenizer& tok = d->model->tokenizer();
    const QString tokens[2] = {pair.unsteered.valid() ? readablePiece(tok, pair.unsteered.id) : QString(),
                               pair.steered.valid() ? readablePiece(tok, pair.steered.id) : QString()};
    for (size_t i = 0; i < ev.rows->size(); ++i) {
        const int64_t stream = (*ev.rows)[i];
        if ((stream == 0 ? ev.unsteered : ev.steered).id < 0) continue;
        StreamAttention& a = d->attention[stream];
        a.layers.clear();
        for (const at::Tensor& l : *ev.attention) a.layers.push_back(l.narrow(0, int64_t(i), 1).to(at::kCPU, true).clone());
        a.step = ev.step;
        a.token = tokens[stream];
    }
    const HeatmapSettings hs = d->heatmapSettings();
    const StreamAttention& shown = d->attention[hs.steeredRow ? 1 : 0];
    if (hs.metric != Metric::Attention || shown.step != ev.step) return;
    HeatmapData h = heatmapFor(runId, hs);
    h.step = ev.step;
    h.token = shown.token;
    setView(h, span, hs.view);
    setMaps(h, attentionHeatmaps(shown.layers, span, d->model->config().text.numKvHeads, hs.head, 0, spanView(span, hs.view)));
    Q_EMIT heatmapReady(h);
}

void Worker::requestHeatmap() {
    const HeatmapSettings hs = d->heatmapSettings();
    if (!d->session || !d->steered) return;
    try {
        c10::NoGradGuard noGrad;
        const KVCache& base = d->session->snapshot();
        const KVCache& edited = d->steered->cache;
        HeatmapData h = heatmapFor(d->lastRunId, hs);
        const StreamAttention& attention = d->attention[hs.steeredRow ? 1 : 0];
        setView(h, base.visualSpan, hs.view);
        const at::Tensor maps = runHeatmaps(hs.metric, base, edited, hs.steeredRow, d->vectors ? &*d->vectors : nullptr,
                                            attention.layers, d->model->config().text.numKvHeads, hs.head, spanView(base.visualSpan, hs.view));
        if (!maps.defined()) return;   // attention before the first decode step
        if (hs.metric == Metric::Attention) {
            h.step = attention.step;
            h.token = attention.token;
        }
        setMaps(h, maps);
        Q_EMIT heatmapReady(h);
    } catch (...) {
        Q_EMIT heatmapFailed(describeFailure(tr("computing the heatmap"), std::current_exception()));
    }
}

} // namespace kvsteer::ui
