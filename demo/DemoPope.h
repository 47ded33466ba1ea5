#pragma once
// A POPE-style dataset on ShapeWorld scenes, for `kvsteer eval` without any download: object
// questions in the form the demo model was trained on ("Is there a red circle?"), balanced yes/no,
// the truth read from the scene. Each image (a 3-shape evaluation scene, never trained on) gets
// one "yes" per shape and as many "no"s, the negatives drawn the three POPE ways:
//   random       an absent colour+kind combination, uniformly
//   popular      the absent combination that is most frequent among all the set's shapes
//   adversarial  an absent combination sharing the colour or the kind of a present shape
// Every item carries a box: the asked shape's bounding box, or for a "no" the box of the present
// shape it is confusable with (the one sharing its colour or kind; else the first shape).
#include <cstdint>
#include <string>

namespace kvsteer::demo {

struct DemoPopeOptions {
    int images = 50;
    uint64_t seed = 1;
};

// Writes DIR/images/scene_<i>.png and DIR/pope.jsonl ({"id", "image", "question", "answer",
// "box", "category"}, image paths relative to DIR). Returns the number of items written.
int writeDemoPope(const std::string& dir, const DemoPopeOptions& options);

} // namespace kvsteer::demo
