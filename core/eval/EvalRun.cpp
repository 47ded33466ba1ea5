#include "eval/EvalRun.h"

#include "Error.h"
#include "eval/BoxCells.h"
#include "generate/BatchDecode.h"
#include "io/Image.h"
#include "models/Model.h"
#include "steer/Mask.h"
#include "steer/SideBySide.h"
#include "steer/SteeredRun.h"

#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <utility>

namespace kvsteer {

namespace {

constexpr int64_t kPreparedBytes = int64_t(2) << 30;

double msSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The bytes a question's caches take, float32, room for the prompt and the answer: its snapshot
// while it waits, and then its two rows of the decode batch (the unsteered row and the steered).
int64_t preparedBytes(const TextConfig& t, int64_t tokens) {
    return 2 * 2 * int64_t(t.numLayers) * t.numKvHeads * t.headDim * tokens * int64_t(sizeof(float));
}

// One question on its way to decoding: its prompt and plan, then its own session (the snapshot),
// the edited cache and the budget.
struct PreparedItem {
    const EvalItem* item = nullptr;
    Prompt prompt;
    SteeringPlan plan;
    std::unique_ptr<Session> session;
    SteeredRunStart start;
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
    EvalRunner(const std::shared_ptr<const Model>& model, const EvalSteering& steering, const EvalOptions& options, EvalTotals& totals,
               size_t maxWaiting)
        : model_(model), steering_(steering), options_(options), totals_(totals), maxWaiting_(maxWaiting) {}

