#include "analysis/Heatmaps.h"

#include "Error.h"
#include "cache/SpanCells.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>

namespace kvsteer {

namespace {

void requireSpan(const VisualSpan& span) {
    if (!span.valid()) throw Error("heatmaps: the cache holds no image (no visual span)");
}

// x: [H, N] per-head values -> the view's [rows, cols] (the grid's), one head or the mean.
at::Tensor toGrid(const at::Tensor& perHead, int head, const VisualSpan& span, size_t view) {
    if (head >= perHead.size(0)) throw Error("heatmaps: head " + std::to_string(head) + " is out of range");
    at::Tensor v = head < 0 ? perHead.mean(0) : perHead.select(0, head);
    return viewMap(span, v.to(at::kCPU).to(at::kFloat), view == kSpanGrid ? viewCount(span) - 1 : view).contiguous();
}

at::Tensor visual(const KVCache& cache, int layer, bool keys, int64_t row) {
    const VisualSpan& span = cache.visualSpan;
    return (keys ? cache.keys(layer) : cache.values(layer)).select(0, row).narrow(1, span.start, span.length).to(at::kFloat);
}

} // namespace

at::Tensor normHeatmaps(const KVCache& cache, bool keys, int head, int64_t row, size_t view) {
    requireSpan(cache.visualSpan);
    std::vector<at::Tensor> maps;
    for (int l = 0; l < cache.numLayers(); ++l) maps.push_back(toGrid(visual(cache, l, keys, row).norm(2, {2}), head, cache.visualSpan, view));
    return at::stack(maps);
}

at::Tensor deltaHeatmaps(const KVCache& base, const KVCache& steered, bool keys, int head, int64_t baseRow, int64_t steeredRow, size_t view) {
    requireSpan(base.visualSpan);
    std::vector<at::Tensor> maps;
    for (int l = 0; l < base.numLayers(); ++l) {
        at::Tensor d = visual(steered, l, keys, steeredRow) - visual(base, l, keys, baseRow);
        maps.push_back(toGrid(d.norm(2, {2}), head, base.visualSpan, view));
    }
    return at::stack(maps);
}

at::Tensor cosineHeatmaps(const KVCache& cache, const SteeringVectors& vectors, bool keys, int head, int64_t row, size_t view) {
    const VisualSpan& span = cache.visualSpan;
    requireSpan(span);
    std::vector<at::Tensor> maps;
    for (int l = 0; l < cache.numLayers(); ++l) {
        const at::Tensor entry = l < vectors.numLayers() ? (keys ? vectors.keys[l] : vectors.values[l]) : at::Tensor();
        if (!entry.defined()) {
            maps.push_back(toGrid(at::zeros({1, span.length}), -1, span, view));
            continue;
        }
        at::Tensor x = visual(cache, l, keys, row);                     // [H, N, D]
        at::Tensor d = entry.to(x.device()).to(at::kFloat);
        if (d.dim() == 2) d = d.unsqueeze(1);                          // [H, 1, D]
        at::Tensor cos = (x * d).sum(2) / (x.norm(2, {2}) * d.norm(2, {2}) + 1e-12);
        maps.push_back(toGrid(cos, head, span, view));
    }
    return at::stack(maps);
}

at::Tensor attentionHeatmaps(const std::vector<at::Tensor>& attention, const VisualSpan& span, int64_t kvHeads, int head, int64_t row,
                             size_t view) {
    requireSpan(span);
    std::vector<at::Tensor> maps;
    for (const at::Tensor& a : attention) {
        if (!a.defined()) throw Error("heatmaps: attention was not captured for every layer");
        at::Tensor w = a.select(0, row).narrow(1, span.start, span.length).to(at::kFloat);   // [H, N]
        const int64_t groups = w.size(0) / kvHeads;
        w = w.reshape({kvHeads, groups, span.length}).mean(1);                                // [H_kv, N]
        maps.push_back(toGrid(w, head, span, view));
    }
    return at::stack(maps);
}

at::Tensor runHeatmaps(HeatMetric metric, const KVCache& base, const KVCache& edited, bool steeredRow, const SteeringVectors* vectors,
                       const std::vector<at::Tensor>& attention, int64_t kvHeads, int head, size_t view) {
    const KVCache& chosen = steeredRow ? edited : base;
    switch (metric) {
    case HeatMetric::KeyNorm: return normHeatmaps(chosen, true, head, 0, view);
    case HeatMetric::ValueNorm: return normHeatmaps(chosen, false, head, 0, view);
    case HeatMetric::KeyDelta: return deltaHeatmaps(base, edited, true, head, 0, 0, view);
    case HeatMetric::ValueDelta: return deltaHeatmaps(base, edited, false, head, 0, 0, view);
    case HeatMetric::ValueCosine: return cosineHeatmaps(chosen, vectors ? *vectors : SteeringVectors(), false, head, 0, view);
    case HeatMetric::Attention:
        if (attention.empty()) return at::Tensor();
        return attentionHeatmaps(attention, base.visualSpan, kvHeads, head, 0, view);
    }
    return at::Tensor();
}

} // namespace kvsteer
