#include "generate/BatchDecode.h"

#include "Error.h"
#include "generate/DecodeGraph.h"
#include "generate/Session.h"
#include "kernels/Kernels.h"
#include "models/Model.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>

namespace kvsteer {

namespace {

at::Tensor longTensor(const std::vector<int64_t>& v) { return at::tensor(v, at::TensorOptions().dtype(at::kLong)); }

} // namespace

std::vector<at::Tensor> stackAttentionBiases(const std::vector<const std::vector<at::Tensor>*>& perRow) {
    size_t layers = 0;
    for (const auto* b : perRow) layers = std::max(layers, b ? b->size() : 0);
    auto biasOf = [](const std::vector<at::Tensor>* b, size_t l) { return b && l < b->size() ? (*b)[l] : at::Tensor(); };
    std::vector<at::Tensor> stacked(layers);
    for (size_t l = 0; l < layers; ++l) {
        at::Tensor like;
        for (const auto* b : perRow)
            if (biasOf(b, l).defined()) like = biasOf(b, l);
        if (!like.defined()) continue;
        std::vector<at::Tensor> rows;
        for (const auto* b : perRow) rows.push_back(biasOf(b, l).defined() ? biasOf(b, l) : at::zeros_like(like));
        stacked[l] = at::cat(rows, 0);
    }
    bool any = false;
    for (const at::Tensor& t : stacked) any = any || t.defined();
    return any ? stacked : std::vector<at::Tensor>();
}

BatchResult decodeBatch(const Session& session, KVCache batch, const std::vector<DecodeRow>& rows, const BatchCallbacks& callbacks,
                        const std::atomic<bool>* cancel, bool captureAttention) {
    c10::NoGradGuard noGrad;
    const int64_t n = int64_t(rows.size());
    if (n != batch.batch()) throw Error("decode: the batch holds " + std::to_string(batch.batch()) + " rows but " + std::to_string(n) + " were described");
    if (n > kernels::kSkinnyMaxRows) throw Error("decode: at most " + std::to_string(kernels::kSkinnyMaxRows) + " rows decode as one batch");
    const Model& model = session.model();
    const auto t0 = std::chrono::steady_clock::now();

    int longest = 0;
    for (const DecodeRow& r : rows) longest = std::max(longest, r.maxNewTokens);
    batch.reserve(batch.size() + longest);   // the seed and every token but the last are fed

    ForwardPass pass;
    pass.captureAttention = captureAttention;
    {
        std::vector<const std::vector<at::Tensor>*> biases;
        for (const DecodeRow& r : rows) biases.push_back(&r.attentionBias);
        pass.attentionBias = stackAttentionBiases(biases);
    }
    DecodeGraph graph(session, pass);
    std::vector<TokenStream> streams;
    streams.reserve(size_t(n));
    for (const DecodeRow& r : rows) streams.emplace_back(r.sampling, model.tokenizer(), model.config().text.eosTokenIds, r.stopAtEos, r.seedToken);

    BatchResult result;
    result.rows.resize(size_t(n));
    std::vector<bool> ended(size_t(n), false);
    auto end = [&](int64_t r) {
        ended[size_t(r)] = true;
        result.rows[size_t(r)] = streams[size_t(r)].finish();
        if (callbacks.onRowDone) callbacks.onRowDone(r, result.rows[size_t(r)]);
    };
    for (int64_t r = 0; r < n; ++r)
        if (rows[size_t(r)].maxNewTokens < 1) end(r);

    // active[i]: the row batch position i decodes. Ended rows stay in the batch (fed their last
    // token, outputs ignored) until half of it has ended; then they are dropped.
    std::vector<int64_t> active;
    for (int64_t r = 0; r < n; ++r) active.push_back(r);
    for (int step = 0; step < longest; ++step) {
        if (std::all_of(active.begin(), active.end(), [&](int64_t r) { return ended[size_t(r)]; })) break;
        if (cancel && cancel->load()) {
            result.cancelled = true;
            break;
        }
        std::vector<int64_t> next;
        for (int64_t r : active) next.push_back(streams[size_t(r)].next());
        const int64_t m = int64_t(active.size());
        at::Tensor logits = graph.step(batch, next, pass);   // on CUDA: the step replayed as one graph
        if (!logits.defined()) logits = session.forwardIds(batch, longTensor(next).view({m, 1}), &pass);

        BatchStep ev;
        ev.step = step;
        ev.tokens.resize(size_t(n));
        for (int64_t r = 0; r < n; ++r) {
            ev.tokens[size_t(r)].step = step;
            ev.tokens[size_t(r)].id = -1;
        }
        std::vector<at::Tensor> rowLogits(static_cast<size_t>(n));
        std::vector<int64_t> endedNow;
        for (int64_t i = 0; i < m; ++i) {
            const int64_t r = active[size_t(i)];
            if (ended[size_t(r)]) continue;
            rowLogits[size_t(r)] = logits.select(0, i);
            ev.tokens[size_t(r)] = streams[size_t(r)].step(step, rowLogits[size_t(r)]);
            if (streams[size_t(r)].done() || step + 1 >= rows[size_t(r)].maxNewTokens) endedNow.push_back(r);
        }
        if (captureAttention) {
            ev.attention = &pass.attention;
            ev.active = &active;
        }
        if (callbacks.onStep) callbacks.onStep(ev);
        for (int64_t r : endedNow) end(r);

        // Drop the ended rows once they are half of the batch (and some row still runs).
        std::vector<int64_t> keep, still;
        for (int64_t i = 0; i < m; ++i)
            if (!ended[size_t(active[size_t(i)])]) {
                keep.push_back(i);
                still.push_back(active[size_t(i)]);
            }
        const int64_t gone = m - int64_t(keep.size());
        if (!keep.empty() && gone > 0 && 2 * gone >= m) {
            batch.keepRows(keep);
            const at::Tensor index = longTensor(keep);
            for (at::Tensor& b : pass.attentionBias)
                if (b.defined()) b = b.index_select(0, index.to(b.device()));
            active = still;
        }
    }
    result.decodeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (int64_t r = 0; r < n; ++r) {
        if (!ended[size_t(r)]) {   // cancelled before it ended: what it had, marked, not reported
            streams[size_t(r)].cancel();
            result.rows[size_t(r)] = streams[size_t(r)].finish();
        }
        result.rows[size_t(r)].decodeMs = result.decodeMs;
    }
    return result;
}

} // namespace kvsteer
