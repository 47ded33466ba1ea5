#include "eval/EvalRun.h"

#include "Elapsed.h"
#include "Error.h"
#include "eval/BoxCells.h"
#include "eval/Chair.h"
#include "generate/BatchDecode.h"
#include "generate/LogProbs.h"
#include "io/Image.h"
#include "models/Model.h"
#include "steer/SpanMask.h"
#include "steer/SideBySide.h"
#include "steer/SteeredRun.h"

#include <ATen/ops/count_nonzero.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <utility>

namespace kvsteer {

namespace {

constexpr int64_t kPreparedBytes = int64_t(2) << 30;

// The bytes a question's caches take, float32, room for the prompt and the answer: its snapshot
// while it waits, and then its rows of the decode batch (the unsteered row and one per plan).
int64_t preparedBytes(const TextConfig& t, int64_t tokens, size_t plans) {
    const int64_t oneCache = 2 * int64_t(t.numLayers) * t.numKvHeads * t.headDim * tokens * int64_t(sizeof(float));   // K and V
    return int64_t(1 + plans) * oneCache;
}

// One question on its way to decoding: its prompt and plans (one per steering plan of the run),
// then its own session (the snapshot), the edited caches and the budget.
struct PreparedItem {
    const EvalItem* item = nullptr;
    Prompt prompt;
    std::vector<SteeringPlan> plans;
    std::vector<std::string> cellsSources;   // per plan: where its cells came from
    std::unique_ptr<Session> session;
    std::vector<SteeredRunStart> starts;     // per plan
    bool prefixReused = false;
    double prefillMs = 0;
};

struct FailedItem {
    const EvalItem* item;
    std::string error;
};

// The image the items being prepared are about, with its shared prefix once computed.
struct ImageState {
    std::string path;
    std::optional<ImageU8> image;
    PromptImage prepared;   // through the model's processor once, shared by all the image's questions
    std::optional<KVCache> prefix;
};

// Takes items in evalOrder and makes them ready to decode. The questions about one image wait
// until the image changes (or finish(), or the cap on waiting caches), so that they continue from
// the image's prefix as one batch (Session::prefillFromShared).
class EvalRunner {
public:
    EvalRunner(const std::shared_ptr<const Model>& model, const std::vector<EvalSteering>& steerings, const EvalOptions& options,
               EvalTotals& totals, size_t maxWaiting)
        : model_(model), steerings_(steerings), options_(options), totals_(totals), maxWaiting_(maxWaiting) {}

    void add(const EvalItem& item, std::vector<PreparedItem>& ready) {
        if (!waiting_.empty() && item.image != current_.path) finish(ready);
        try {
            PreparedItem p;
            p.item = &item;
            const ImageU8* image = imageFor(item);
            p.prompt = image ? buildImagePrompt(*model_, item.question, false, current_.prepared) : buildPrompt(*model_, item.question, false, nullptr);
            std::string ownSource;   // the item's box or mask holds under every plan: read once
            const at::Tensor own = ownStrength(item, p.prompt, image, ownSource);
            for (const EvalSteering& steering : steerings_) {
                std::string source = ownSource;
                const at::Tensor strength = own.defined() ? own : specStrength(steering, p.prompt, source);
                p.plans.push_back(makePlan(steering.plan, steering.vectors, steering.vectorsInfo, strength, p.prompt.span,
                                           model_->config().text.numLayers));
                p.cellsSources.push_back(source);
            }
            p.session = std::make_unique<Session>(model_);
            waiting_.push_back(std::move(p));
        } catch (const Error& e) {
            fail(item, e.what());
        }
        if (waiting_.size() >= maxWaiting_ || waitingBytes() >= kPreparedBytes) finish(ready);
    }

    // What the waiting questions' caches will take once prepared.
    int64_t waitingBytes() const {
        int64_t bytes = 0;
        for (const PreparedItem& p : waiting_)
            bytes += preparedBytes(model_->config().text, int64_t(p.prompt.ids.size()) + options_.generation.maxNewTokens, steerings_.size());
        return bytes;
    }

