#pragma once
// Layer choices as people write them, one parser for the CLI, the studio and the vector files:
//   all                  every layer
//   early|middle|late    a third of the layers (by rounding i·n/3: 4 layers split 0 | 1-2 | 3)
//   A-B, A               a range, both ends included
// A list joins items with commas ("early,10-12"): for one plan the union of its items, for a
// sweep one setting per item.
#include <string>
#include <vector>

namespace kvsteer {

// One item of a layer choice: its label for people ("all", "early", "0-1") and its layers.
struct LayerRange {
    std::string label;
    std::vector<int> layers;   // empty = every layer
};

// Throws kvsteer::Error for an unknown word, a reversed range, a layer outside 0..numLayers-1 or
// a third the model's layers cannot fill.
LayerRange parseLayerRange(const std::string& item, int numLayers);
// The comma-separated items, each parsed alone (a sweep's settings).
std::vector<LayerRange> parseLayerRanges(const std::string& text, int numLayers);
// The union of the items' layers, ascending (one plan's layer set); every layer for "all".
std::vector<int> parseLayerSet(const std::string& text, int numLayers);
// The default rows of an atlas: all, early, middle, late (all alone below 3 layers).
std::vector<LayerRange> defaultLayerRanges(int numLayers);

} // namespace kvsteer
