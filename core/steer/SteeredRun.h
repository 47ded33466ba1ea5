#pragma once
// SteeredRun: the one place a steered run is put together — `kvsteer steer`, the studio's Run
// and bench call runSteered; eval takes its steps for several questions at once:
//   1. prefill the prompt, unless the session already holds exactly this prompt (the kept
//      snapshot is reused: a new plan on the same image costs no prefill);
//   2. the plan applied straight into the steered row of the pair's batch, a copy of the snapshot
//      (the plan comes from makePlan, over prompt.span, so a plan that does not fit is refused
//      before any prefill);
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
    // The edited cache: a view of its row of the batch it decodes in (the studio keeps it for its
    // heatmaps; it keeps that batch's buffer alive).
    SteeredCache steered;
    KVCache pair;                   // prepareSteeredRun's batch of the two rows; runSteered decodes it
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

// Steps 1 and 3: the session prefilled (or reused), the budget and the notices; the plan checked
// against the prompt (kvsteer::Error if it does not fit) but not applied yet. `cancelled` is set
// when stopRequested ended the prefill (nothing else is then filled in).
SteeredRunStart beginSteeredRun(Session& session, const Prompt& prompt, const SteeringPlan& plan, const GenerationOptions& generation,
                                const std::function<bool()>& stopRequested, bool* cancelled);

// Step 2 into any batch: the plan applied to row `row` of `batch`, which holds a copy of the
// session's snapshot there; start.steered becomes a view of that row. Eval stacks several
// questions' pairs as one batch and edits each steered row this way, with no copy of its own.
void editSteeredRow(const Session& session, const SteeringPlan& plan, KVCache& batch, int64_t row, SteeredRunStart& start);

// Steps 1-3: beginSteeredRun, then the edit into row 1 of start.pair (pairBatch).
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
