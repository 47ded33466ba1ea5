#pragma once
// Side-by-side decoding: the unsteered and the steered stream as a batch of two rows of the one
// decode loop (generate/BatchDecode): row 0 the pristine snapshot, row 1 the edited cache with the
// plan's spotlight bias. Both start from the same snapshot, so every difference is the edit's.
#include "generate/BatchDecode.h"
#include "generate/Session.h"
#include "steer/SteeringPlan.h"

#include <array>
#include <atomic>
#include <functional>

namespace kvsteer {

struct PairEvent {
    int step = 0;
    TokenEvent unsteered, steered;   // a finished stream reports id -1 and no text
    // When captured: per layer [rows.size(), H, S]; batch position i is stream rows[i] (0
    // unsteered, 1 steered). A stream that has ended leaves the batch.
    const std::vector<at::Tensor>* attention = nullptr;
    const std::vector<int64_t>* rows = nullptr;
};
using PairCallback = std::function<void(const PairEvent&)>;

struct GenerationPair {
    Generation unsteered, steered;
    double decodeMs = 0;
};

// The pair's two rows of the decode loop: 0 unsteered (no bias), 1 steered (the plan's spotlight
// bias), both seeded with the last prompt token, with `options`' budget and sampling.
std::array<DecodeRow, 2> pairRows(const Session& session, const SteeredCache& steered, const GenerationOptions& options);

// The pairs' batch before their edits: each snapshot twice, in order, in one buffer, with room for
// `newTokens` more (and a prefix-LM propagate's extra token). Each plan is then applied straight
// into its odd row (applyPlanTo on rowView(2i + 1)) while the even row stays pristine: a pair
// holds one cache more than a single stream (a steered clone stacked with the snapshot held two).
// The snapshots must hold the same number of tokens (one pair for a steer run; eval's questions
// of one length).
KVCache pairBatch(const std::vector<const KVCache*>& snapshots, int newTokens);

// Decodes a pair's batch: row 0 unsteered, row 1 steered, with `steered`'s spotlight bias.
GenerationPair decodePair(const Session& session, KVCache batch, const SteeredCache& steered, const GenerationOptions& options,
                          const PairCallback& onStep = {}, const std::atomic<bool>* cancel = nullptr);

// The same for a steered cache made on its own (applyPlan): stacked with the snapshot first.
GenerationPair decodeSideBySide(const Session& session, const SteeredCache& steered, const GenerationOptions& options,
                                const PairCallback& onStep = {}, const std::atomic<bool>* cancel = nullptr);

} // namespace kvsteer
