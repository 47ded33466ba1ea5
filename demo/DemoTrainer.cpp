// The demo trainer (see DemoTrainer.h): demoModelConfig; the training loop (stage 0 through
// pretrainVision, stage 1 here) with its validation; the llava-hf output; the parity check. The
// model and its forward are in TrainingNet, the data and batches in TrainingBatch, stage 0 in
// VisionPretraining. torch/ (the C++ frontend) is used for AdamW and gradient clipping only;
// everything else is ATen ops with autograd.
#include "demo/DemoTrainer.h"

#include <torch/optim/adamw.h>
#include <torch/nn/utils/clip_grad.h>   // after adamw.h: it needs torch::Tensor declared

#include "Error.h"
#include "Runtime.h"
#include "cache/KVCache.h"
#include "demo/DemoEval.h"
#include "demo/DemoFiles.h"
#include "demo/Progress.h"
#include "demo/ShapeWorld.h"
#include "demo/TrainingBatch.h"
#include "demo/TrainingNet.h"
#include "demo/VisionPretraining.h"
#include "io/Image.h"
#include "models/llava/LlavaModel.h"
#include "models/llava/RandomCheckpoint.h"
#include "io/SafeTensors.h"
#include "text/Tokenizer.h"
#include "models/Prompt.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace kvsteer::demo {

namespace fs = std::filesystem;
using namespace training;   // the trainer's internals: TrainingNet.h, TrainingBatch.h, VisionPretraining.h

ModelConfig demoModelConfig(const DemoModelSizes& s, int64_t vocabSize, int64_t imageTokenIndex) {
    ModelConfig c;
    c.modelType = "llava";
    c.hasVision = true;
    c.vision.hiddenSize = s.visionHidden;
    c.vision.intermediateSize = s.visionMlp;
    c.vision.numLayers = s.visionLayers;
    c.vision.numHeads = s.visionHeads;
    c.vision.imageSize = kImageSize;
    c.vision.patchSize = 14;
    c.vision.hiddenAct = "quick_gelu";
    c.text.vocabSize = vocabSize;
    c.text.hiddenSize = s.textHidden;
    c.text.intermediateSize = s.textMlp;
    c.text.numLayers = s.textLayers;
    c.text.numHeads = s.textHeads;
    c.text.numKvHeads = s.textKvHeads;
    c.text.headDim = s.textHidden / s.textHeads;
    c.text.rmsNormEps = 1e-5;
    c.text.maxPositionEmbeddings = s.maxPositions;
    c.text.bosTokenId = 1;
    c.text.eosTokenIds = {2};
    c.imageTokenIndex = imageTokenIndex;
    c.visionFeatureLayer = -2;
    c.visionFeatureSelectStrategy = "default";
    c.projectorHiddenAct = "gelu";
    return c;
}

