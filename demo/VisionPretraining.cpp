// Stage 0 of the demo trainer (see VisionPretraining.h). torch/ is used for AdamW and gradient
// clipping only; everything else is ATen ops with autograd.
#include "demo/VisionPretraining.h"

#include <torch/optim/adamw.h>
#include <torch/nn/utils/clip_grad.h>   // after adamw.h: it needs torch::Tensor declared

#include "demo/Progress.h"
#include "demo/ShapeWorld.h"
#include "io/Image.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace kvsteer::demo::training {

namespace {

constexpr int kGroups = 5;   // kind, colour, position word, row third, column third
constexpr int kObjectClasses[kGroups] = {kNumKinds, kNumColors, 5, 3, 3};

int positionIndex(const Shape& sh) {
    static const char* places[] = {"left", "right", "top", "bottom", "center"};
    const std::string w = positionWord(sh);
    for (int k = 0; k < 5; ++k)
        if (w == places[k]) return k;
    return 0;
}

// One stage-0 batch: the images and every label pretrainVision reads.
struct VisionBatch {
    int images = 0;
    std::vector<float> pixels;             // [B, 3, 336, 336]
    std::vector<int64_t> cellLabels[kGroups];   // per cell [B*576]; background = last class
    std::vector<float> shapeMask;          // [shapes, B*576]: uniform weights over each shape's cells
    std::vector<int64_t> shapeKinds;       // [shapes]
};

VisionBatch makeVisionBatch(uint64_t seed, int64_t step, int images) {
    static const ClipPreprocessConfig pre;
    const int cells = kGridSize * kGridSize;
    VisionBatch vb;
    vb.images = images;
    for (int i = 0; i < images; ++i) {
        // Scenes of their own inside the training id range: indices from 2^31 of the train seed.
        const Scene s = generateScene(trainSceneId(seed, (1ull << 31) + uint64_t(step) * uint64_t(images) + uint64_t(i)));
        const std::vector<float> px = clipPreprocess(render(s), pre).pixels;
        vb.pixels.insert(vb.pixels.end(), px.begin(), px.end());
        const std::vector<int> owner = cellOwners(s);
        for (size_t k = 0; k < s.shapes.size(); ++k) {
            std::vector<float> row(static_cast<size_t>(images) * cells, 0.0f);
            int n = 0;
            for (int c = 0; c < cells; ++c) n += owner[c] == int(k);
            for (int c = 0; c < cells; ++c)
                if (owner[c] == int(k)) row[static_cast<size_t>(i) * cells + c] = 1.0f / n;
            if (n == 0) continue;
            vb.shapeMask.insert(vb.shapeMask.end(), row.begin(), row.end());
            vb.shapeKinds.push_back(int(s.shapes[k].kind));
        }
        // Every cell of a shape carries all its labels, interior cells included (the
        // tower's attention carries the kind in from the edges): the decoder then finds "the
        // red circle" by one attention over tokens that each say both red and circle.
        for (int c = 0; c < cells; ++c) {
            const Shape* sh = owner[c] < 0 ? nullptr : &s.shapes[owner[c]];
            vb.cellLabels[0].push_back(sh ? int(sh->kind) : kObjectClasses[0]);
            vb.cellLabels[1].push_back(sh ? int(sh->color) : kObjectClasses[1]);
            vb.cellLabels[2].push_back(sh ? positionIndex(*sh) : kObjectClasses[2]);
            vb.cellLabels[3].push_back(sh ? imageThird(sh->cy) : kObjectClasses[3]);
            vb.cellLabels[4].push_back(sh ? imageThird(sh->cx) : kObjectClasses[4]);
        }
    }
    return vb;
}

// The linear probe stage 0 reads the tower with (stage 1 starts the projector from it): each
// group's classes + 1 (background), one block after the other.
struct VisionHeads {
    Tensor cellW, cellB;
};

// Stage 0's loss for tower output h [B, 576, Dv]; accuracy[kGroups] gets kind (per shape) and the
// other groups (per shape cell). Every label is local to a shape's own cells: no objective asks a
// background token to know about the scene (an image-level count head did, and the decoder then
// read colours from background tokens: painting the circle stopped steering it).
Tensor visionLoss(const Tensor& h, VisionBatch& vb, const VisionHeads& heads, double accuracy[kGroups]) {
    const int64_t b = vb.images, cells = h.size(1), dv = h.size(2);
    Tensor logits = at::linear(h.reshape({b * cells, dv}), heads.cellW, heads.cellB);   // [B*576, classes]
    Tensor loss;
    int64_t offset = 0;
    for (int g = 0; g < kGroups; ++g) {
        Tensor lg = logits.narrow(1, offset, kObjectClasses[g] + 1);
        Tensor target = at::from_blob(vb.cellLabels[g].data(), {b * cells}, at::kLong);
        // Colour also learns shape vs background; the other groups are learned (and scored) on
        // the cells that belong to a shape only (background is easy and 90 % of the cells).
        Tensor onShape = target.ne(kObjectClasses[g]).nonzero().squeeze(1);
        if (g != 1 && onShape.numel() > 0) {
            lg = lg.index_select(0, onShape);
            target = target.index_select(0, onShape);
        }
        Tensor term = at::cross_entropy_loss(lg, target);
        loss = loss.defined() ? loss + term : term;
        accuracy[g] = lg.argmax(-1).eq(target).to(at::kFloat).mean().item<double>();
        offset += kObjectClasses[g] + 1;
    }
    // A shape's kind from the plain mean of the tower's output over its cells (through the same
    // kind head): the readout the decoder learns later (attend to the tokens of one colour, read
    // what they are).
    const int64_t n = static_cast<int64_t>(vb.shapeKinds.size());
    Tensor pooled = at::matmul(at::from_blob(vb.shapeMask.data(), {n, b * cells}, at::kFloat), h.reshape({b * cells, dv}));
    Tensor kindLogits = at::linear(pooled, heads.cellW.narrow(0, 0, kObjectClasses[0] + 1), heads.cellB.narrow(0, 0, kObjectClasses[0] + 1));
    Tensor kindTarget = at::from_blob(vb.shapeKinds.data(), {n}, at::kLong);
    loss = loss + at::cross_entropy_loss(kindLogits, kindTarget);
    accuracy[0] = kindLogits.argmax(-1).eq(kindTarget).to(at::kFloat).mean().item<double>();
    return loss;
}

} // namespace

