#include "steer/Atlas.h"

#include "Elapsed.h"
#include "Error.h"
#include "generate/BatchDecode.h"
#include "kernels/Kernels.h"
#include "models/Model.h"

#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace kvsteer {

namespace {

// Words of an answer, lower-cased, punctuation stripped: what "the same word twice" compares.
std::vector<std::string> words(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string w; in >> w;) {
        std::string clean;
        for (char c : w)
            if (!std::ispunct(static_cast<unsigned char>(c))) clean += char(std::tolower(static_cast<unsigned char>(c)));
        if (!clean.empty()) out.push_back(clean);
    }
    return out;
}

} // namespace

std::string outcomeName(AtlasOutcome o) {
    switch (o) {
    case AtlasOutcome::Same: return "same";
    case AtlasOutcome::Different: return "different";
    case AtlasOutcome::Degenerate: return "degenerate";
    }
    return "?";
}

std::vector<double> logSpaced(double lo, double hi, int count) {
    if (!(lo > 0) || !(hi > 0) || count < 1) throw Error("atlas strengths: log spacing needs lo, hi > 0 and at least one value");
    std::vector<double> out;
    for (int i = 0; i < count; ++i) {
        const double t = count == 1 ? 0.0 : double(i) / (count - 1);
        const double v = lo * std::pow(hi / lo, t);
        const double scale = std::pow(10.0, 2 - int(std::floor(std::log10(v))));   // 3 significant digits
        out.push_back(std::round(v * scale) / scale);
    }
    return out;
}

bool atlasSetsKeys(const SteeringPlan& base) {
    if (base.op == SteeringOperator::Spotlight) return true;
    return std::any_of(base.ck.begin(), base.ck.end(), [](double c) { return c != 0; });
}

bool atlasSetsValues(const SteeringPlan& base) { return base.op != SteeringOperator::Spotlight; }

std::vector<AtlasSetting> atlasGrid(const SteeringPlan& base, const std::vector<LayerRange>& layers, const std::vector<double>& strengths) {
    std::vector<AtlasSetting> grid;
    const double ck0 = base.ck.empty() ? 0 : base.ck.front(), cv0 = base.cv.empty() ? 0 : base.cv.front();
    for (const LayerRange& l : layers)
        for (double s : strengths) grid.push_back({l, atlasSetsKeys(base) ? s : ck0, atlasSetsValues(base) ? s : cv0});
    return grid;
}

SteeringPlan planForSetting(const SteeringPlan& base, const AtlasSetting& setting) {
    SteeringPlan p = base;
    p.layers = setting.layers.layers;
    p.ck = {setting.ck};
    p.cv = {setting.cv};
    return p;
}

DegenerationSignals degenerationSignals(const Generation& g) {
    DegenerationSignals s;
    const std::set<int64_t> distinct(g.ids.begin(), g.ids.end());
    s.distinct = distinct.size();
    s.repetition = g.ids.empty() ? 0.0 : 1.0 - double(distinct.size()) / double(g.ids.size());
    s.noEos = !g.stoppedAtEos && !g.cancelled;
    const std::vector<std::string> w = words(g.text);
    for (size_t i = 1; i < w.size(); ++i) s.stutter = s.stutter || w[i] == w[i - 1];
    s.empty = w.empty();
    return s;
}

AtlasOutcome classifyCell(const Generation& cell, const Generation& unsteered) {
    if (cell.ids == unsteered.ids) return AtlasOutcome::Same;
    const DegenerationSignals c = degenerationSignals(cell), u = degenerationSignals(unsteered);
    // A signal counts only where the unsteered answer does not show it: a model whose own answer
    // runs past the budget or repeats itself is not made degenerate by the edit.
    const bool repetitive = cell.ids.size() >= 4 && c.repetition >= 0.5;
    const bool uRepetitive = unsteered.ids.size() >= 4 && u.repetition >= 0.5;
    if ((c.noEos && !u.noEos) || (c.stutter && !u.stutter) || (repetitive && !uRepetitive) || (c.empty && !u.empty))
        return AtlasOutcome::Degenerate;
    return AtlasOutcome::Different;
}

std::string describeSignals(const DegenerationSignals& s, const Generation& g) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "repetition %.2f (%zu distinct of %zu tokens)", s.repetition, s.distinct, g.ids.size());
    std::string out = buf;
    if (s.noEos) out += ", no EOS within " + std::to_string(g.ids.size()) + " tokens";
    if (s.stutter) out += ", a word repeated";
    if (s.empty) out += ", empty answer";
    return out;
}

