#pragma once
// SteeredRun: the one place a steered run is put together — `kvsteer steer`, the studio's Run,
// bench and eval all call runSteered:
//   1. prefill the prompt, unless the session already holds exactly this prompt (the kept
//      snapshot is reused: a new plan on the same image costs no prefill);
//   2. applyPlan on a copy of the snapshot (the plan comes from makePlan, over prompt.span, so a
//      plan that does not fit is refused before any prefill);
//   3. the token budget cut to what fits the model's context after the prompt;
//   4. both answers decoded side by side (one batch of two rows of the decode loop).
// What a person should know about the run (no vectors, nothing painted, a cut budget) comes back
// as RunNotices; the CLI words them with its flags, the studio with its menus.
#include "generate/Session.h"
#include "steer/SideBySide.h"
#include "steer/SteeringPlan.h"

#include <functional>

namespace kvsteer {

struct RunNotices {
    // The operator needs steering vectors and the plan holds none: the steered row is the
    // unedited snapshot, so both answers are the unsteered model's.
    bool noVectors = false;
    bool nothingPainted = false;   // the strength map is zero everywhere: the edit changes nothing
    // The budget asked for did not fit the context: it was cut to maxNewTokens.
    bool budgetCut = false;
    int askedTokens = 0;
};

// What is known before the first answer token (the studio shows it, then streams the tokens).
struct SteeredRunStart {
    SteeredCache steered;           // the edited cache (the studio keeps it for its heatmaps)
    RunNotices notices;
    int maxNewTokens = 0;           // the budget both streams decode with
    int64_t promptTokens = 0;
    int64_t contextTokens = 0;      // the model's max_position_embeddings
    bool prefilled = false;         // this run prefilled (false: the session's snapshot was reused)
    double prefillMs = 0;           // image encoding included; 0 when reused
};

struct SteeredRunResult {
    SteeredRunStart start;
    GenerationPair pair;
    bool cancelled = false;         // stopped during the prefill or the decode
};

struct SteeredRunCallbacks {
    std::function<void(const SteeredRunStart&)> onStart;
    PairCallback onStep;
    // Asked between prefill layers and before every decode step; true ends the run early.
    std::function<bool()> stopRequested;
};

// Steps 1-3 alone: the session prefilled (or reused), the edited cache and the budget. Eval
// prepares several questions this way and decodes their pairs as one batch. `cancelled` is set
// when stopRequested ended the prefill (nothing else is then filled in).
SteeredRunStart prepareSteeredRun(Session& session, const Prompt& prompt, const SteeringPlan& plan, const GenerationOptions& generation,
                                  const std::function<bool()>& stopRequested, bool* cancelled);

// Prefills `session` with `prompt` unless it already holds it. False when stopRequested ended the
// prefill (the session is then unprefilled).
bool ensurePrefilled(Session& session, const Prompt& prompt, int64_t reserveTokens, const std::function<bool()>& stopRequested = {});

// The run described above, `generation.maxNewTokens` being the budget asked for. Throws
// kvsteer::Error when the plan does not fit the prompt (another grid, vectors of the wrong shape).
SteeredRunResult runSteered(Session& session, const Prompt& prompt, const SteeringPlan& plan, const GenerationOptions& generation,
                            const SteeredRunCallbacks& callbacks = {});

} // namespace kvsteer