    // Prefills and edits every waiting item, appending them to `ready` in the order they came.
    void finish(std::vector<PreparedItem>& ready) {
        continueFromPrefix();
        for (PreparedItem& p : waiting_) {
            try {
                bool cancelled = false;
                // The first plan's start prefills (unless the prefix batch did); the others find
                // the session holding the prompt and only check that their plan fits it.
                for (const SteeringPlan& plan : p.plans)
                    p.starts.push_back(beginSteeredRun(*p.session, p.prompt, plan, options_.generation, {}, &cancelled));
                if (!p.prefixReused && p.prefillMs == 0) p.prefillMs = p.starts.front().prefillMs;
                totals_.prefillMs += p.prefillMs;
                ready.push_back(std::move(p));
            } catch (const Error& e) {
                fail(*p.item, e.what());
            }
        }
        waiting_.clear();
    }

    std::vector<FailedItem> takeFailures() { return std::exchange(failures_, {}); }

private:
    // The waiting prompts that share the image's prefix continue from it as one batch.
    void continueFromPrefix() {
        std::vector<std::vector<PreparedItem*>> batches;
        for (PreparedItem& p : waiting_) {
            if (!reusable(p.prompt)) continue;
            auto same = std::find_if(batches.begin(), batches.end(), [&](const auto& b) { return sameLayout(b.front()->prompt, p.prompt); });
            if (same == batches.end()) batches.push_back({&p});
            else same->push_back(&p);
        }
        for (const std::vector<PreparedItem*>& batch : batches) {
            const Prompt& first = batch.front()->prompt;
            const int64_t shared = first.span.end();
            const auto t0 = std::chrono::steady_clock::now();
            const bool computed = !(current_.prefix && current_.prefix->size() == shared &&
                                    std::equal(current_.prefix->tokens().begin(), current_.prefix->tokens().end(), first.ids.begin()));
            std::vector<Session*> sessions;
            std::vector<const Prompt*> prompts;
            for (PreparedItem* p : batch) {
                sessions.push_back(p->session.get());
                prompts.push_back(&p->prompt);
            }
            try {
                if (computed) {
                    current_.prefix = batch.front()->session->prefillPrefix(first, shared);
                    ++totals_.prefixes;
                }
                const double prefixMs = msSince(t0);
                Session::prefillFromShared(*current_.prefix, sessions, prompts, options_.generation.maxNewTokens);
                for (PreparedItem* p : batch) {
                    p->prefixReused = !computed || p != batch.front();
                    p->prefillMs = p->session->prefillMs() + (p->prefixReused ? 0 : prefixMs);
                }
            } catch (const Error&) {
                // Left unprefilled: beginSteeredRun prefills each whole, or names what fails.
            }
        }
    }

    bool reusable(const Prompt& prompt) const {
        const int64_t shared = prompt.hasImage ? prompt.span.end() : 0;
        return options_.prefixReuse && shared > 0 && shared + 1 < int64_t(prompt.ids.size()) &&
               model_->promptAttention() == PromptAttention::Causal;
    }

    // Whether two prompts can continue from one prefix in one batch: the image ends at the same
    // token, and they lay out alike up to there and after it.
    static bool sameLayout(const Prompt& a, const Prompt& b) {
        return a.span.end() == b.span.end() && Session::continueAlike(a, b, a.span.end());
    }

    const ImageU8* imageFor(const EvalItem& item) {
        if (item.image.empty()) return nullptr;
        if (item.image != current_.path) {
            current_ = ImageState();
            current_.image = loadImage(item.image);
            current_.prepared = prepareImage(*model_, *current_.image);
            current_.path = item.image;   // only once it loaded and was processed
        }
        return &*current_.image;
    }

    // The item's own cells: its box, else its mask; undefined (and `source` "") without either.
    static at::Tensor ownStrength(const EvalItem& item, const Prompt& prompt, const ImageU8* image, std::string& source) {
        if (item.box) {
            source = "box";
            return boxStrength(*item.box, *image, prompt);
        }
        if (item.mask.empty()) return at::Tensor();
        source = "mask " + item.mask;
        return loadSpanMask(item.mask, prompt.span);
    }