namespace {

// Validation: teacher-forced exact match, which equals greedy-decoding exact match (greedy
// reproduces the answer iff every answer token and EOS is the argmax given the answer so far).
// Returns the progress line; *overall gets the overall accuracy.
std::string validate(const Net& net, const std::vector<Example>& examples, const std::vector<int64_t>& prefix, int imageTokens,
                     double* overall) {
    c10::NoGradGuard noGrad;
    int correct[kNumQuestionTypes] = {}, total[kNumQuestionTypes] = {};
    const size_t chunk = 8;
    for (size_t start = 0; start < examples.size(); start += chunk) {
        std::vector<Example> part(examples.begin() + static_cast<std::ptrdiff_t>(start),
                                  examples.begin() + static_cast<std::ptrdiff_t>(std::min(examples.size(), start + chunk)));
        const Batch bt = makeBatch(part, prefix, imageTokens, net);
        const Tensor pred = forwardLogits(net, bt).argmax(-1);
        const Tensor ok = pred.eq(bt.targets).contiguous();
        const bool* okp = ok.data_ptr<bool>();
        std::map<std::pair<int, int>, std::pair<bool, QuestionType>> perSegment;
        for (size_t r = 0; r < bt.rowOwner.size(); ++r) {
            auto it = perSegment.find(bt.rowOwner[r]);
            if (it == perSegment.end()) perSegment[bt.rowOwner[r]] = {okp[r], bt.rowType[r]};
            else it->second.first = it->second.first && okp[r];
        }
        for (const auto& [key, value] : perSegment) {
            total[int(value.second)] += 1;
            correct[int(value.second)] += value.first ? 1 : 0;
        }
    }
    std::ostringstream o;
    int c = 0, t = 0;
    for (int i = 0; i < kNumQuestionTypes; ++i) {
        c += correct[i];
        t += total[i];
        char buf[64];
        std::snprintf(buf, sizeof buf, " %s %.0f%%", questionTypeName(QuestionType(i)), total[i] ? 100.0 * correct[i] / total[i] : 0.0);
        o << buf;
    }
    *overall = t ? double(c) / t : 0;
    char buf[64];
    std::snprintf(buf, sizeof buf, "validation (teacher-forced exact match): overall %.1f%% |", 100.0 * *overall);
    return buf + o.str();
}

// The projector's first layer starts with stage 0's linear probe as its first rows: those hidden
// units then begin as the labels' logits (kind, colour, position word, row and column third), so
// the decoder is handed each label as a unit of its own from the first step instead of having to
// find it among the tower's channels. Measured (seed 1, validation set): without it, a shape's
// position stayed at 25-35 % for the first two thirds of stage 1 although the probe read it from
// every cell at ~96 %; with it, position reached 57-63 % a fifth of the way in (step 1000 of 5300).
void startProjectorFromProbe(Parameters& params, const VisionPretrainResult& vp) {
    c10::NoGradGuard noGrad;
    Tensor w = params("multi_modal_projector.linear_1.weight"), b = params("multi_modal_projector.linear_1.bias");
    const int64_t rows = std::min(vp.probeWeight.size(0), w.size(0));
    w.narrow(0, 0, rows).copy_(vp.probeWeight.narrow(0, 0, rows));
    b.narrow(0, 0, rows).copy_(vp.probeBias.narrow(0, 0, rows));
}

// Stage 1's optimizer over four groups: (weight decay or not) x (vision tower or not); the tower,
// pretrained in stage 0, learns at visionLrScale times the rate so the decoder's early noise does
// not wash it out. The default freezes it: its stage-0 features already say colour, kind and place
// on every shape cell, a frozen tower costs no backward pass (stage 1 runs ~20 % faster), and
// nothing in stage 1 can teach background tokens about the shapes (which would break steering).
// *groupScale: each group's rate as a multiple of the schedule's.
torch::optim::AdamW stage1Optimizer(Parameters& params, const VisionPretrainResult& vp, const DemoTrainOptions& o, std::vector<double>* groupScale) {
    using torch::optim::AdamWOptions;
    std::vector<torch::optim::OptimizerParamGroup> groups;
    std::set<const void*> vision;
    for (const auto& [name, t] : params.tensors)
        if (isVisionTensor(name)) vision.insert(t.unsafeGetTensorImpl());
    for (int decay = 1; decay >= 0; --decay)
        for (int isVision = 0; isVision <= 1; ++isVision) {
            std::vector<Tensor> members;
            for (const Tensor& t : decay ? params.decay : params.noDecay)
                if (bool(vision.count(t.unsafeGetTensorImpl())) == bool(isVision)) members.push_back(t);
            if (members.empty()) continue;
            if (isVision && vp.steps > 0 && o.visionLrScale == 0) {
                // A frozen tower: no gradient flows into it at all (and none is computed).
                for (Tensor& t : members) t.set_requires_grad(false);
                continue;
            }
            groups.emplace_back(members, std::make_unique<AdamWOptions>(
                                             AdamWOptions(o.learningRate).betas({0.9, 0.98}).weight_decay(decay ? o.weightDecay : 0.0)));
            groupScale->push_back(isVision && vp.steps > 0 ? o.visionLrScale : 1.0);
        }
    return torch::optim::AdamW(std::move(groups), AdamWOptions(o.learningRate));
}

// The curriculum at progress pr (0 -> 1): one shape, then two, then any; big shapes first,
// shrinking to the scenes' own sizes.
SceneOptions curriculumAt(double pr, const DemoTrainOptions& o) {
    SceneOptions so;
    if (pr < o.oneShapeUntil) so.maxShapes = 1;
    else if (pr < o.twoShapesUntil) so.maxShapes = 2;
    if (pr < o.bigShapesUntil) {
        const double t = pr / o.bigShapesUntil;   // 0 -> 1
        so.minSize = 150 + (so.minSize - 150) * t;
        so.maxSize = 250 + (so.maxSize - 250) * t;
    }
    return so;
}

// The llava-hf directory: config, processor files and the weights in `dtype`.
void writeTrainedModel(const DemoTrainOptions& o, const ModelConfig& config, const Tokenizer& tok, Parameters& params, c10::ScalarType dtype) {
    std::ofstream(fs::path(o.outDir) / "config.json") << config.toJsonText() << "\n";
    writePreprocessorConfig(config, o.outDir);
    writeDemoProcessorFiles(o.outDir, tok.bosId(), tok.eosId(), tok.padId());
    fs::remove(fs::path(o.outDir) / "model.safetensors.index.json");
    writeCheckpoint(o.outDir, params.layout, dtype, int64_t(1) << 40,
                    [&](const TensorSpec& spec) { return params(spec.name).detach().contiguous(); });
}

} // namespace

