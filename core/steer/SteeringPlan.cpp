#include "steer/SteeringPlan.h"

#include "cache/SpanCells.h"

#include "Error.h"
#include "Runtime.h"
#include "models/Model.h"
#include "generate/Session.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <map>

namespace kvsteer {

namespace {

double coefficient(const std::vector<double>& c, int layer) {
    if (c.empty()) return 0.0;
    if (c.size() == 1) return c[0];
    if (layer < 0 || layer >= static_cast<int>(c.size())) throw Error("steering plan: no coefficient for layer " + std::to_string(layer));
    return c[layer];
}


// Edits the painted positions of one layer's K or V for the chosen heads, all at once:
//   x [h, n, D] (the span's values at `index`), f [1, n, 1] = s(p) * c, dir [h, 1 or n, D],
//   ablateTarget [h, 1, D] (ablate only) -> the edited values, [h, n, D].
at::Tensor editedValues(const at::Tensor& x, const at::Tensor& f, SteeringOperator op, const at::Tensor& dir, const at::Tensor& ablateTarget,
                        const TransformerDecoder& decoder, const at::Tensor& positions, bool isKey) {
    switch (op) {
    case SteeringOperator::Add:
        return x + f * dir;
    case SteeringOperator::PreRope:
        return isKey ? x + f * decoder.rotate(dir.expand_as(x), positions) : x + f * dir;
    case SteeringOperator::NormPreserving: {
        at::Tensor y = x + f * dir;
        at::Tensor yNorm = y.norm(2, {-1}, true);
        return at::where(yNorm > 0, y * (x.norm(2, {-1}, true) / yNorm), x);
    }
    case SteeringOperator::Scale:
        return x * (1 + f);
    case SteeringOperator::Ablate:
        return x + f * (ablateTarget - x);
    case SteeringOperator::Spotlight:
        break;
    }
    return x;
}

// One layer's K or V edit: cached [H_kv, S, D] (a view into the cache), edited in place at the
// span positions `index` (nonzero factor) of the heads the plan names. One set of ATen calls per
// layer, not per head: an atlas applies a dozen plans, and a small model's edit is mostly call
// overhead.
void editLayer(const at::Tensor& cached, const VisualSpan& span, const std::vector<int64_t>& heads, const at::Tensor& index,
               const at::Tensor& factor, const SteeringPlan& plan, const at::Tensor& entry, const TransformerDecoder& decoder,
               const at::Tensor& spanPositions, bool isKey) {
    const at::Tensor dev = index.to(cached.device());
    const at::Tensor headIndex = at::tensor(heads, at::TensorOptions().dtype(at::kLong)).to(cached.device());
    bool allHeads = int64_t(heads.size()) == cached.size(0);   // 0, 1, ..., H_kv - 1 in order
    for (size_t i = 0; i < heads.size() && allHeads; ++i) allHeads = heads[i] == int64_t(i);
    const at::Tensor spanAll = cached.narrow(1, span.start, span.length);              // [H_kv, N, D] view
    const at::Tensor spans = allHeads ? spanAll : spanAll.index_select(0, headIndex);  // [h, N, D]
    const at::Tensor x = spans.index_select(1, dev);                                    // [h, n, D]
    const at::Tensor f = factor.to(cached.device(), cached.scalar_type()).view({1, -1, 1});
    at::Tensor dir;   // [h, 1, D] broadcast, or [h, n, D] per position
    if (entry.defined()) {
        dir = entry.to(cached.device(), cached.scalar_type()).index_select(0, headIndex);
        dir = dir.dim() == 3 ? dir.index_select(1, dev) : dir.unsqueeze(1);
    }
    at::Tensor target;
    if (plan.op == SteeringOperator::Ablate && plan.ablateTarget == AblateTarget::Zero) target = at::zeros_like(x.narrow(1, 0, 1));
    else if (plan.op == SteeringOperator::Ablate)   // the mean over the picture's cells (never a newline token)
        target = span.hasViews() ? spans.index_select(1, cellTokens(span).to(cached.device())).mean(1, true) : spans.mean(1, true);
    const at::Tensor positions = plan.op == SteeringOperator::PreRope ? spanPositions.index_select(1, index.cpu()) : at::Tensor();
    const at::Tensor out = editedValues(x, f, plan.op, dir, target, decoder, positions, isKey).to(cached.scalar_type());
    if (allHeads) {
        spanAll.index_copy_(1, dev, out);
        return;
    }
    for (size_t i = 0; i < heads.size(); ++i) spanAll.select(0, heads[i]).index_copy_(0, dev, out.select(0, int64_t(i)));
}

} // namespace

void warmUpEdits(const Model& model) {
    const c10::Device device = model.format().device;
    c10::NoGradGuard noGrad;
    const TextConfig& t = model.config().text;
    // One layer's cache row, [H_kv, S, D], with a span of 4 positions at 2.., 2 of them painted.
    at::Tensor cached = at::randn({t.numKvHeads, 8, t.headDim}, at::TensorOptions().dtype(model.format().compute).device(device));
    VisualSpan span;
    span.start = 2;
    span.length = 4;
    const at::Tensor index = at::arange(2, at::kLong), factor = at::ones({2});
    const at::Tensor positions = at::arange(span.start, span.start + span.length, at::kLong).unsqueeze(0);
    const at::Tensor entry = at::randn({t.numKvHeads, t.headDim});
    std::vector<int64_t> allHeads;
    for (int64_t h = 0; h < t.numKvHeads; ++h) allHeads.push_back(h);
    SteeringPlan plan;
    for (const auto& [op, name] : kSteeringOperators) {
        plan.op = op;
        for (AblateTarget target : {AblateTarget::Mean, AblateTarget::Zero}) {
            plan.ablateTarget = target;
            for (bool isKey : {true, false})
                for (const std::vector<int64_t>& heads : {allHeads, std::vector<int64_t>{0}})   // both index paths
                    editLayer(cached, span, heads, index, factor, plan, entry, model.decoder(), positions, isKey);
        }
    }
    waitForDevice(device);
}

void checkPlanFits(const Session& session, const SteeringPlan& plan) {
    const ModelConfig& c = session.model().config();
    const VisualSpan& span = session.snapshot().visualSpan;
    if (!span.valid()) throw Error("steering: the prompt holds no tokens to steer");
    const std::vector<int64_t> grid{span.gridHeight, span.gridWidth};
    if (!plan.strength.defined() || plan.strength.sizes().vec() != grid)
        throw Error("steering plan: strength map must be [" + std::to_string(span.gridHeight) + ", " + std::to_string(span.gridWidth) +
                    "] (" + (span.isTokenStrip() ? "the prompt's token strip" : "the image's patch grid") + ")");
    for (int l : plan.layers)
        if (l < 0 || l >= c.text.numLayers)
            throw Error("steering plan: layer " + std::to_string(l) + " is outside 0.." + std::to_string(c.text.numLayers - 1));
    for (const auto& [layer, heads] : plan.headMask)
        for (int h : heads)
            if (h < 0 || h >= c.text.numKvHeads)
                throw Error("steering plan: head " + std::to_string(h) + " is outside 0.." + std::to_string(c.text.numKvHeads - 1) + " (KV heads)");
    for (const auto* coeffs : {&plan.ck, &plan.cv})
        if (coeffs->size() != 1 && coeffs->size() != static_cast<size_t>(c.text.numLayers))
            throw Error("steering plan: c_k / c_v need one value or one per layer (" + std::to_string(c.text.numLayers) + ")");
    if (!operatorNeedsVectors(plan.op)) return;
    if (plan.vectors.numLayers() != c.text.numLayers)
        throw Error("steering plan: operator '" + operatorName(plan.op) + "' needs steering vectors for this model (" +
                    std::to_string(c.text.numLayers) + " layers)");
    const bool wantPre = plan.op == SteeringOperator::PreRope;
    if ((plan.vectors.keySpace == KeySpace::PreRope) != wantPre)
        throw Error("steering plan: operator '" + operatorName(plan.op) + "' needs " + (wantPre ? "pre-rope" : "post-rope") +
                    " key vectors, these are " + keySpaceName(plan.vectors.keySpace),
                    {Remedy::MatchingKeySpace});
    if (plan.vectors.perPosition())
        for (int l = 0; l < c.text.numLayers; ++l)
            for (const at::Tensor* t : {&plan.vectors.keys[l], &plan.vectors.values[l]})
                if (t->defined() && t->size(1) != span.length) {
                    const at::Tensor& made = plan.vectors.mask;
                    const std::string madeOn = made.defined() && made.dim() == 2
                                                   ? " (made on a " + std::to_string(made.size(0)) + "x" + std::to_string(made.size(1)) + " grid)"
                                                   : "";
                    throw Error("steering plan: per-position vectors hold " + std::to_string(t->size(1)) + " positions" + madeOn +
                                ", but this image's grid is " + std::to_string(span.gridHeight) + "x" + std::to_string(span.gridWidth) +
                                " = " + std::to_string(span.length) + " cells");
                }
}

double SteeringPlan::ckFor(int layer) const { return coefficient(ck, layer); }
double SteeringPlan::cvFor(int layer) const { return coefficient(cv, layer); }

bool SteeringPlan::touchesLayer(int layer) const {
    return layers.empty() || std::find(layers.begin(), layers.end(), layer) != layers.end();
}

std::vector<int64_t> SteeringPlan::headsFor(int layer, int64_t kvHeads) const {
    auto it = headMask.find(layer);
    if (it == headMask.end() || it->second.empty()) {
        std::vector<int64_t> all(kvHeads);
        for (int64_t h = 0; h < kvHeads; ++h) all[h] = h;
        return all;
    }
    return std::vector<int64_t>(it->second.begin(), it->second.end());
}

SteeredCache applyPlan(const Session& session, const SteeringPlan& plan) {
    const auto t0 = std::chrono::steady_clock::now();
    SteeredCache out;
    out.cache = session.snapshot().clone();
    out.attentionBias = applyPlanTo(session, plan, out.cache);
    waitForDevice(session.model().format().device);
    out.editMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

std::vector<at::Tensor> applyPlanTo(const Session& session, const SteeringPlan& plan, KVCache& cache) {
    c10::NoGradGuard noGrad;
    checkPlanFits(session, plan);
    if (cache.size() != session.snapshot().size() || cache.batch() != 1)
        throw Error("steering plan: the cache to edit must be a single-row copy of the session's snapshot");
    const Model& model = session.model();
    const TextConfig& t = model.config().text;
    const VisualSpan span = session.snapshot().visualSpan;
    const at::Tensor spanPositions = session.snapshot().positions(span.start, span.length);   // [rows, N], for prerope

    std::vector<at::Tensor> attentionBias(size_t(t.numLayers));
    const at::Tensor strength = strengthPerToken(span, plan.strength);   // [span.length]: views mapped, newlines 0
    const int64_t groups = t.numHeads / t.numKvHeads;
    bool edited = false;   // nothing touched -> nothing to propagate (keeps strength 0 bit-identical)
    // The painted positions and their factors s(p)·c, once per distinct c (a plan has one or two).
    std::map<double, std::pair<at::Tensor, at::Tensor>> paintedBy;
    auto paintedFor = [&](double c) -> const std::pair<at::Tensor, at::Tensor>& {
        auto it = paintedBy.find(c);
        if (it == paintedBy.end()) {
            const at::Tensor factorAll = strength * c;
            const at::Tensor index = at::nonzero(factorAll).reshape({-1});
            it = paintedBy.emplace(c, std::make_pair(index, factorAll.index_select(0, index))).first;
        }
        return it->second;
    };

    for (int l = 0; l < t.numLayers; ++l) {
        if (!plan.touchesLayer(l)) continue;
        for (bool isKey : {true, false}) {
            const double c = isKey ? plan.ckFor(l) : plan.cvFor(l);
            if (c == 0.0) continue;
            // Only positions whose factor is nonzero are touched: strength 0 is bit-identical.
            const auto& [index, factor] = paintedFor(c);
            if (index.numel() == 0) continue;
            edited = true;

            if (plan.op == SteeringOperator::Spotlight) {
                if (!isKey) continue;   // spotlight is one bias per position: c_k
                at::Tensor bias = at::zeros({1, t.numHeads, span.end()}, at::kFloat);
                for (int64_t h : plan.headsFor(l, t.numKvHeads))
                    bias.select(0, 0).narrow(0, h * groups, groups).index_copy_(1, index + span.start, factor.unsqueeze(0).expand({groups, -1}).contiguous());
                attentionBias[l] = bias.to(model.format().device);
                continue;
            }
            const at::Tensor entry = isKey ? (l < plan.vectors.numLayers() ? plan.vectors.keys[l] : at::Tensor())
                                           : (l < plan.vectors.numLayers() ? plan.vectors.values[l] : at::Tensor());
            if (operatorNeedsVectors(plan.op) && !entry.defined()) continue;   // no direction for this layer
            const at::Tensor cached = (isKey ? cache.keys(l) : cache.values(l)).select(0, 0);   // [H_kv, S, D]
            editLayer(cached, span, plan.headsFor(l, t.numKvHeads), index, factor, plan, entry, model.decoder(), spanPositions, isKey);
        }
    }

    // Propagate recomputes what follows the edit: the text after the image, or on a token strip
    // every token after the last edited one (the edited tokens themselves keep their edit).
    const at::Tensor painted = at::nonzero(strength).reshape({-1});
    const int64_t recomputeFrom =
        span.isTokenStrip() && painted.numel() > 0 ? span.start + painted.max().item<int64_t>() + 1 : span.end();
    if (edited && plan.mode == PlanMode::Propagate && recomputeFrom < cache.size()) {
        // From the edited cache (spotlight bias included), with the family's prompt attention
        // (prefix-LM: bidirectionally, the last token too).
        ForwardPass pass;
        pass.attentionBias = attentionBias;
        session.recomputePrompt(cache, recomputeFrom, pass);
    }
    return attentionBias;
}

} // namespace kvsteer
