#include "pipeline/SideBySide.h"

#include "Error.h"
#include "model/LlavaModel.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>

namespace kvsteer {

namespace {

// One row's decoding state: sampler, detokenizer, what it produced, whether it is done.
struct Stream {
    Sampler sampler;
    StreamingDetokenizer detok;
    Generation out;
    int64_t next;
    bool done = false;
    Stream(const SamplingParams& p, const Tokenizer& tok, int64_t seed) : sampler(p), detok(tok), next(seed) {}

    TokenEvent step(int index, const at::Tensor& logits, const Tokenizer& tok, const std::vector<int64_t>& eos, bool stopAtEos) {
        TokenEvent ev;
        ev.step = index;
        if (done) {
            ev.id = -1;
            return ev;
        }
        ev.id = sampler.next(logits);
        ev.logits = &logits;
        out.ids.push_back(ev.id);
        ev.eos = std::find(eos.begin(), eos.end(), ev.id) != eos.end();
        if (!ev.eos) ev.text = ev.id < tok.vocabSize() ? detok.push(ev.id) : "\xEF\xBF\xBD";
        out.text += ev.text;
        if (ev.eos && stopAtEos) {
            out.stoppedAtEos = true;
            done = true;
        }
        next = ev.id;
        return ev;
    }
};

} // namespace

GenerationPair decodeSideBySide(const Session& session, const SteeredCache& steered, const GenerationOptions& options,
                                const PairCallback& onStep, const std::atomic<bool>* cancel) {
    c10::NoGradGuard noGrad;
    const LlavaModel& model = session.model();
    const Tokenizer& tok = model.tokenizer();
    const std::vector<int64_t>& eos = model.config().text.eosTokenIds;
    if (steered.cache.size() != session.snapshot().size())
        throw Error("side-by-side: the steered cache must hold as many tokens as the snapshot");

    KVCache pristine = session.snapshot().clone();
    KVCache batch = KVCache::stackRows({&pristine, &steered.cache});
    batch.reserve(batch.size() + options.maxNewTokens + 1);

    // Row 0 gets no bias, row 1 the plan's spotlight bias (if any).
    ForwardHooks hooks;
    hooks.captureAttention = options.captureAttention;
    hooks.attentionBias.resize(steered.attentionBias.size());
    for (size_t l = 0; l < steered.attentionBias.size(); ++l)
        if (steered.attentionBias[l].defined())
            hooks.attentionBias[l] = at::cat({at::zeros_like(steered.attentionBias[l]), steered.attentionBias[l]}, 0);

    Stream a(options.sampling, tok, session.lastPromptToken()), b(options.sampling, tok, session.lastPromptToken());
    GenerationPair result;
    const auto t0 = std::chrono::steady_clock::now();
    for (int step = 0; step < options.maxNewTokens && !(a.done && b.done); ++step) {
        if (cancel && cancel->load()) {
            a.out.cancelled = b.out.cancelled = true;
            break;
        }
        // A finished row keeps being fed its last token; its outputs are ignored.
        at::Tensor ids = at::tensor(std::vector<int64_t>{a.next, b.next}, at::TensorOptions().dtype(at::kLong)).view({2, 1});
        at::Tensor logits = session.forwardIds(batch, ids, &hooks);
        at::Tensor la = logits.select(0, 0), lb = logits.select(0, 1);
        PairEvent ev;
        ev.step = step;
        ev.unsteered = a.step(step, la, tok, eos, options.stopAtEos);
        ev.steered = b.step(step, lb, tok, eos, options.stopAtEos);
        if (options.captureAttention) ev.attention = &hooks.attention;
        if (onStep) onStep(ev);
    }
    a.out.text += a.detok.finish();
    b.out.text += b.detok.finish();
    result.decodeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    a.out.decodeMs = b.out.decodeMs = result.decodeMs;
    result.unsteered = std::move(a.out);
    result.steered = std::move(b.out);
    return result;
}

} // namespace kvsteer