DemoTrainResult trainDemoModel(const DemoTrainOptions& o) {
    auto log = [&](const std::string& line) {
        if (o.log) o.log(line);
        else std::cerr << line << std::endl;
    };
    if (o.outDir.empty()) throw Error("train-demo: no output directory");
    if (o.steps <= 0 && o.minutes <= 0) throw Error("train-demo: give a step count or a time budget");
    if (o.imagesPerStep < 1) throw Error("train-demo: images per step must be >= 1");
    setBlasThreads(o.threads);
    at::manual_seed(o.seed);
    const c10::ScalarType dtype = o.dtype == "f16" ? at::kHalf : (o.dtype == "f32" ? at::kFloat : throw Error("train-demo: dtype must be f32 or f16"));

    // Tokenizer: the spm_train model plus the llava-hf JSON files, copied into the output.
    fs::create_directories(o.outDir);
    if (!fs::exists(fs::path(o.tokenizerDir) / "added_tokens.json")) writeDemoTokenizerFiles(o.tokenizerDir);
    copyDemoTokenizerFiles(o.tokenizerDir, o.outDir);
    const Tokenizer tok = Tokenizer::loadFromDirectory(o.outDir);
    ModelConfig config = demoModelConfig(o.sizes, tok.vocabSize(), tok.imageTokenId());
    config.name = o.modelName;
    const int imageTokens = config.imageSeqLength();

    Parameters params = initParameters(config, o.seed);
    Net net(config, params);
    int64_t trainable = 0, total = 0;
    for (const auto& [name, t] : params.tensors) {
        total += t.numel();
        if (t.requires_grad()) trainable += t.numel();
    }
    {
        std::ostringstream s;
        s << "demo model: vision " << config.vision.hiddenSize << "x" << config.vision.numLayers << " layers (" << config.visionLayersNeeded()
          << " used), text " << config.text.hiddenSize << "x" << config.text.numLayers << " layers, " << config.text.numHeads << "/"
          << config.text.numKvHeads << " heads, vocab " << config.text.vocabSize << "; " << total << " parameters (" << trainable
          << " trained); threads " << currentThreads();
        log(s.str());
    }

    // Stage 0: the vision tower (see pretrainVision).
    const double totalBudget = o.minutes > 0 ? o.minutes * 60.0 : 0.0;
    const VisionPretrainResult vp = pretrainVision(o, params, net, totalBudget * o.visionPretrainFraction, log);
    if (vp.steps > 0) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "vision pretraining: %lld steps in %s", static_cast<long long>(vp.steps), formatDuration(vp.seconds).c_str());
        log(buf);
    }

    if (vp.steps > 0) startProjectorFromProbe(params, vp);

    // Stage 1: the projector and the decoder (and the tower, unless frozen) on the questions.
    using torch::optim::AdamWOptions;
    std::vector<double> groupScale;
    torch::optim::AdamW optimizer = stage1Optimizer(params, vp, o, &groupScale);
    std::vector<Tensor> allTrainable;
    for (const auto& g : optimizer.param_groups()) allTrainable.insert(allTrainable.end(), g.params().begin(), g.params().end());

    SegmentCache segments(tok);
    const ClipPreprocessConfig pre;   // the defaults = what preprocessor_config.json says
    std::vector<Example> validation;
    if (o.validateEvery > 0)
        for (int i = 0; i < o.validationImages; ++i) {
            // Reserved validation scenes: eval id space, seed 2^30 - 1 (eval-demo never defaults there).
            const Scene s = generateScene(evalSceneId(0x3FFFFFFF, static_cast<uint64_t>(i)));
            Rng rng(mixSeed(s.id, 17));
            validation.push_back(makeExample(s, sampleQuestions(s, rng), segments, pre));
        }

    const auto t0 = std::chrono::steady_clock::now();
    const double budget = totalBudget > 0 ? std::max(1.0, totalBudget - vp.seconds) : 0.0;
    auto progress = [&](int64_t step) {
        double pr = 0;
        if (o.steps > 0) pr = std::max(pr, double(step) / double(o.steps));
        if (budget > 0) pr = std::max(pr, secondsSince(t0) / budget);
        return std::min(pr, 1.0);
    };
    auto learningRate = [&](double pr) {
        const double warm = o.warmupFraction;
        if (pr < warm) return o.learningRate * (pr / warm);
        const double t = (pr - warm) / std::max(1e-9, 1.0 - warm);
        const double floor = o.minLearningRateFraction;
        return o.learningRate * (floor + (1 - floor) * 0.5 * (1 + std::cos(M_PI * std::min(1.0, t))));
    };

    DemoTrainResult result;
    Rng dataRng(mixSeed(o.seed, 0xDA7A));
    uint64_t sceneIndex = 0;
    std::vector<double> recentLoss;
    double emaLoss = -1, emaMass = -1, tokensSinceLog = 0, timeAtLog = 0;
    for (int64_t step = 0;; ++step) {
        const double pr = progress(step);
        if ((o.steps > 0 && step >= o.steps) || (budget > 0 && secondsSince(t0) >= budget)) break;
        const double lr = learningRate(pr);
        for (size_t gi = 0; gi < optimizer.param_groups().size(); ++gi)
            static_cast<AdamWOptions&>(optimizer.param_groups()[gi].options()).lr(lr * groupScale[gi]);

        const SceneOptions so = curriculumAt(pr, o);
        std::vector<Example> examples;
        for (int i = 0; i < o.imagesPerStep; ++i) {
            const Scene s = generateScene(trainSceneId(o.seed, sceneIndex++), so);
            std::vector<QA> qs = trainingQuestions(s, dataRng);
            if (!o.questionTypes.empty()) {
                std::vector<QA> kept;
                for (const QA& qa : qs)
                    if (("," + o.questionTypes + ",").find("," + std::string(questionTypeName(qa.type)) + ",") != std::string::npos)
                        kept.push_back(qa);
                qs = kept;
            }
            if (qs.empty()) {
                --i;
                continue;
            }
            examples.push_back(makeExample(s, qs, segments, pre));
        }
        const Batch bt = makeBatch(examples, segments.prefixBeforeImage(), imageTokens, net);
        optimizer.zero_grad();
        Tensor mass;
        Tensor loss = at::cross_entropy_loss(forwardLogits(net, bt, o.groundingWeight > 0 ? &mass : nullptr), bt.targets);
        Tensor objective = loss;
        if (o.groundingWeight > 0 && mass.numel() > 0) {
            objective = loss + o.groundingWeight * (-(mass + 1e-6).log()).mean();
            const double m = mass.mean().item<double>();
            if (emaMass < 0) result.firstGroundingMass = m;
            emaMass = emaMass < 0 ? m : 0.95 * emaMass + 0.05 * m;
            result.groundingMass = emaMass;
        }
        objective.backward();
        if (o.gradClip > 0) torch::nn::utils::clip_grad_norm_(allTrainable, o.gradClip);
        optimizer.step();

        const double l = loss.item<double>();
        if (!std::isfinite(l)) throw Error("train-demo: the loss became " + std::to_string(l) + " at step " + std::to_string(step));
        if (step == 0) result.firstLoss = l;
        emaLoss = emaLoss < 0 ? l : 0.95 * emaLoss + 0.05 * l;
        recentLoss.push_back(l);
        if (recentLoss.size() > 50) recentLoss.erase(recentLoss.begin());
        result.steps = step + 1;
        result.images += o.imagesPerStep;
        tokensSinceLog += double(bt.tokens);

        const double elapsed = secondsSince(t0);
        if ((step + 1) % o.logEvery == 0 || step == 0) {
            double eta = 0;
            if (o.steps > 0) eta = elapsed / double(step + 1) * double(o.steps - step - 1);
            if (budget > 0) eta = eta > 0 ? std::min(eta, budget - elapsed) : budget - elapsed;
            char grounding[32] = "";   // nothing when the grounding loss is off
            if (emaMass >= 0) std::snprintf(grounding, sizeof grounding, "  grounding %.2f", emaMass);
            char buf[256];
            std::snprintf(buf, sizeof buf, "step %6lld  loss %.4f (avg %.4f)%s  lr %.2e  %.0f tok/s  %.2f img/s  elapsed %s  eta %s",
                          static_cast<long long>(step + 1), l, emaLoss, grounding, lr, tokensSinceLog / std::max(1e-9, elapsed - timeAtLog),
                          double(result.images) / std::max(1e-9, elapsed), formatDuration(elapsed).c_str(), formatDuration(eta).c_str());
            log(buf);
            tokensSinceLog = 0;
            timeAtLog = elapsed;
        }
        if (o.validateEvery > 0 && (step + 1) % o.validateEvery == 0) {
            double acc = 0;
            log(validate(net, validation, segments.prefixBeforeImage(), imageTokens, &acc));
            result.validationAccuracy = acc;
        }
    }
    result.seconds = secondsSince(t0);
    double sum = 0;
    for (double l : recentLoss) sum += l;
    result.finalLoss = recentLoss.empty() ? 0 : sum / double(recentLoss.size());
    if (o.validateEvery > 0) {
        double acc = 0;
        log(validate(net, validation, segments.prefixBeforeImage(), imageTokens, &acc));
        result.validationAccuracy = acc;
    }

    writeTrainedModel(o, config, tok, params, dtype);
    {
        char buf[256];
        std::snprintf(buf, sizeof buf, "trained %lld steps (%lld images) in %s; final loss %.4f; wrote %s",
                      static_cast<long long>(result.steps), static_cast<long long>(result.images), formatDuration(result.seconds).c_str(),
                      result.finalLoss, o.outDir.c_str());
        log(buf);
    }
    // The saved directory through the real loader must compute what the trainer computed.
    const double parity = trainingForwardParity(o.outDir, 2, 0x3FFFFFFF);
    {
        char buf[160];
        std::snprintf(buf, sizeof buf, "parity: trainer forward vs LlavaModel::load inference, max |logit diff| %.2e (2 scenes)", parity);
        log(buf);
    }
    if (!(parity < 1e-3)) throw Error("train-demo: the saved model does not reproduce the trainer's logits (max diff " + std::to_string(parity) + ")");
    return result;
}

