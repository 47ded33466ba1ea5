#include "generate/LogProbs.h"

#include "Error.h"
#include "generate/Session.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/log_softmax.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/topk.h>
#include <c10/core/GradMode.h>

namespace kvsteer {

at::Tensor logProbabilities(const at::Tensor& logits) { return at::log_softmax(logits.reshape({-1}).to(at::kCPU, at::kDouble), 0); }

std::vector<TokenLogProb> topLogProbs(const at::Tensor& lp, int k) {
    const auto [values, indices] = at::topk(lp, std::min<int64_t>(k, lp.numel()));
    const auto v = values.accessor<double, 1>();
    const auto id = indices.accessor<int64_t, 1>();
    std::vector<TokenLogProb> out;
    for (int64_t i = 0; i < values.size(0); ++i) out.push_back({id[i], v[i]});
    return out;
}

double logProbOf(const at::Tensor& lp, int64_t id) {
    if (id < 0 || id >= lp.numel()) throw Error("logProbOf: token id " + std::to_string(id) + " is outside the vocabulary");
    return lp[id].item<double>();
}

double klDivergence(const at::Tensor& p, const at::Tensor& q) {
    return at::sum(at::exp(p) * (p - q)).item<double>();
}

std::vector<double> continuationLogProbs(const Session& session, KVCache cache, int64_t seed, const std::vector<int64_t>& ids,
                                         const std::vector<at::Tensor>& attentionBias) {
    c10::NoGradGuard noGrad;
    // `cache` is a copy of the caller's (a KVCache copy shares storage and grows its own fill, as
    // Session::decode's does): the caller's cache keeps its length.
    ForwardPass pass;
    pass.attentionBias = attentionBias;   // keys past the bias's length get none: it covers the prompt only
    std::vector<double> out;
    int64_t fed = seed;
    for (int64_t id : ids) {
        const at::Tensor logits = session.feed(cache, {fed}, &pass);
        out.push_back(logProbOf(logProbabilities(logits), id));
        fed = id;
    }
    return out;
}

} // namespace kvsteer
