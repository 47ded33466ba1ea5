#include "steer/Atlas.h"

#include "Error.h"
#include "kernels/Kernels.h"
#include "models/Model.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace kvsteer {

namespace {

double msSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int parseLayerIndex(const std::string& text, int numLayers, const std::string& item) {
    try {
        size_t used = 0;
        const int v = std::stoi(text, &used);
        if (used == text.size() && v >= 0 && v < numLayers) return v;
    } catch (const std::exception&) {
    }
    throw Error("atlas layers '" + item + "': expected all, early, middle, late or A-B within 0-" + std::to_string(numLayers - 1));
}

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

std::vector<int> range(int a, int b) {
    std::vector<int> r;
    for (int i = a; i <= b; ++i) r.push_back(i);
    return r;
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

AtlasLayers parseAtlasLayers(const std::string& text, int numLayers) {
    if (numLayers < 1) throw Error("atlas: the model has no layers");
    if (text == "all") return {"all", {}};
    // Thirds by rounding i·n/3, so 4 layers split 0 | 1-2 | 3 and every third holds a layer
    // once n >= 3 (below that a third may be empty: it is refused).
    const char* names[] = {"early", "middle", "late"};
    for (int t = 0; t < 3; ++t)
        if (text == names[t]) {
            const int a = int(std::lround(t * numLayers / 3.0)), b = int(std::lround((t + 1) * numLayers / 3.0)) - 1;
            if (a > b) throw Error("atlas layers '" + text + "': the model's " + std::to_string(numLayers) + " layers have no " + text + " third");
            return {text, range(a, b)};
        }
    const auto dash = text.find('-');
    const int a = parseLayerIndex(text.substr(0, dash), numLayers, text);
    const int b = dash == std::string::npos ? a : parseLayerIndex(text.substr(dash + 1), numLayers, text);
    if (a > b) throw Error("atlas layers '" + text + "': the range is reversed");
    return {text, range(a, b)};
}

std::vector<AtlasLayers> defaultAtlasLayers(int numLayers) {
    std::vector<AtlasLayers> out{parseAtlasLayers("all", numLayers)};
    if (numLayers >= 3)
        for (const char* t : {"early", "middle", "late"}) out.push_back(parseAtlasLayers(t, numLayers));
    return out;
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

std::vector<AtlasSetting> atlasGrid(const SteeringPlan& base, const std::vector<AtlasLayers>& layers, const std::vector<double>& strengths) {
    std::vector<AtlasSetting> grid;
    const double ck0 = base.ck.empty() ? 0 : base.ck.front(), cv0 = base.cv.empty() ? 0 : base.cv.front();
    for (const AtlasLayers& l : layers)
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

// Decodes one batch of edited caches together (row r = cells[r], with its spotlight biases);
// reports each row as it finishes.
void decodeBatch(const Session& session, std::vector<AtlasCell>& cells, KVCache batch, const std::vector<std::vector<at::Tensor>>& biases,
                 int maxNewTokens, Reference ref, const AtlasCellCallback& onCell, const std::atomic<bool>* cancel) {
    const Model& model = session.model();
    const int64_t rows = int64_t(cells.size());

    // Per-row spotlight bias: rows without one (another layer range) get zeros in that layer.
    ForwardPass pass;
    for (const auto& b : biases) pass.attentionBias.resize(std::max(pass.attentionBias.size(), b.size()));
    for (size_t l = 0; l < pass.attentionBias.size(); ++l) {
        at::Tensor like;
        for (const auto& b : biases)
            if (l < b.size() && b[l].defined()) like = b[l];
        if (!like.defined()) continue;
        std::vector<at::Tensor> perRow;
        for (const auto& b : biases) perRow.push_back(l < b.size() && b[l].defined() ? b[l] : at::zeros_like(like));
        pass.attentionBias[l] = at::cat(perRow, 0);
    }

    std::vector<TokenStream> streams;
    streams.reserve(size_t(rows));
    for (int64_t r = 0; r < rows; ++r)
        streams.emplace_back(SamplingParams(), model.tokenizer(), model.config().text.eosTokenIds, true, session.lastPromptToken());
    std::vector<bool> reported(size_t(rows), false);
    std::vector<int64_t> waiting;   // cells that ended before the unsteered answer
    auto classify = [&](AtlasCell& cell) {
        cell.degeneration = degenerationSignals(cell.generation);
        cell.outcome = classifyCell(cell.generation, *ref.answer);
        if (onCell) onCell(cell);
    };
    auto report = [&](int64_t r) {
        AtlasCell& cell = cells[size_t(r)];
        cell.generation = streams[size_t(r)].finish();
        reported[size_t(r)] = true;
        if (cell.index < 0) {   // the unsteered row: now the waiting cells can be classified
            *ref.answer = cell.generation;
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
    // Batch row i decodes cell active[i]. Once half the rows (at least one) have finished, the
    // finished ones are dropped from the batch: a short answer ("blue") does not keep paying for
    // the longest one's steps. Each row's numbers do not depend on the others, so the ids stay
    // those of a separate decode (test_atlas).
    std::vector<int64_t> active(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) active[size_t(r)] = r;
    for (int step = 0; step < maxNewTokens && !active.empty(); ++step) {
        if (cancel && cancel->load()) {
            for (int64_t r = 0; r < rows; ++r) streams[size_t(r)].cancel();
            break;
        }
        std::vector<int64_t> next;
        for (int64_t r : active) next.push_back(streams[size_t(r)].next());   // a finished row is fed its last token, ignored
        const int64_t n = int64_t(active.size());
        at::Tensor logits = session.forwardIds(batch, at::tensor(next, at::TensorOptions().dtype(at::kLong)).view({n, 1}), &pass);
        std::vector<int64_t> keep, still;
        for (int64_t i = 0; i < n; ++i) {
            const int64_t r = active[size_t(i)];
            if (reported[size_t(r)]) continue;
            streams[size_t(r)].step(step, logits.select(0, i));
            if (streams[size_t(r)].done()) report(r);
            else {
                keep.push_back(i);
                still.push_back(r);
            }
        }
        const int64_t finished = n - int64_t(keep.size());
        if (!keep.empty() && finished > 0 && 2 * finished >= n) {
            batch.keepRows(keep);
            const at::Tensor index = at::tensor(keep, at::TensorOptions().dtype(at::kLong));
            for (at::Tensor& b : pass.attentionBias)
                if (b.defined()) b = b.index_select(0, index.to(b.device()));
            active = still;
        } else if (keep.empty()) {
            active.clear();
        }
    }
    if (cancel && cancel->load()) return;   // unfinished rows are not reported
    for (int64_t r = 0; r < rows; ++r)   // ran to the budget: the unsteered row first
        if (!reported[size_t(r)] && cells[size_t(r)].index < 0) report(r);
    for (int64_t r = 0; r < rows; ++r)
        if (!reported[size_t(r)]) report(r);
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
        decodeBatch(session, cells, std::move(batch), biases, options.maxNewTokens, ref, keep, cancel);
        ref.known = ref.known || b == 0;
    }
    result.cancelled = cancelled();
    std::sort(result.cells.begin(), result.cells.end(), [](const AtlasCell& a, const AtlasCell& b) { return a.index < b.index; });
    result.totalMs = msSince(t0);
    return result;
}

} // namespace kvsteer
