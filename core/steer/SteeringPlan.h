#pragma once
// SteeringPlan: what to change in the cache, where, and how strongly — and applying it.
//
// A plan edits only the span's positions (the image's visual tokens, or a text prompt's token
// strip) with nonzero strength s(p) (times the layer's
// coefficient), only in its layers and KV heads; every other element of the cache stays
// bitwise as the pristine snapshot had it. Operators, for a cached vector x at position p:
//   add            x += s c Δ
//   norm           y = x + s c Δ, then x = y ‖x‖ / ‖y‖            (direction moves, norm kept)
//   prerope        keys: x += s c R(p) Δ, R(p) the RoPE rotation of position p; values as add
//   scale          x *= 1 + s c                                   (no vectors needed)
//   spotlight      no cache edit: s c is added to the attention logits of p while decoding
//   ablate         x += s c (target - x), target = mean over the visual span (or zero)
// c is c_k for keys and c_v for values (spotlight uses c_k). Modes: edit-only keeps the K/V the
// text after the image got from the unsteered image; propagate recomputes that text suffix from
// the edited cache, so the prompt itself sees the steered image (Session::recomputePrompt: for a
// prefix-LM family every text position is recomputed bidirectionally against the edited image).
// Either way the last prompt token is fed against the edited cache when decoding starts, so the
// first answer token is steered in every family. On a token strip, propagate recomputes every
// token after the last edited one.
#include "cache/KVCache.h"
#include "steer/SteeringOperator.h"
#include "steer/SteeringVectors.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

namespace kvsteer {

class Session;

enum class PlanMode { EditOnly, Propagate };

struct SteeringPlan {
    at::Tensor strength;                 // [grid_h, grid_w] float32; the painted map (1 x N on a token strip)
    std::vector<int> layers;             // empty = every layer
    std::map<int, std::vector<int>> headMask;   // layer -> KV heads; a layer not listed = all heads
    std::vector<double> ck{1.0};         // one value, or one per model layer
    std::vector<double> cv{1.0};
    SteeringOperator op = SteeringOperator::Add;
    PlanMode mode = PlanMode::EditOnly;
    AblateTarget ablateTarget = AblateTarget::Mean;
    SteeringVectors vectors;

    double ckFor(int layer) const;
    double cvFor(int layer) const;
    bool touchesLayer(int layer) const;
    std::vector<int64_t> headsFor(int layer, int64_t kvHeads) const;
};

// The result of applying a plan to a session's snapshot.
struct SteeredCache {
    KVCache cache;
    // Per layer, [1, H, S'] additive attention-logit bias for decoding (spotlight), else empty.
    std::vector<at::Tensor> attentionBias;
    double editMs = 0;
};

// Throws kvsteer::Error, naming what does not fit, when the plan cannot edit the session's
// snapshot (see applyPlan). applyPlan and applyPlanTo check first; a caller that edits later
// (eval, into a batch) checks when it prepares.
void checkPlanFits(const Session& session, const SteeringPlan& plan);

// Clones the session's pristine snapshot and applies the plan (and the propagate recompute).
// Throws kvsteer::Error when the plan does not fit the model or the prompt (no image, wrong grid,
// vectors of the wrong shape or key space).
SteeredCache applyPlan(const Session& session, const SteeringPlan& plan);

// The same edit in place: `cache` is a single-row copy of the session's snapshot (a clone, or a
// row of a batch from KVCache::rowView, with room for a prefix-LM propagate's extra token).
// Returns the per-layer spotlight biases ([1, H, S'] or empty). The atlas edits each cell's row of
// its batch this way, with no copy of its own.
std::vector<at::Tensor> applyPlanTo(const Session& session, const SteeringPlan& plan, KVCache& cache);

// Runs every operator's edit once on a small tensor of the cache's dtype and device, so that on a
// GPU the kernels an edit uses are loaded with the model and the first steered answer pays
// nothing extra (CUDA loads a kernel on its first use: issue 30 saw a first edit take 70 ms on an
// H200). On CPU it costs microseconds. The CLI, the studio's worker and bench call it after loading.
void warmUpEdits(const Model& model);

} // namespace kvsteer
