#pragma once
// Log-probabilities of the model's next-token distribution, for scripts that judge a steering
// setting by more than its greedy answer: the top tokens of a step, one token's log-prob, the KL
// divergence between two streams' distributions, and the log-prob of a given answer (teacher-forced).
// All are of the raw logits (temperature 1, no top-k/top-p cut), computed in float64.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace kvsteer {

class KVCache;
class Session;

struct TokenLogProb {
    int64_t id = 0;
    double logProb = 0;
};

// log softmax of logits [V], float64 on the CPU: what the functions below read, computed once a step.
at::Tensor logProbabilities(const at::Tensor& logits);
// The `k` most likely tokens, most likely first.
std::vector<TokenLogProb> topLogProbs(const at::Tensor& logProbs, int k);
double logProbOf(const at::Tensor& logProbs, int64_t id);
// KL(P || Q) in nats.
double klDivergence(const at::Tensor& logProbsP, const at::Tensor& logProbsQ);

// log p(ids[i] | prompt, ids[0..i-1]) for each i: `cache` continued with `seed` (the last prompt
// token) and then ids[0..n-2], one token at a time, with a spotlight plan's `attentionBias`.
std::vector<double> continuationLogProbs(const Session& session, KVCache cache, int64_t seed, const std::vector<int64_t>& ids,
                                         const std::vector<at::Tensor>& attentionBias = {});

} // namespace kvsteer
