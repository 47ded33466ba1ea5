#pragma once
// What a heatmap shows: one enum for the core and the studio (header only, no ATen, no Qt, so the
// studio's plain-Qt panels use it directly through kvsteer_core_words). Heatmaps.h computes them.
namespace kvsteer {

enum class HeatMetric { KeyNorm, ValueNorm, KeyDelta, ValueDelta, ValueCosine, Attention };
inline constexpr int kHeatMetricCount = int(HeatMetric::Attention) + 1;

} // namespace kvsteer
