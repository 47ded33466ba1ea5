#pragma once
// Atlas: where steering works. A grid of settings (strength values × layer ranges) is run from
// one kept snapshot, each cell decoded greedily for a few tokens, and every cell is classified
// against the unsteered answer. `kvsteer sweep` and the studio's atlas both call runAtlas, so the
// CLI table and the studio picture come from the same code and agree.
//
// Outcome classes (classifyCell), against the unsteered greedy answer U of the same budget:
//   same        the cell's ids equal U's
//   degenerate  the answer lost its form — any of these signals that U itself does not show:
//                 no-eos      no end-of-sequence within the token budget (U ended)
//                 stutter     the same word twice in a row ("blue blue no")
//                 repetition  ≥ 4 tokens of which half or more repeat an earlier one
//                 empty       the answer is empty (EOS first) while U is not
//   different   otherwise: another answer in a sound form ("blue" for "red")
//
// Every cell's ids equal a separate applyPlan + Session::decode of its plan bit for bit
// (test_atlas): the cells are only batched rows of the one decode loop (generate/BatchDecode).
#include "generate/Session.h"
#include "steer/LayerRange.h"
#include "steer/SteeringPlan.h"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace kvsteer {

enum class AtlasOutcome { Same, Different, Degenerate };
std::string outcomeName(AtlasOutcome o);   // same | different | degenerate

// `count` log-spaced strengths from `lo` to `hi` (both > 0), rounded to 3 significant digits.
std::vector<double> logSpaced(double lo, double hi, int count);

// One setting: a layer range and the coefficients. Strength values set c_v, and c_k too when the
// operator edits keys (see atlasSetsKeys); the other coefficient keeps the base plan's value.
struct AtlasSetting {
    LayerRange layers;
    double ck = 0, cv = 0;
};

// Whether a strength value sets c_k: when the operator uses keys — spotlight (it uses only c_k),
// or any other operator whose base plan edits keys (c_k nonzero). The demo's red→blue file
// suggests c_k 0, so its atlas sweeps c_v alone.
bool atlasSetsKeys(const SteeringPlan& base);
bool atlasSetsValues(const SteeringPlan& base);   // false for spotlight (it uses only c_k)

// The grid in row-major order: one row per layer range, one column per strength.
std::vector<AtlasSetting> atlasGrid(const SteeringPlan& base, const std::vector<LayerRange>& layers, const std::vector<double>& strengths);

struct DegenerationSignals {
    double repetition = 0;    // fraction of tokens that repeat an earlier one
    size_t distinct = 0;      // distinct token ids
    bool noEos = false;       // no end-of-sequence within the budget
    bool stutter = false;     // the same word twice in a row
    bool empty = false;       // nothing but EOS
};
DegenerationSignals degenerationSignals(const Generation& g);
// The classes documented above.
AtlasOutcome classifyCell(const Generation& cell, const Generation& unsteered);
// "no EOS in 8 tokens, stutter, repetition 0.40 (3 distinct)": what made a cell degenerate.
std::string describeSignals(const DegenerationSignals& s, const Generation& g);

struct AtlasCell {
    int index = 0;            // into the settings (row-major)
    AtlasSetting setting;
    Generation generation;
    DegenerationSignals degeneration;   // (not "signals": a Qt keyword)
    AtlasOutcome outcome = AtlasOutcome::Same;
    double editMs = 0;        // applying the plan to its row of the batch
};
using AtlasCellCallback = std::function<void(const AtlasCell&)>;

struct AtlasOptions {
    int maxNewTokens = 8;     // greedy, stopping at EOS
    int batchRows = 8;        // cells per forward pass (1..8); 1 = separate decodes
};

struct AtlasResult {
    Generation unsteered;
    std::vector<AtlasCell> cells;   // in the settings' order; only the finished ones when cancelled
    bool cancelled = false;
    double totalMs = 0;
};

// The plan a setting gives: `base` with its layers and coefficients replaced.
SteeringPlan planForSetting(const SteeringPlan& base, const AtlasSetting& setting);

// Runs every setting from the session's kept snapshot. The unsteered answer is decoded as the
// first batch's first row (the pristine snapshot, no edit); cells of that batch that end before it
// wait for it to be classified. `onCell` is called as each cell finishes (in the calling thread),
// `onUnsteered` once the reference is known. `cancel`, when it becomes true, stops between decode
// steps and between plans.
AtlasResult runAtlas(const Session& session, const SteeringPlan& base, const std::vector<AtlasSetting>& settings,
                     const AtlasOptions& options, const AtlasCellCallback& onCell = {}, const std::atomic<bool>* cancel = nullptr,
                     const std::function<void(const Generation&)>& onUnsteered = {});

} // namespace kvsteer
