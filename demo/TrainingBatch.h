#pragma once
// The demo trainer's data (internal to the trainer and its tests): questions tokenised into segments,
// examples (an image and its questions), and packed batches — each image once, followed by all
// its question segments, every segment seeing the shared prefix and itself only (see
// DemoTrainer.h) — with the forward that scores a batch.
#include "demo/ShapeWorld.h"
#include "demo/TrainingNet.h"
#include "io/Image.h"
#include "text/Tokenizer.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kvsteer::demo::training {

// One question as the decoder sees it after the image.
struct Segment {
    std::vector<int64_t> tokens;   // after-image prompt tokens, answer tokens, EOS
    int answerStart = 0;           // index in tokens of the first answer token
    QuestionType type = QuestionType::Color;
    std::vector<int> answerItem;   // descriptions: per answer token and EOS, the item it spells (-1: separator, EOS)
};

// Tokenised question segments, made once per distinct question and answer.
class SegmentCache {
public:
    explicit SegmentCache(const Tokenizer& tok);

    // The prompt's tokens before <image>: BOS "USER:" (the same for every question).
    const std::vector<int64_t>& prefixBeforeImage() const { return prefix_; }

    const Segment& get(const QA& qa);

private:
    const Tokenizer& tok_;
    std::vector<int64_t> prefix_;
    std::unordered_map<std::string, Segment> cache_;
};

// Where a question's answer is read from (see DemoTrainOptions::groundingWeight): grid cells, and
// for a description, the cells of each item it names.
struct Grounding {
    std::vector<int64_t> cells;
    std::vector<std::vector<int64_t>> itemCells;
};

// One image and the questions trained on it.
struct Example {
    std::vector<float> pixels;   // CHW
    std::vector<const Segment*> segments;
    std::vector<Grounding> grounding;   // per segment
};

// The training questions of one scene: every Color/Shape/Position question that applies, Count,
// Describe, and two Exists questions (one yes, one no).
std::vector<QA> trainingQuestions(const Scene& scene, Rng& rng);

// The image's pixels, each question's segment, and where each answer is read from.
Example makeExample(const Scene& scene, const std::vector<QA>& questions, SegmentCache& segments, const ClipPreprocessConfig& pre);

// A packed batch. P = the shared prefix (BOS .. the 576 image tokens), S = the packed segment area
// (padded to the longest example), T = P + S, N = the rows predicting an answer token or EOS, G =
// those of them with grounding cells.
struct Batch {
    Tensor pixels;          // [B, 3, 336, 336]
    Tensor ids;             // [B, T] (image positions hold 0; they are replaced by features)
    Tensor cos, sin;        // [B, 1, T, hd]
    Tensor prefixMask;      // [P, P]
    Tensor segmentMask;     // [B, 1, 1, S, T]
    Tensor lossRows;        // [N] rows of the flattened [B*S] segment outputs that predict an answer token
    Tensor targets;         // [N]
    Tensor groundedRows;    // [G] rows of the flattened [B*S] segment outputs that predict an answer token and have grounding cells
    Tensor groundingMask;   // [G, 576] 1 on those rows' grounding cells
    int64_t prefixLen = 0, imageStart = 0, segLen = 0;
    int64_t tokens = 0;     // real (non-padding) tokens
    // For validation: each loss row's (example, segment) and the segment's type.
    std::vector<std::pair<int, int>> rowOwner;
    std::vector<QuestionType> rowType;
};

// Packs examples into one batch (see the top of this file and DemoTrainer.h); `net` gives the
// RoPE tables.
Batch makeBatch(const std::vector<Example>& examples, const std::vector<int64_t>& prefixBeforeImage, int imageTokens,
                const Net& net);

// Logits [N, V] of the batch's loss rows. With `groundingMass`, also the attention mass [G] that
// head 0 of decoder layer L-2 puts on each grounded row's cells (see DemoTrainOptions::groundingWeight).
Tensor forwardLogits(const Net& net, const Batch& bt, Tensor* groundingMass = nullptr);

} // namespace kvsteer::demo::training
