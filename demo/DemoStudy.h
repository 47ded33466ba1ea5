#pragma once
// A study suite on ShapeWorld scenes, for judging the red -> blue circle edit on every question the
// demo model was trained on, without any download: what the edit should change (the target sets)
// and what it should leave alone (the preserve sets), each scored by its own metric.
//
// Every scene (2 or 3 shapes, never trained on) holds exactly one circle, a red one, and 1 or 2
// other shapes (squares or triangles, each of its own colour + kind, any colour), so "the circle"
// is unambiguous and no blue circle is ever present. Every item of a scene carries the red
// circle's box: the steering mask stays on the circle whatever the question is about. Questions
// are the exact forms the demo model was trained on (the Questions list in ShapeWorld.h):
//
//   set            role      metric    question                          answer
//   colour         target    contains  What color is the circle?         red      (target blue)
//   blue_circle    target    pope      Is there a blue circle?           no       (target yes)
//   others_exist   preserve  pope      Is there a <colour> <kind>?       yes per other shape, as many
//                                                                        no (absent combinations,
//                                                                        never a red or blue circle)
//   others_colour  preserve  contains  What color is the <kind>?         the colour (kinds present once)
//   count          preserve  exact     How many shapes are there?        two | three
//   red_circle     preserve  pope      Is there a red circle?            yes      (as the picture shows)
//   caption        preserve  chair     Describe the image.               describe(scene); "objects"
//                                                                        lists the kinds present
//
// Scene ids: evalSceneId(2^29 + seed, i) — the evaluation id space, at eval seeds no other demo
// command defaults to (eval-demo 0, demo-pope 1, the trainer's validation 2^30 - 1). The masked
// pairs: makeColorPair(steerSceneId(2^29 + seed, i)) — neither the shipped pairs' scenes
// (steerSceneId(0, i)) nor demo-steer's held-out ones (steerSceneId(1, i) by default).
#include "demo/ShapeWorld.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kvsteer::demo {

struct DemoStudyOptions {
    int images = 40;
    uint64_t seed = 7;    // < 2^29 - 1
    int pairs = 8;        // red/blue circle pairs written to pairs/ (0: none)
};

struct DemoStudyCounts {
    int images = 0;
    int pairs = 0;
    std::vector<std::pair<std::string, int>> datasets;   // name -> items, in suite.json's order
};

// Scene `index` of the study with this seed: one red circle, 1 or 2 other shapes (no circle).
Scene studyScene(uint64_t seed, uint64_t index);

// Writes into DIR:
//   images/scene_<i>.png         the scenes
//   <set>.jsonl                  one per set above: {"id", "image", "question", "answer", "box",
//                                "category", "target"? , "objects"?}, image paths relative to DIR
//   suite.json                   {"name": "demo-study", "datasets": [{"name", "data", "role",
//                                "metric", "synonyms"?}]}, data paths relative to DIR
//   pairs/pairs.jsonl            {"image_a": "blue_<i>.png", "image_b": "red_<i>.png", "prompt",
//                                "mask": "rect:r0,c0,r1,c1"} per line (the circle's cells), for
//                                `kvsteer extract --recipe image-pairs --pairs DIR/pairs/pairs.jsonl`
// Throws kvsteer::Error on bad options or a write error.
DemoStudyCounts writeDemoStudy(const std::string& dir, const DemoStudyOptions& options);

} // namespace kvsteer::demo
