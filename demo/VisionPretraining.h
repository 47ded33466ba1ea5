#pragma once
// Stage 0: the vision tower's pretraining. LLaVA-1.5 starts from a pretrained CLIP; we have none,
// so the tower is first trained on ShapeWorld scenes with labels known from the generator, read
// from its output hidden_states[-2] by one linear probe (which stage 1 starts the projector from):
//   - every grid cell: the colour, kind and position word of the shape that covers most of it
//     (or background), and the row third and column third of that shape's centre (the position
//     word alone teaches the row only in the middle column, where left/right do not win);
//   - every shape: its kind from the plain mean of the tower's output over its cells.
// This is the readout the decoder needs later (attend to the tokens of one colour or one place,
// read what is there). Measured without it (15-minute runs): a tower trained only through the
// decoder's answers learns colours, but shapes and positions stay near chance.
#include "demo/DemoTrainer.h"
#include "demo/TrainingNet.h"

#include <cstdint>
#include <functional>
#include <string>

namespace kvsteer::demo::training {

struct VisionPretrainResult {
    int64_t steps = 0;
    double seconds = 0;
    // The trained linear probe [classes, Dv] and its bias: every label group's classes plus
    // background, one block after the other (kind, colour, position word, row third, column third).
    Tensor probeWeight, probeBias;
};

// Trains the tower's tensors in `params` (through `net`) for at most o.visionPretrainSteps steps
// and `budgetSeconds` (0 = no time limit), writing progress lines to `log`.
VisionPretrainResult pretrainVision(const DemoTrainOptions& o, Parameters& params, const Net& net, double budgetSeconds,
                                    const std::function<void(const std::string&)>& log);

} // namespace kvsteer::demo::training
