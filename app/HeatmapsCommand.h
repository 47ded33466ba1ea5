#pragma once
// kvsteer heatmaps: the studio's per-layer maps over the image's grid, written to a file.

namespace kvsteer {

int commandHeatmaps(int argc, char** argv);

} // namespace kvsteer
