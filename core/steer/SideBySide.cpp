#include "steer/SideBySide.h"

#include "Error.h"
#include "models/ModelRegistry.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include <chrono>

namespace kvsteer {

GenerationPair decodeSideBySide(const Session& session, const SteeredCache& steered, const GenerationOptions& options,
                                const PairCallback& onStep, const std::atomic<bool>* cancel) {
    c10::NoGradGuard noGrad;
    const Model& model = session.model();
    const Tokenizer& tok = model.tokenizer();
    const std::vector<int64_t>& eos = model.config().text.eosTokenIds;
    if (steered.cache.size() != session.snapshot().size())
        throw Error("side-by-side: the steered cache must hold as many tokens as the snapshot");

    KVCache pristine = session.snapshot().clone();
    KVCache batch = KVCache::stackRows({&pristine, &steered.cache});
    batch.reserve(batch.size() + options.maxNewTokens + 1);

    // Row 0 gets no bias, row 1 the plan's spotlight bias (if any).
    ForwardPass pass;
    pass.captureAttention = options.captureAttention;
    pass.attentionBias.resize(steered.attentionBias.size());
    for (size_t l = 0; l < steered.attentionBias.size(); ++l)
        if (steered.attentionBias[l].defined())
            pass.attentionBias[l] = at::cat({at::zeros_like(steered.attentionBias[l]), steered.attentionBias[l]}, 0);

    TokenStream a(options.sampling, tok, eos, options.stopAtEos, session.lastPromptToken());
    TokenStream b(options.sampling, tok, eos, options.stopAtEos, session.lastPromptToken());
    GenerationPair result;
    const auto t0 = std::chrono::steady_clock::now();
    for (int step = 0; step < options.maxNewTokens && !(a.done() && b.done()); ++step) {
        if (cancel && cancel->load()) {
            a.cancel();
            b.cancel();
            break;
        }
        // A finished row keeps being fed its last token; its outputs are ignored.
        at::Tensor ids = at::tensor(std::vector<int64_t>{a.next(), b.next()}, at::TensorOptions().dtype(at::kLong)).view({2, 1});
        at::Tensor logits = session.forwardIds(batch, ids, &pass);
        at::Tensor la = logits.select(0, 0), lb = logits.select(0, 1);
        PairEvent ev;
        ev.step = step;
        ev.unsteered = a.step(step, la);
        ev.steered = b.step(step, lb);
        if (options.captureAttention) ev.attention = &pass.attention;
        if (onStep) onStep(ev);
    }
    result.decodeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    result.unsteered = a.finish();
    result.steered = b.finish();
    result.unsteered.decodeMs = result.steered.decodeMs = result.decodeMs;
    return result;
}

} // namespace kvsteer
