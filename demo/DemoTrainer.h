#pragma once
// The trainer of the bundled demo model: a tiny LLaVA-1.5 (CLIP ViT 336/14 -> 576 visual tokens,
// hidden_states[-2] without CLS, 2-layer GELU projector, Llama decoder with GQA) trained from
// scratch on ShapeWorld question/answer pairs with libtorch autograd, written as a llava-hf
// directory that LlavaModel::load reads like any real LLaVA-1.5.
//
// The training forward is the same math as core/models/llava/{ClipVision,Llama,LlavaModel}.cpp, batched:
// each image is encoded once and all its questions are trained in one packed sequence —
//   [BOS USER : ▁ <image>×576] [▁ \n q1 ASSISTANT : a1 </s>] [▁ \n q2 ASSISTANT : a2 </s>] ...
// where every question segment sees the shared prefix and itself (never another segment) and takes
// the positions it would have alone (P, P+1, ...), so each segment computes exactly what the
// single-question sequence computes. The language-model loss is on the answer tokens and EOS only;
// beside it, a grounding loss guides one attention head to the cells the answer is read from
// (DemoTrainOptions::groundingWeight), and stage 0 trains the tower alone on per-cell labels.
//
// Deterministic for a given seed, step count and thread count (one thread is the default).
#include "io/Config.h"

#include <cstdint>
#include <functional>
#include <string>

namespace kvsteer::demo {

struct DemoModelSizes {
    int visionHidden = 64, visionLayers = 4, visionHeads = 2, visionMlp = 128;   // 3 of the 4 layers are used (-2)
    int textHidden = 128, textLayers = 4, textHeads = 4, textKvHeads = 2, textMlp = 352;
    int maxPositions = 1024;
};

// The llava-hf config of the demo model for a tokenizer of `vocabSize` ids with <image> at
// `imageTokenIndex`.
ModelConfig demoModelConfig(const DemoModelSizes& sizes, int64_t vocabSize, int64_t imageTokenIndex);

struct DemoTrainOptions {
    std::string outDir;              // the llava-hf directory to write
    std::string tokenizerDir;        // holds tokenizer.model from spm_train (JSON files are written here if absent)
    double minutes = 0;              // wall-clock budget (0 = none); training stops when it is spent
    int64_t steps = 0;               // optimizer steps (0 = as many as the budget allows)
    uint64_t seed = 0;               // training scenes trainSceneId(seed, i), init and order
    int imagesPerStep = 8;           // images per optimizer step (each with all its questions)
    double learningRate = 2e-3;
    double minLearningRateFraction = 0.05;   // cosine floor, as a fraction of the peak
    double warmupFraction = 0.03;
    double weightDecay = 0.01;
    double gradClip = 1.0;
    int threads = 1;
    int logEvery = 10;               // steps between progress lines
    int validateEvery = 200;         // steps between validation (teacher-forced exact match); 0 = never
    int validationImages = 64;
    // Curriculum (fractions of the run): scenes have one shape until oneShapeUntil, at most two
    // until twoShapesUntil; shape sizes start at [150, 250] px and shrink linearly to the world's
    // [50, 120] at bigShapesUntil (big shapes make the first grounding signal strong: a from-
    // scratch decoder attends uniformly over 576 visual tokens at first). Then the plain world.
    double oneShapeUntil = 0.05, twoShapesUntil = 0.15, bigShapesUntil = 0.1;
    // Stage 0 (vision tower pretraining on per-patch colour/kind/position/row/column labels):
    // steps, images per step, peak learning rate, and the share of --minutes it may use at most.
    int64_t visionPretrainSteps = 6000;
    int visionPretrainBatch = 8;
    double visionPretrainLr = 2e-3;
    double visionPretrainFraction = 0.25;
    double visionLrScale = 0;        // stage 1: the pretrained tower's learning rate relative to the rest (0 = frozen)
    // Grounding: an auxiliary loss, -log of the attention mass that head 0 of decoder layer L-2
    // puts on the cells the answer lives in (the asked-about shape; all shapes for count; for a
    // description, each item's words on the shape they name), at every answer position. It
    // teaches the retrieval the answers need ("look at the circle") directly instead of leaving it
    // to be found through the answers alone, where a from-scratch decoder plateaus at guessing
    // the colour of some shape. 0 = off.
    double groundingWeight = 1.0;
    std::string questionTypes;       // training only these types (comma-separated names; "" = all six)
    DemoModelSizes sizes;
    std::string dtype = "f32";       // on-disk dtype of model.safetensors: f32 | f16
    std::string modelName = "kvsteer/shapes-demo";
    std::function<void(const std::string&)> log;   // progress lines (default: stderr)
};

struct DemoTrainResult {
    int64_t steps = 0;
    int64_t images = 0;
    double seconds = 0;
    double firstLoss = 0;            // the first step's answer loss
    double finalLoss = 0;            // mean answer loss over the last 50 steps
    double firstGroundingMass = -1;  // the grounded head's attention mass on the answer's cells: first step
    double groundingMass = -1;       // ... and its running mean at the end (-1: grounding off)
    double validationAccuracy = -1;  // last validation's overall exact match (teacher-forced), -1 if none
};

DemoTrainResult trainDemoModel(const DemoTrainOptions& options);

// Checks the trainer's packed forward against the inference path: loads the llava-hf directory
// both into the training forward and with LlavaModel::load, scores the evaluation questions of
// `scenes` scenes (eval seed `seed`) both ways — packed (all questions of an image in one
// sequence) and one full sequence per question (LlavaModel::encodeImage + embedPrompt +
// Llama::forward) — and returns the largest |difference| of the answer-token logits.
double trainingForwardParity(const std::string& modelDir, int scenes, uint64_t seed = 0);

} // namespace kvsteer::demo
