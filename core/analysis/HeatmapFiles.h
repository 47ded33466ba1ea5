#pragma once
// Heatmaps ([layers, grid_h, grid_w] float32, see Heatmaps.h) written for other tools, the format
// chosen by the file's extension, each written atomically:
//   .npy   the array as is: numpy.load gives float32 (layers, grid_h, grid_w)
//   .csv   one row per cell: layer,row,col,value
//   .png   the layers as grayscale tiles, 8 to a row, each scaled to its own maximum (white),
//          `cellPixels` pixels per cell and a 2-pixel gap between tiles
#include "analysis/HeatMetric.h"

#include <ATen/core/Tensor.h>

#include <string>

namespace kvsteer {

void saveHeatmaps(const std::string& path, const at::Tensor& maps, int cellPixels = 8);
// Throws kvsteer::Error unless `path` ends in a format saveHeatmaps writes (checked before the work).
void requireHeatmapFormat(const std::string& path);

// A metric's name on the command line (key-norm, value-norm, key-delta, value-delta,
// value-cosine, attention) and back; parseHeatMetric throws kvsteer::Error listing the names.
std::string heatMetricName(HeatMetric metric);
HeatMetric parseHeatMetric(const std::string& name);

} // namespace kvsteer
