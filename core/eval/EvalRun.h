#pragma once
// runEval: every item of a dataset answered unsteered and steered by each of one or more plans,
// scored, one result per item and plan. With several plans (a study) an item's prompt is
// prefilled and its unsteered answer decoded once; each plan edits its own row of a batch.
// Each item is exactly a `kvsteer steer` run with the same settings (beginSteeredRun, the plan
// applied into its steered row with editSteeredRow, then the pair's rows of the one decode loop),
// so its two answers' ids equal steer's; what differs is only what is shared between items:
//   - prefix reuse: items about the same image share the cache of the prompt up to the end of the
//     image (the template before it, and the image encoder's work). It is computed once per image
//     and the image's questions continue from copies of it as one batch (Session::prefillPrefix /
//     prefillFromShared). A prefix-LM family (PaliGemma) lets the image attend to the question,
//     so it has no reusable prefix: its items are prefilled whole. An edit-only plan is applied
//     after the question's K/V were computed against the unedited image — as in steer.
//   - batching: the unsteered and steered rows of several questions decode as one batch (rows of
//     equal cache length; ended rows leave the batch), up to batchRows rows per forward pass.
// Items are processed grouped by image (in order of first appearance; dataset order inside a
// group), so a resumed run processes the same order. A row's bits do not depend on what else is in
// its batch (BatchDecode.h), so a plan's answers in a study equal `eval` of that plan alone.
#include "eval/EvalDataset.h"
#include "eval/Scoring.h"
#include "generate/Session.h"
#include "steer/Atlas.h"
#include "steer/PlanOptions.h"
#include "steer/SteeringVectors.h"

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

class Model;
struct SynonymTable;

// What steers every item: the options `steer` takes.
struct EvalSteering {
    PlanOptions plan;
    const SteeringVectors* vectors = nullptr;
    SteeringFileInfo vectorsInfo;
    // The spec's MASK. An item's own mask or box wins; without either, this; without it, the
    // vector file's mask, else every cell of the grid (a text prompt: its last token), as steer.
    std::string mask;
    // Or a painted map (the studio's canvas), used where `mask` would be; its grid must be the
    // item's (an item on an image of another grid is an error naming both).
    at::Tensor strength;
};

struct EvalOptions {
    EvalMetric metric = EvalMetric::Pope;
    const SynonymTable* chairTable = nullptr;   // chair: the synonym table (eval/Chair.h)
    GenerationOptions generation;   // the budget asked for (cut to the context as in steer)
    int batchRows = 8;              // decode rows per forward pass, two per question (2..8)
    bool prefixReuse = true;
    bool skipBad = false;           // an item that fails (unreadable image, box outside it) is reported and skipped
    // Also measure each steered answer beyond its text: the first step's KL and, for an item with
    // a target, the target's teacher-forced log-prob under both caches (steer --json --target).
    bool measures = false;
};

struct EvalItemResult {
    const EvalItem* item = nullptr;
    int plan = 0;                   // which of runEval's plans steered it
    Generation unsteered, steered;
    ScoredAnswer unsteeredScore, steeredScore;
    AtlasOutcome outcome = AtlasOutcome::Same;
    bool prefixReused = false;      // this item's prompt continued from a shared prefix
    double prefillMs = 0;           // this item's own prefill (the shared prefix counted where it was computed)
    double editMs = 0;
    double decodeMs = 0;            // its rows' share of their batches' decode (the unsteered row and every plan's)
    std::string cellsSource;        // where the steered cells came from: box, mask, spec mask, painted map, vectors' mask or all
    int64_t cells = 0;              // the cells (or tokens) the plan steers: nonzero strength
    // With EvalOptions::measures (NaN otherwise, or without a target):
    double firstStepKl = std::numeric_limits<double>::quiet_NaN();   // KL(unsteered || steered) of the first token, nats
    double targetLogProbUnsteered = std::numeric_limits<double>::quiet_NaN();
    double targetLogProbSteered = std::numeric_limits<double>::quiet_NaN();
};

struct EvalCallbacks {
    // As each batch ends, in processing order; an item's results (one per plan, in plan order)
    // come one after another, and only once all its plans are decoded.
    std::function<void(const EvalItemResult&)> onItem;
    std::function<void(const EvalItem&, const std::string& error)> onSkipped;
    std::function<bool()> stopRequested;                 // asked between batches
};

struct EvalTotals {
    int items = 0;
    int prefixes = 0;               // shared prefixes computed
    double prefillMs = 0, decodeMs = 0, totalMs = 0;
    bool stopped = false;
};

// The processing order described above.
std::vector<const EvalItem*> evalOrder(const std::vector<const EvalItem*>& items);

// The score of one answer against an item (chair: against its objects, through `chairTable`).
ScoredAnswer scoreAnswer(EvalMetric metric, const Generation& answer, const EvalItem& item, const SynonymTable* chairTable = nullptr);

EvalTotals runEval(const std::shared_ptr<const Model>& model, const std::vector<const EvalItem*>& items, const std::vector<EvalSteering>& plans,
                   const EvalOptions& options, const EvalCallbacks& callbacks);

// One plan: eval's case.
EvalTotals runEval(const std::shared_ptr<const Model>& model, const std::vector<const EvalItem*>& items, const EvalSteering& steering,
                   const EvalOptions& options, const EvalCallbacks& callbacks);

} // namespace kvsteer
