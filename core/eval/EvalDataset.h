#pragma once
// An evaluation dataset: JSONL, one item per line, in either of two forms.
//   POPE, as published:  {"question_id": 1, "image": "COCO_val2014_000000310196.jpg",
//                         "text": "Is there a snowboard in the image?", "label": "yes"}
//   general:             {"id": "q7", "image": "scene.png", "question": "What color is the circle?",
//                         "answer": "red" | ["red", "crimson"],
//                         "mask": "rect:6,9,15,18" | "masks/q7.png",   (optional)
//                         "box": [x0, y0, x1, y1],                     (optional; image pixels)
//                         "category": "colour",                        (optional; any string)
//                         "target": "blue",                            (optional; the answer steering aims at)
//                         "objects": ["circle", "square"]}             (optional; CHAIR's ground truth)
// "category" is read in both forms; the rest only in the general one.
// Without "image" the prompt is text only and steering addresses its token strip. Relative image
// and mask paths are resolved against the images directory (--images), else the dataset's own
// folder. A bad line is an error naming the file, the line and what was expected; with skipBad it
// is recorded and the rest is read.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvsteer {

struct EvalItem {
    std::string id;                       // question_id or id, as text
    int64_t index = 0;                    // position among the dataset's good items (0-based)
    int line = 0;                         // 1-based line in the file
    std::string image;                    // resolved path; empty = a text-only prompt
    std::string question;
    std::vector<std::string> answers;     // POPE: the label ("yes" / "no")
    std::string mask;                     // a MASK string (rect:, tokens:, an image or array file); "" = none
    std::optional<std::array<double, 4>> box;   // x0, y0, x1, y1 in the image's pixels
    std::string category;                 // what scores are broken down by; "" = none
    std::string target;                   // the answer a target set's steering aims at; "" = none
    std::vector<std::string> objects;     // the objects in the image (CHAIR)
};

struct BadLine {
    int line = 0;
    std::string error;
};

struct EvalDataset {
    std::string path;
    std::vector<EvalItem> items;
    std::vector<BadLine> bad;             // only with skipBad
    std::string hash;                     // of the file's bytes (hex): what a resumed run must match
};

// Reads `path`; throws kvsteer::Error for an unreadable file, an empty one, or (without skipBad) the
// first bad line: bad JSON, a missing or mistyped field, a duplicate id, an image or mask file that
// does not exist, a box that is not 4 numbers with x0 < x1 and y0 < y1.
EvalDataset loadEvalDataset(const std::string& path, const std::string& imagesDir, bool skipBad);

// A stable 64-bit hash (FNV-1a) of bytes, as 16 hex digits: dataset and spec hashes, shards.
uint64_t stableHash(const std::string& bytes);
std::string hexHash(uint64_t h);

} // namespace kvsteer