    // Without them, a steering's: its mask or painted map, else (undefined) the vector file's mask
    // or every cell.
    static at::Tensor specStrength(const EvalSteering& steering, const Prompt& prompt, std::string& source) {
        if (!steering.mask.empty()) {
            source = "spec mask " + steering.mask;
            return loadSpanMask(steering.mask, prompt.span);
        }
        if (steering.strength.defined()) source = "painted map";
        return steering.strength;
    }

    void fail(const EvalItem& item, const std::string& error) {
        failures_.push_back({&item, "item " + item.id + " (line " + std::to_string(item.line) + "): " + error});
    }

    std::shared_ptr<const Model> model_;
    const std::vector<EvalSteering>& steerings_;
    const EvalOptions& options_;
    EvalTotals& totals_;
    size_t maxWaiting_;
    ImageState current_;
    std::vector<PreparedItem> waiting_;
    std::vector<FailedItem> failures_;
};

// One row of a decode batch: an item's unsteered answer (plan -1) or one plan's steered answer.
struct RowJob {
    size_t item = 0;
    int plan = -1;
};

DecodeRow decodeRowFor(const PreparedItem& p, const GenerationOptions& generation, const std::vector<at::Tensor>& attentionBias) {
    DecodeRow row;
    row.seedToken = p.session->lastPromptToken();
    row.maxNewTokens = p.starts.front().maxNewTokens;
    row.sampling = generation.sampling;
    row.stopAtEos = generation.stopAtEos;
    row.attentionBias = attentionBias;
    return row;
}

// The total log-prob of `ids` as the answer under `cache` (teacher-forced, as steer --target).
double targetLogProb(const Session& session, const KVCache& cache, const std::vector<int64_t>& ids, const std::vector<at::Tensor>& bias) {
    double total = 0;
    for (double lp : continuationLogProbs(session, cache, session.lastPromptToken(), ids, bias)) total += lp;
    return total;
}

// The item's target as the tokenizer splits it (the answer's tokens, no BOS).
std::vector<int64_t> targetIdsOf(const PreparedItem& p) { return p.session->model().tokenizer().encode(p.item->target, false); }

// Decodes the prepared items' rows: per item its unsteered row, then one steered row per plan, all
// of items whose caches hold the same number of tokens at the same positions in batches of
// batchRows rows (eval's one plan: its pairs, batchRows / 2 questions a batch). Each row starts
// from a copy of its item's snapshot, and a plan is applied straight into its row (as
// prepareSteeredRun does into its pair's batch), so a plan costs its row and no copy besides. A
// stop request ends it after the current batch. An item's results (one per plan) go to `done` as
// soon as its last row is decoded, so progress moves batch by batch, not a chunk at a time; items
// not decoded whole when a stop came are not reported.
void decodeItems(std::vector<PreparedItem>& prepared, const EvalOptions& options, EvalTotals& totals, const std::function<bool()>& stopRequested,
                 const std::function<void(EvalItemResult&&)>& done) {
    const size_t planCount = prepared.empty() ? 0 : prepared.front().plans.size();
    std::vector<std::vector<EvalItemResult>> results(prepared.size(), std::vector<EvalItemResult>(planCount));
    std::vector<Generation> unsteered(prepared.size());
    std::vector<at::Tensor> firstLogProbs(prepared.size());   // the unsteered row's first step (measures)
    std::vector<size_t> rowsDone(prepared.size(), 0);
    std::vector<bool> reported(prepared.size(), false);
    std::map<std::pair<int64_t, int64_t>, std::vector<RowJob>> groups;
    for (size_t i = 0; i < prepared.size(); ++i) {
        const KVCache& s = prepared[i].session->snapshot();
        for (int plan = -1; plan < int(planCount); ++plan) groups[{s.size(), s.positionOffset}].push_back({i, plan});
    }
    // Item i's results, once its unsteered row and every plan's row are decoded.
    auto finishItem = [&](size_t i) {
        const PreparedItem& p = prepared[i];
        const bool target = options.measures && !p.item->target.empty();
        const double targetUnsteered = target ? targetLogProb(*p.session, p.session->snapshot(), targetIdsOf(p), {}) : std::nan("");
        for (size_t k = 0; k < planCount; ++k) {
            EvalItemResult& out = results[i][k];
            const SteeredRunStart& start = p.starts[k];
            out.item = p.item;
            out.plan = int(k);
            out.unsteered = unsteered[i];
            out.prefixReused = p.prefixReused;
            out.prefillMs = k == 0 ? p.prefillMs : 0;
            out.cellsSource = p.cellsSources[k];
            out.cells = start.notices.nothingPainted ? 0 : at::count_nonzero(p.plans[k].strength).item<int64_t>();
            out.unsteeredScore = scoreAnswer(options.metric, out.unsteered, *p.item, options.chairTable);
            out.steeredScore = scoreAnswer(options.metric, out.steered, *p.item, options.chairTable);
            out.outcome = classifyCell(out.steered, out.unsteered);
            out.targetLogProbUnsteered = targetUnsteered;
            done(std::move(out));
        }
    };
    const size_t perBatch = size_t(options.batchRows);
    for (const auto& [key, jobs] : groups)
        for (size_t first = 0; first < jobs.size(); first += perBatch) {
            if (stopRequested && stopRequested()) break;
            const std::vector<RowJob> batchJobs(jobs.begin() + long(first), jobs.begin() + long(std::min(jobs.size(), first + perBatch)));
            std::vector<const KVCache*> snapshots;
            int longest = 0;
            for (const RowJob& job : batchJobs) {
                snapshots.push_back(&prepared[job.item].session->snapshot());
                longest = std::max(longest, prepared[job.item].starts.front().maxNewTokens);
            }
            KVCache batch = KVCache::stackRows(snapshots, snapshots.front()->size() + longest + 1);
            std::vector<DecodeRow> rows;
            for (size_t r = 0; r < batchJobs.size(); ++r) {
                PreparedItem& p = prepared[batchJobs[r].item];
                const int plan = batchJobs[r].plan;
                if (plan < 0) {
                    rows.push_back(decodeRowFor(p, options.generation, {}));
                    continue;
                }
                editSteeredRow(*p.session, p.plans[size_t(plan)], batch, int64_t(r), p.starts[size_t(plan)]);
                rows.push_back(decodeRowFor(p, options.generation, p.starts[size_t(plan)].steered.attentionBias));
            }
            BatchCallbacks measure;
            if (options.measures)
                measure.onStep = [&](const BatchStep& step) {
                    if (step.step != 0) return;
                    for (size_t r = 0; r < batchJobs.size(); ++r) {   // the unsteered row comes before its plans' rows
                        const RowJob& job = batchJobs[r];
                        const at::Tensor lp = logProbabilities(*step.tokens[r].logits);
                        if (job.plan < 0) firstLogProbs[job.item] = lp;
                        else results[job.item][size_t(job.plan)].firstStepKl = klDivergence(firstLogProbs[job.item], lp);
                    }
                };
            const BatchResult decoded = decodeBatch(*prepared[batchJobs.front().item].session, std::move(batch), rows, measure);
            totals.decodeMs += decoded.decodeMs;
            for (size_t r = 0; r < batchJobs.size(); ++r) {
                const RowJob& job = batchJobs[r];
                PreparedItem& p = prepared[job.item];
                ++rowsDone[job.item];
                for (EvalItemResult& out : results[job.item]) out.decodeMs += decoded.decodeMs / double(batchJobs.size());
                if (job.plan < 0) {
                    unsteered[job.item] = decoded.rows[r];
                    continue;
                }
                EvalItemResult& out = results[job.item][size_t(job.plan)];
                out.steered = decoded.rows[r];
                SteeredCache& steered = p.starts[size_t(job.plan)].steered;
                if (options.measures && !p.item->target.empty())
                    out.targetLogProbSteered = targetLogProb(*p.session, steered.cache, targetIdsOf(p), steered.attentionBias);
                // The row's view holds its batch's buffers: let them go now, so a study holds one
                // batch at a time however many plans it has.
                out.editMs = steered.editMs;
                steered = SteeredCache();
            }
            for (const RowJob& job : batchJobs)   // the items whose last row this batch decoded
                if (rowsDone[job.item] == planCount + 1 && !reported[job.item]) {
                    reported[job.item] = true;
                    finishItem(job.item);
                }
        }
}

} // namespace

std::vector<const EvalItem*> evalOrder(const std::vector<const EvalItem*>& items) {
    std::map<std::string, size_t> firstSeen;
    for (const EvalItem* it : items) firstSeen.emplace(it->image, firstSeen.size());
    std::vector<const EvalItem*> order = items;
    std::stable_sort(order.begin(), order.end(),
                     [&](const EvalItem* a, const EvalItem* b) { return firstSeen.at(a->image) < firstSeen.at(b->image); });
    return order;
}

ScoredAnswer scoreAnswer(EvalMetric metric, const Generation& answer, const EvalItem& item, const SynonymTable* chairTable) {
    ScoredAnswer s;
    if (metric == EvalMetric::Chair) {
        if (!chairTable) throw Error("chair: no synonym table");
        const ChairScore c = scoreCaption(*chairTable, answer.text, item.objects);
        s.correct = !c.anyHallucinated;
        s.mentions = c.mentions;
        s.hallucinated = c.hallucinated;
        s.groundTruth = c.groundTruth;
        s.recalled = c.recalled;
        return s;
    }
    s.correct = answerCorrect(metric, answer.text, item.answers);
    s.saidYes = popeSaysYes(answer.text);
    s.labelYes = !item.answers.empty() && normalizeAnswer(item.answers.front()) == "yes";
    return s;
}

EvalTotals runEval(const std::shared_ptr<const Model>& model, const std::vector<const EvalItem*>& items, const EvalSteering& steering,
                   const EvalOptions& options, const EvalCallbacks& callbacks) {
    return runEval(model, items, std::vector<EvalSteering>{steering}, options, callbacks);
}

EvalTotals runEval(const std::shared_ptr<const Model>& model, const std::vector<const EvalItem*>& items, const std::vector<EvalSteering>& plans,
                   const EvalOptions& options, const EvalCallbacks& callbacks) {
    c10::NoGradGuard noGrad;
    if (options.batchRows < 2 || options.batchRows > 8) throw Error("eval: a batch holds 2 to 8 rows (two per question)");
    if (plans.empty()) throw Error("eval: no steering plan");
    const auto t0 = std::chrono::steady_clock::now();
    EvalTotals totals;
    // Items are prepared eight batches at a time, so questions whose prompts have the same length
    // find each other and fill a batch (a chunk's questions come in a few lengths, and each
    // length's last batch may be partly empty); at most about kPreparedBytes of caches are held
    // at once, prepared and waiting together (a float32 7B cache is ~0.5 MB a token: two
    // questions' worth).
    const TextConfig& t = model->config().text;
    const size_t perChunk = size_t(options.batchRows / 2) * 8;
    EvalRunner runner(model, plans, options, totals, perChunk);
    const std::vector<const EvalItem*> order = evalOrder(items);
    auto reportFailures = [&] {
        for (const FailedItem& f : runner.takeFailures()) {
            if (!options.skipBad) throw Error(f.error, {Remedy::SkipBadItems});
            if (callbacks.onSkipped) callbacks.onSkipped(*f.item, f.error);
        }
    };
    for (size_t next = 0; next < order.size();) {
        if (callbacks.stopRequested && callbacks.stopRequested()) {
            totals.stopped = true;
            break;
        }
        std::vector<PreparedItem> prepared;
        auto held = [&] {
            int64_t bytes = runner.waitingBytes();
            for (const PreparedItem& p : prepared) bytes += preparedBytes(t, p.session->snapshot().capacity(), plans.size());
            return bytes;
        };
        while (prepared.size() < perChunk && held() < kPreparedBytes && next < order.size()) {
            runner.add(*order[next++], prepared);
            reportFailures();
        }
        // The last items, or a chunk still all waiting when the budget was reached: prepared now.
        if (next == order.size() || prepared.empty()) {
            runner.finish(prepared);
            reportFailures();
        }
        decodeItems(prepared, options, totals, callbacks.stopRequested, [&](EvalItemResult&& r) {
            ++totals.items;
            if (callbacks.onItem) callbacks.onItem(r);
        });
    }
    totals.totalMs = msSince(t0);
    return totals;
}

} // namespace kvsteer
