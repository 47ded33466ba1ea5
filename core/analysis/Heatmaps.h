#pragma once
// Heatmap statistics over the visual grid, per layer: what the studio shows beside the image.
// Every function returns [layers, grid_h, grid_w] float32 on CPU, cell (r, c) = visual token
// r * grid_w + c. `head` is a KV head index, or -1 for the mean over heads; attention of a KV
// head is the mean over the query heads that share it. A picture shown in views (LLaVA-NeXT)
// has one map per view: `view` picks one (cache/SpanCells.h: 0 the base view, ...); the default
// is the span's grid, the finest view, the one strength maps are painted on.
#include "analysis/HeatMetric.h"
#include "cache/KVCache.h"
#include "cache/SpanCells.h"
#include "steer/SteeringVectors.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace kvsteer {


// ‖K‖ or ‖V‖ at each visual position (batch row `row`).
at::Tensor normHeatmaps(const KVCache& cache, bool keys, int head, int64_t row = 0, size_t view = kSpanGrid);

// ‖steered − base‖ at each visual position (the edit a plan made).
at::Tensor deltaHeatmaps(const KVCache& base, const KVCache& steered, bool keys, int head, int64_t baseRow = 0, int64_t steeredRow = 0,
                         size_t view = kSpanGrid);

// Cosine of V (or K) with the steering direction of the layer (0 where the layer has none).
at::Tensor cosineHeatmaps(const KVCache& cache, const SteeringVectors& vectors, bool keys, int head, int64_t row = 0,
                          size_t view = kSpanGrid);

// Attention of the current decoding token to each visual token, from captured weights
// (per layer [B, H, S]); `kvHeads` groups query heads.
at::Tensor attentionHeatmaps(const std::vector<at::Tensor>& attention, const VisualSpan& span, int64_t kvHeads, int head,
                             int64_t row = 0, size_t view = kSpanGrid);

// One metric for a steered run, the way the studio shows it: `base` is the kept snapshot and
// `edited` the steered cache; `steeredRow` picks which of the two the per-cache metrics read.
// `attention` is that stream's captured attention (per layer [1, H, S]). `vectors` may be null
// (the cosine is then 0). Undefined when the metric is attention and nothing was captured yet.
at::Tensor runHeatmaps(HeatMetric metric, const KVCache& base, const KVCache& edited, bool steeredRow, const SteeringVectors* vectors,
                       const std::vector<at::Tensor>& attention, int64_t kvHeads, int head, size_t view = kSpanGrid);

} // namespace kvsteer
