#pragma once
// Side-by-side decoding: the unsteered and the steered stream as ONE batch of two rows (the
// pristine snapshot and the edited cache), one forward pass per step, each row with its own
// sampler and detokenizer. Both start from the same snapshot, so every difference is the edit's.
#include "generate/Session.h"
#include "steer/SteeringPlan.h"

#include <atomic>
#include <functional>

namespace kvsteer {

struct PairEvent {
    int step = 0;
    TokenEvent unsteered, steered;   // a finished stream reports id -1 and no text
    const std::vector<at::Tensor>* attention = nullptr;   // per layer [2, H, S] (row 0 unsteered), when captured
};
using PairCallback = std::function<void(const PairEvent&)>;

struct GenerationPair {
    Generation unsteered, steered;
    double decodeMs = 0;
};

GenerationPair decodeSideBySide(const Session& session, const SteeredCache& steered, const GenerationOptions& options,
                                const PairCallback& onStep = {}, const std::atomic<bool>* cancel = nullptr);

} // namespace kvsteer
