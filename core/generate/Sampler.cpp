#include "generate/Sampler.h"

#include "Error.h"
#include "kernels/Kernels.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/sort.h>

#include <cmath>

namespace kvsteer {

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
    if (params.temperature < 0) throw Error("temperature must be >= 0 (got " + std::to_string(params.temperature) + ")");
    if (params.topP <= 0 || params.topP > 1) throw Error("top-p must be in (0, 1] (got " + std::to_string(params.topP) + ")");
    if (params.topK < 0) throw Error("top-k must be >= 0");
}

int64_t Sampler::next(const at::Tensor& logits) {
    at::Tensor l = logits.to(at::kCPU).to(at::kFloat).reshape({-1}).contiguous();
    if (params_.greedy()) return kernels::argmax(l.data_ptr<float>(), l.numel());

    // Sort once, then cut the tail by top-k and by cumulative probability (top-p), keeping at least one.
    auto sorted = at::sort(l / params_.temperature, -1, /*descending=*/true);
    at::Tensor values = std::get<0>(sorted), order = std::get<1>(sorted);
    int64_t keep = values.size(0);
    if (params_.topK > 0) keep = std::min<int64_t>(keep, params_.topK);
    at::Tensor probs = at::softmax(values.narrow(0, 0, keep), -1);
    if (params_.topP < 1.0) {
        const float* p = probs.data_ptr<float>();
        double cumulative = 0;
        int64_t cut = 0;
        while (cut < keep) {
            cumulative += p[cut++];
            if (cumulative >= params_.topP) break;
        }
        keep = cut;
        probs = probs.narrow(0, 0, keep) / probs.narrow(0, 0, keep).sum();
    }
    // One uniform draw from our own RNG makes the choice reproducible from the seed alone.
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const double u = uniform(rng_);
    probs = probs.contiguous();
    const float* p = probs.data_ptr<float>();
    double cumulative = 0;
    int64_t chosen = keep - 1;
    for (int64_t i = 0; i < keep; ++i) {
        cumulative += p[i];
        if (u < cumulative) {
            chosen = i;
            break;
        }
    }
    return order[chosen].item<int64_t>();
}

} // namespace kvsteer
