#include "steer/SteeredRun.h"

#include "Runtime.h"
#include "models/Model.h"

#include <ATen/ops/any.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <atomic>
#include <chrono>

namespace kvsteer {

bool ensurePrefilled(Session& session, const Prompt& prompt, int64_t reserveTokens, const std::function<bool()>& stopRequested) {
    if (session.holds(prompt)) return true;
    return session.prefill(prompt, reserveTokens, stopRequested);
}

SteeredRunStart beginSteeredRun(Session& session, const Prompt& prompt, const SteeringPlan& plan, const GenerationOptions& generation,
                                const std::function<bool()>& stopRequested, bool* cancelled) {
    c10::NoGradGuard noGrad;
    const TextConfig& text = session.model().config().text;
    SteeredRunStart start;
    *cancelled = false;

    // 1. The prefill, or the kept snapshot of the same prompt.
    start.promptTokens = int64_t(prompt.ids.size());
    start.contextTokens = text.maxPositionEmbeddings;
    const int asked = generation.maxNewTokens;
    start.maxNewTokens = std::max(1, newTokensThatFit(text, start.promptTokens, asked));
    start.notices.budgetCut = start.maxNewTokens < asked;
    start.notices.askedTokens = asked;
    if (!session.holds(prompt)) {
        const auto t0 = std::chrono::steady_clock::now();
        if (!session.prefill(prompt, start.maxNewTokens, stopRequested)) {
            *cancelled = true;
            return start;
        }
        start.prefilled = true;
        start.prefillMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    if (stopRequested && stopRequested()) {
        *cancelled = true;
        return start;
    }
    // Without the vectors its operator needs, the plan edits nothing (and there is nothing to check).
    start.notices.noVectors = operatorNeedsVectors(plan.op) && plan.vectors.numLayers() == 0;
    start.notices.nothingPainted = !plan.strength.defined() || !at::any(plan.strength).item<bool>();
    if (!start.notices.noVectors) checkPlanFits(session, plan);
    return start;
}

void editSteeredRow(const Session& session, const SteeringPlan& plan, KVCache& batch, int64_t row, SteeredRunStart& start) {
    KVCache steered = batch.rowView(row, session.snapshot());   // its own tokens: propagate re-feeds them
    const auto t0 = std::chrono::steady_clock::now();
    if (!start.notices.noVectors) start.steered.attentionBias = applyPlanTo(session, plan, steered);
    waitForDevice(session.model().format().device);   // a GPU's time is the edit's, not its launches'
    start.steered.editMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    start.steered.cache = std::move(steered);
}

SteeredRunStart prepareSteeredRun(Session& session, const Prompt& prompt, const SteeringPlan& plan, const GenerationOptions& generation,
                                  const std::function<bool()>& stopRequested, bool* cancelled) {
    SteeredRunStart start = beginSteeredRun(session, prompt, plan, generation, stopRequested, cancelled);
    if (*cancelled) return start;
    // 2. The edit, into row 1 of the pair's batch; row 0 stays the pristine snapshot.
    start.pair = pairBatch({&session.snapshot()}, start.maxNewTokens);
    editSteeredRow(session, plan, start.pair, 1, start);
    return start;
}

SteeredRunResult runSteered(Session& session, const Prompt& prompt, const SteeringPlan& plan, const GenerationOptions& generation,
                            const SteeredRunCallbacks& callbacks) {
    SteeredRunResult result;
    auto stop = [&] { return callbacks.stopRequested && callbacks.stopRequested(); };
    result.start = prepareSteeredRun(session, prompt, plan, generation, callbacks.stopRequested, &result.cancelled);
    if (result.cancelled) return result;
    const SteeredRunStart& start = result.start;

    // 3-4. Both answers, with the budget that fits.
    GenerationOptions fitted = generation;
    fitted.maxNewTokens = start.maxNewTokens;
    if (callbacks.onStart) callbacks.onStart(start);
    std::atomic<bool> cancel{stop()};
    const PairCallback onStep = [&](const PairEvent& ev) {
        if (callbacks.onStep) callbacks.onStep(ev);
        if (stop()) cancel = true;
    };
    result.pair = decodePair(session, std::move(result.start.pair), start.steered, fitted, onStep, &cancel);
    result.cancelled = result.pair.steered.cancelled || result.pair.unsteered.cancelled;
    return result;
}

} // namespace kvsteer