VisionPretrainResult pretrainVision(const DemoTrainOptions& o, Parameters& params, const Net& net, double budgetSeconds,
                                    const std::function<void(const std::string&)>& log) {
    VisionPretrainResult r;
    if (o.visionPretrainSteps <= 0) return r;
    const int64_t dv = net.c.vision.hiddenSize;
    int64_t cellClasses = 0;
    for (int g = 0; g < kGroups; ++g) cellClasses += kObjectClasses[g] + 1;   // + background each
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(mixSeed(o.seed, 0x51A6E0));
    VisionHeads heads;
    heads.cellW = at::normal(0.0, 0.02, {cellClasses, dv}, gen).set_requires_grad(true);
    heads.cellB = at::zeros({cellClasses}).set_requires_grad(true);
    std::vector<Tensor> all;
    for (auto& [name, t] : params.tensors)
        if (isVisionTensor(name) && t.requires_grad()) all.push_back(t);
    for (const Tensor& t : {heads.cellW, heads.cellB}) all.push_back(t);
    using torch::optim::AdamW;
    using torch::optim::AdamWOptions;
    AdamW optimizer(all, AdamWOptions(o.visionPretrainLr).betas({0.9, 0.98}).weight_decay(0.0));

    const auto t0 = std::chrono::steady_clock::now();
    double ema[kGroups] = {-1, -1, -1, -1, -1};
    for (int64_t step = 0; step < o.visionPretrainSteps; ++step) {
        if (budgetSeconds > 0 && secondsSince(t0) >= budgetSeconds) break;
        // Warmup over 5 %, then cosine down to a tenth, by steps or by time, whichever is further.
        double pr = double(step) / double(o.visionPretrainSteps);
        if (budgetSeconds > 0) pr = std::max(pr, secondsSince(t0) / budgetSeconds);
        const double warm = 0.05;
        const double lr = pr < warm ? o.visionPretrainLr * pr / warm
                                    : o.visionPretrainLr * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * (pr - warm) / (1 - warm))));
        for (auto& g : optimizer.param_groups()) static_cast<AdamWOptions&>(g.options()).lr(lr);

        VisionBatch vb = makeVisionBatch(o.seed, step, o.visionPretrainBatch);
        Tensor pix = at::from_blob(vb.pixels.data(), {vb.images, 3, kImageSize, kImageSize}, at::kFloat);
        optimizer.zero_grad();
        double acc[kGroups];
        Tensor loss = visionLoss(net.visionFeatures(pix), vb, heads, acc);
        for (int g = 0; g < kGroups; ++g) ema[g] = ema[g] < 0 ? acc[g] : 0.95 * ema[g] + 0.05 * acc[g];
        loss.backward();
        torch::nn::utils::clip_grad_norm_(all, 1.0);
        optimizer.step();
        r.steps = step + 1;
        if ((step + 1) % (o.logEvery * 2) == 0 || step == 0) {
            char buf[256];
            std::snprintf(buf, sizeof buf,
                          "vision step %5lld  loss %.4f  objects: kind %.1f%%  colour %.1f%%  position %.1f%% (row %.1f%% col %.1f%%)  lr %.2e  %.1f img/s  elapsed %s",
                          static_cast<long long>(step + 1), loss.item<double>(), 100 * ema[0], 100 * ema[1], 100 * ema[2], 100 * ema[3], 100 * ema[4], lr,
                          double((step + 1) * vb.images) / std::max(1e-9, secondsSince(t0)), formatDuration(secondsSince(t0)).c_str());
            log(buf);
        }
    }
    r.seconds = secondsSince(t0);
    r.probeWeight = heads.cellW.detach();   // the heads end here: no copy needed
    r.probeBias = heads.cellB.detach();
    return r;
}

} // namespace kvsteer::demo::training
