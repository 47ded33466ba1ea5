#pragma once
// Next-token choice: greedy (temperature 0) or seeded sampling with temperature, top-k, top-p.
// Each stream owns its Sampler, so two streams decoded as one batch keep independent RNG state.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <random>

namespace kvsteer {

struct SamplingParams {
    double temperature = 0.0;   // 0 = greedy
    int topK = 0;               // 0 = no limit
    double topP = 1.0;          // 1 = no nucleus cut
    uint64_t seed = 0;
    bool greedy() const { return temperature <= 0.0; }
};

class Sampler {
public:
    explicit Sampler(const SamplingParams& params);
    int64_t next(const at::Tensor& logits);   // logits [V]
    const SamplingParams& params() const { return params_; }

private:
    SamplingParams params_;
    std::mt19937_64 rng_;
};

} // namespace kvsteer