    void add(const EvalItem& item, std::vector<PreparedItem>& ready) {
        if (!waiting_.empty() && item.image != current_.path) finish(ready);
        try {
            PreparedItem p;
            p.item = &item;
            const ImageU8* image = imageFor(item);
            p.prompt = image ? buildImagePrompt(*model_, item.question, false, current_.prepared) : buildPrompt(*model_, item.question, false, nullptr);
            p.plan = makePlan(steering_.plan, steering_.vectors, steering_.vectorsInfo, strengthFor(item, p.prompt, image), p.prompt.span,
                              model_->config().text.numLayers);
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
            bytes += preparedBytes(model_->config().text, int64_t(p.prompt.ids.size()) + options_.generation.maxNewTokens);
        return bytes;
    }

    // Prefills and edits every waiting item, appending them to `ready` in the order they came.
    void finish(std::vector<PreparedItem>& ready) {
        continueFromPrefix();
        for (PreparedItem& p : waiting_) {
            try {
                bool cancelled = false;
                p.start = beginSteeredRun(*p.session, p.prompt, p.plan, options_.generation, {}, &cancelled);
                if (!p.prefixReused && p.prefillMs == 0) p.prefillMs = p.start.prefillMs;
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

    at::Tensor strengthFor(const EvalItem& item, const Prompt& prompt, const ImageU8* image) const {
        if (item.box) return boxStrength(*item.box, *image, prompt);
        const std::string& mask = !item.mask.empty() ? item.mask : steering_.mask;
        if (mask.empty()) return steering_.strength;
        return loadMask(mask, prompt.span.gridHeight, prompt.span.gridWidth);
    }

    void fail(const EvalItem& item, const std::string& error) {
        failures_.push_back({&item, "item " + item.id + " (line " + std::to_string(item.line) + "): " + error});
    }

    std::shared_ptr<const Model> model_;
    const EvalSteering& steering_;
    const EvalOptions& options_;
    EvalTotals& totals_;
    size_t maxWaiting_;
    ImageState current_;
    std::vector<PreparedItem> waiting_;
    std::vector<FailedItem> failures_;
};

// Decodes the prepared items' pairs: items whose caches hold the same number of tokens at the same
// positions share a batch (two rows each, up to batchRows rows). Each item's snapshot goes into the
// batch twice and its plan is applied straight into the second copy (as prepareSteeredRun does
// into its pair's batch), so an item costs its two rows and no steered copy besides. A stop
// request ends it after the current batch: only the items decoded come back.
std::vector<EvalItemResult> decodeItems(std::vector<PreparedItem>& prepared, const EvalOptions& options, EvalTotals& totals,
                                        const std::function<bool()>& stopRequested) {
    std::vector<EvalItemResult> results(prepared.size());
    std::vector<bool> decoded(prepared.size(), false);
    std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> groups;
    for (size_t i = 0; i < prepared.size(); ++i) {
        const KVCache& s = prepared[i].session->snapshot();
        groups[{s.size(), s.positionOffset}].push_back(i);
    }
    const size_t perBatch = size_t(std::max(1, options.batchRows / 2));
    for (const auto& [key, members] : groups)
        for (size_t first = 0; first < members.size(); first += perBatch) {
            if (stopRequested && stopRequested()) break;
            const size_t end = std::min(members.size(), first + perBatch);
            std::vector<const KVCache*> snapshots;
            int longest = 0;
            for (size_t k = first; k < end; ++k) {
                const PreparedItem& p = prepared[members[k]];
                snapshots.push_back(&p.session->snapshot());
                longest = std::max(longest, p.start.maxNewTokens);
            }
            KVCache batch = pairBatch(snapshots, longest);
            std::vector<DecodeRow> rows;
            for (size_t k = first; k < end; ++k) {
                PreparedItem& p = prepared[members[k]];
                editSteeredRow(*p.session, p.plan, batch, int64_t(2 * (k - first) + 1), p.start);
                GenerationOptions g = options.generation;
                g.maxNewTokens = p.start.maxNewTokens;
                const std::array<DecodeRow, 2> pair = pairRows(*p.session, p.start.steered, g);
                rows.push_back(pair[0]);
                rows.push_back(pair[1]);
            }
            const BatchResult r = decodeBatch(*prepared[members[first]].session, std::move(batch), rows);
            totals.decodeMs += r.decodeMs;
            for (size_t k = first; k < end; ++k) {
                EvalItemResult& out = results[members[k]];
                out.unsteered = r.rows[2 * (k - first)];
                out.steered = r.rows[2 * (k - first) + 1];
                out.decodeMs = r.decodeMs;
                decoded[members[k]] = true;
            }
        }
    std::vector<EvalItemResult> done;
    for (size_t i = 0; i < prepared.size(); ++i) {
        if (!decoded[i]) continue;
        EvalItemResult& out = results[i];
        const PreparedItem& p = prepared[i];
        out.item = p.item;
        out.prefixReused = p.prefixReused;
        out.prefillMs = p.prefillMs;
        out.editMs = p.start.steered.editMs;
        out.unsteeredScore = scoreAnswer(options.metric, out.unsteered, *p.item);
        out.steeredScore = scoreAnswer(options.metric, out.steered, *p.item);
        out.outcome = classifyCell(out.steered, out.unsteered);
        done.push_back(std::move(out));
    }
    return done;
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

ScoredAnswer scoreAnswer(EvalMetric metric, const Generation& answer, const EvalItem& item) {
    ScoredAnswer s;
    s.correct = answerCorrect(metric, answer.text, item.answers);
    s.saidYes = popeSaysYes(answer.text);
    s.labelYes = !item.answers.empty() && normalizeAnswer(item.answers.front()) == "yes";
    return s;
}

EvalTotals runEval(const std::shared_ptr<const Model>& model, const std::vector<const EvalItem*>& items, const EvalSteering& steering,
                   const EvalOptions& options, const EvalCallbacks& callbacks) {
    c10::NoGradGuard noGrad;
    if (options.batchRows < 2 || options.batchRows > 8) throw Error("eval: a batch holds 2 to 8 rows (two per question)");
    const auto t0 = std::chrono::steady_clock::now();
    EvalTotals totals;
    // Items are prepared eight batches at a time, so questions whose prompts have the same length
    // find each other and fill a batch (a chunk's questions come in a few lengths, and each
    // length's last batch may be partly empty); at most about kPreparedBytes of caches are held
    // at once, prepared and waiting together (a float32 7B cache is ~0.5 MB a token: two
    // questions' worth).
    const TextConfig& t = model->config().text;
    const size_t perChunk = size_t(options.batchRows / 2) * 8;
    EvalRunner runner(model, steering, options, totals, perChunk);
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
            for (const PreparedItem& p : prepared) bytes += preparedBytes(t, p.session->snapshot().capacity());
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
        for (const EvalItemResult& r : decodeItems(prepared, options, totals, callbacks.stopRequested)) {
            ++totals.items;
            if (callbacks.onItem) callbacks.onItem(r);
        }
    }
    totals.totalMs = msSince(t0);
    return totals;
}

} // namespace kvsteer