namespace {

// What a batch knows of the unsteered answer: known, or decoded by the batch's row whose cell
// index is -1 (the pristine snapshot), in which case cells that end first wait for it.
struct Reference {
    Generation* answer;
    bool known;
    const std::function<void(const Generation&)>* onKnown;
};

// Decodes one batch of edited caches with the one decode loop (row r = cells[r], with its
// spotlight biases, greedy) and classifies each cell as its row ends.
void decodeCells(const Session& session, std::vector<AtlasCell>& cells, KVCache batch, const std::vector<std::vector<at::Tensor>>& biases,
                 int maxNewTokens, Reference ref, const AtlasCellCallback& onCell, const std::atomic<bool>* cancel) {
    std::vector<DecodeRow> rows(cells.size());
    for (size_t r = 0; r < rows.size(); ++r) {
        rows[r].seedToken = session.lastPromptToken();
        rows[r].maxNewTokens = maxNewTokens;
        rows[r].attentionBias = biases[r];
    }
    std::vector<int64_t> waiting;   // cells that ended before the unsteered answer
    auto classify = [&](AtlasCell& cell) {
        cell.degeneration = degenerationSignals(cell.generation);
        cell.outcome = classifyCell(cell.generation, *ref.answer);
        if (onCell) onCell(cell);
    };
    BatchCallbacks callbacks;
    callbacks.onRowDone = [&](int64_t r, const Generation& g) {
        AtlasCell& cell = cells[size_t(r)];
        cell.generation = g;
        if (cell.index < 0) {   // the unsteered row: now the waiting cells can be classified
            *ref.answer = g;
            ref.known = true;
            if (*ref.onKnown) (*ref.onKnown)(*ref.answer);
            for (int64_t w : waiting) classify(cells[size_t(w)]);
            waiting.clear();
        } else if (ref.known) {
            classify(cell);
        } else {
            waiting.push_back(r);
        }
    };
    decodeBatch(session, std::move(batch), rows, callbacks, cancel);
}

// Setting indices ordered by strength (the larger of |c_k| and |c_v|), the grid's order among
// equals.
std::vector<size_t> weakestFirst(const std::vector<AtlasSetting>& settings) {
    std::vector<size_t> order(settings.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto strength = [&](size_t i) { return std::max(std::abs(settings[i].ck), std::abs(settings[i].cv)); };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strength(a) < strength(b); });
    return order;
}

} // namespace

AtlasResult runAtlas(const Session& session, const SteeringPlan& base, const std::vector<AtlasSetting>& settings, const AtlasOptions& options,
                     const AtlasCellCallback& onCell, const std::atomic<bool>* cancel, const std::function<void(const Generation&)>& onUnsteered) {
    c10::NoGradGuard noGrad;
    if (!session.prefilled()) throw Error("atlas: the session has no prefill");
    if (options.maxNewTokens < 1) throw Error("atlas: needs at least one new token per cell");
    const int batchRows = std::clamp<int>(options.batchRows, 1, int(kernels::kSkinnyMaxRows));
    const auto t0 = std::chrono::steady_clock::now();
    AtlasResult result;
    auto cancelled = [&] { return cancel && cancel->load(); };
    Reference ref{&result.unsteered, false, &onUnsteered};
    if (settings.empty()) {
        GenerationOptions g;
        g.maxNewTokens = options.maxNewTokens;
        result.unsteered = session.generate(g, {}, cancel);
        if (onUnsteered) onUnsteered(result.unsteered);
    }

    // Batches: the cells all start from the pristine snapshot, so up to `batchRows` copies of it
    // are stacked into one batch (KVCache::stackRows) and each cell's plan is applied straight
    // into its row (applyPlanTo on KVCache::rowView; propagate recomputes the row's text suffix),
    // with no copy of its own. batchRows is at most kernels::kSkinnyMaxRows, the rows the skinny
    // decode kernel reads each weight once for.
    // The unsteered answer is the first batch's first row (cell index -1, the pristine snapshot),
    // then the settings from the weakest to the strongest, in batches of near-equal size (12
    // cells at 8 rows: 7 + 6 with the unsteered row). Weak settings tend to end as soon as the
    // unsteered answer and strong ones to run to the budget (a degenerate answer has no EOS), so
    // batching by strength lets a batch of short answers stop early instead of every batch
    // waiting for its one long row.
    const std::vector<size_t> order = weakestFirst(settings);
    const int n = int(settings.size()) + 1;
    const int batches = (n + batchRows - 1) / batchRows;
    int next = 0;
    for (int b = 0; b < batches && !settings.empty() && !cancelled(); ++b) {
        const int take = (n - next + (batches - b) - 1) / (batches - b);
        // Every row starts as the pristine snapshot (one copy for the batch) and each cell's plan
        // is applied straight into its row; the unsteered row, first in the first batch, stays
        // pristine.
        const std::vector<const KVCache*> pristine(size_t(take), &session.snapshot());
        KVCache batch = KVCache::stackRows(pristine);
        batch.reserve(batch.size() + options.maxNewTokens + 1);
        std::vector<AtlasCell> cells;
        std::vector<std::vector<at::Tensor>> biases;
        if (next == 0) {
            AtlasCell reference;
            reference.index = -1;
            cells.push_back(reference);
            biases.emplace_back();
        }
        for (int i = std::max(next, 1) - 1; i < next + take - 1 && !cancelled(); ++i) {
            AtlasCell cell;
            cell.index = int(order[size_t(i)]);
            cell.setting = settings[order[size_t(i)]];
            const auto t1 = std::chrono::steady_clock::now();
            KVCache row = batch.rowView(int64_t(cells.size()));
            biases.push_back(applyPlanTo(session, planForSetting(base, cell.setting), row));
            cell.editMs = msSince(t1);
            cells.push_back(std::move(cell));
        }
        next += take;
        if (cancelled()) break;
        const AtlasCellCallback keep = [&](const AtlasCell& c) {
            result.cells.push_back(c);
            if (onCell) onCell(c);
        };
        decodeCells(session, cells, std::move(batch), biases, options.maxNewTokens, ref, keep, cancel);
        ref.known = ref.known || b == 0;
    }
    result.cancelled = cancelled();
    std::sort(result.cells.begin(), result.cells.end(), [](const AtlasCell& a, const AtlasCell& b) { return a.index < b.index; });
    result.totalMs = msSince(t0);
    return result;
}

} // namespace kvsteer