double trainingForwardParity(const std::string& modelDir, int scenes, uint64_t seed) {
    c10::NoGradGuard noGrad;
    LoadOptions exact;
    exact.dtype = "f32";
    exact.threads = currentThreads();
    auto model = LlavaModel::load(modelDir, exact);
    const ModelConfig& config = model->config();
    const Tokenizer& tok = model->tokenizer();

    // The trainer's parameters, from the file (float32).
    Parameters params;
    params.layout = checkpointLayout(config);
    const SafeTensorsFile file((fs::path(modelDir) / "model.safetensors").string());
    for (const TensorSpec& spec : params.layout) params.tensors[spec.name] = file.tensor(spec.name).to(at::kFloat).clone();
    Net net(config, params);
    SegmentCache segments(tok);
    const ClipPreprocessConfig pre = model->imageConfig();

    double worst = 0;
    for (int i = 0; i < scenes; ++i) {
        const Scene scene = generateScene(evalSceneId(seed, static_cast<uint64_t>(i)));
        const std::vector<QA> questions = evalQuestions(scene);
        std::vector<Example> one{makeExample(scene, questions, segments, pre)};
        const Batch bt = makeBatch(one, segments.prefixBeforeImage(), config.imageSeqLength(), net);
        const Tensor packed = forwardLogits(net, bt);   // rows in (segment, token) order

        const ImageU8 image = render(scene);
        std::vector<Tensor> reference;
        for (size_t q = 0; q < questions.size(); ++q) {
            const Segment& seg = *one[0].segments[q];
            const Prompt prompt = buildPrompt(*model, questions[q].question, false, &image);
            std::vector<int64_t> ids = prompt.ids;
            ids.insert(ids.end(), seg.tokens.begin() + seg.answerStart, seg.tokens.end() - 1);   // answer, not EOS
            const Tensor features = model->encodePromptImage(prompt).tokens;
            const TextConfig& t = config.text;
            KVCache cache(t.numLayers, 1, t.numKvHeads, t.headDim, static_cast<int64_t>(ids.size()), at::kFloat);
            const Tensor hidden = model->decoder().forward(model->embedPrompt(ids, features), cache);
            const int64_t first = static_cast<int64_t>(prompt.ids.size()) - 1;
            reference.push_back(model->decoder().logits(hidden.squeeze(0).narrow(0, first, static_cast<int64_t>(ids.size()) - first)));
        }
        const Tensor expected = at::cat(reference, 0);
        if (expected.sizes() != packed.sizes())
            throw Error("trainingForwardParity: packed and per-question logits differ in shape");
        worst = std::max(worst, (expected - packed).abs().max().item<double>());
    }
    return worst;
}

} // namespace kvsteer::demo