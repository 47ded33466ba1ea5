#include "nn/DecodeAttention.h"

#include "kernels/Kernels.h"

#include "ThreadPool.h"
#include <ATen/ops/empty.h>

#include <algorithm>

namespace kvsteer {

namespace {

bool cpuFloat(const at::Tensor& t) { return t.device().is_cpu() && t.scalar_type() == at::kFloat; }

} // namespace

bool decodeAttentionTakes(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values, const at::Tensor& bias) {
    return cpuFloat(q) && cpuFloat(keys) && cpuFloat(values) && (!bias.defined() || cpuFloat(bias)) && q.dim() == 4 &&
           q.size(2) == 1 && keys.dim() == 4 && keys.stride(3) == 1 && values.stride(3) == 1 && (!bias.defined() || bias.dim() == 5);
}

at::Tensor decodeAttention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values, const at::Tensor& bias,
                           double scale, at::Tensor* probs) {
    const int64_t b = q.size(0), h = q.size(1), hd = q.size(3);
    const int64_t hkv = keys.size(1), g = h / hkv, s = keys.size(2);
    const at::Tensor qc = q.contiguous();                        // [B, H, 1, hd]
    const at::Tensor bc = bias.defined() ? bias.contiguous() : bias;   // [Bb, H_kv or 1, G or 1, 1, S']
    at::Tensor out = at::empty({b, h, hd}, q.options());
    at::Tensor p = at::empty({b, hkv, g, s}, q.options());      // the softmax, kept for *probs
    const float* qp = qc.data_ptr<float>();
    const float* kp = keys.data_ptr<float>();
    const float* vp = values.data_ptr<float>();
    float* op = out.data_ptr<float>();
    float* pp = p.data_ptr<float>();

    // One (batch row, KV head) pair: its G query heads against its S keys.
    auto pair = [&](int64_t bi, int64_t kv) {
        const float* k = kp + bi * keys.stride(0) + kv * keys.stride(1);
        const float* v = vp + bi * values.stride(0) + kv * values.stride(1);
        // scores [G, S] = q [G, hd] · keys [S, hd]ᵀ: a matrix-vector product of the kernels' skinny
        // kind (the keys are the "weight" rows, float32), SIMD on every ISA.
        const kernels::WeightView keyRows{k, kernels::WeightType::F32, s, hd, keys.stride(2)};
        kernels::skinnyMatmul(qp + (bi * h + kv * g) * hd, g, hd, keyRows, pp + (bi * hkv + kv) * g * s, s);
        for (int64_t gi = 0; gi < g; ++gi) {
            const int64_t head = kv * g + gi;
            float* scores = pp + ((bi * hkv + kv) * g + gi) * s;
            for (int64_t j = 0; j < s; ++j) scores[j] *= float(scale);
            if (bc.defined()) {
                const int64_t bb = bc.size(0) == 1 ? 0 : bi, bk = bc.size(1) == 1 ? 0 : kv, bg = bc.size(2) == 1 ? 0 : gi;
                const float* add = bc.data_ptr<float>() + bb * bc.stride(0) + bk * bc.stride(1) + bg * bc.stride(2);
                for (int64_t j = 0; j < std::min(s, bc.size(4)); ++j) scores[j] += add[j];
            }
            kernels::softmax(scores, s);
            kernels::weightedSum(scores, v, values.stride(2), s, hd, op + (bi * h + head) * hd);
        }
    };
    // Spread the pairs over the pool only when there is enough work per pair to pay for it (a
    // long cache); the split never changes what a pair computes.
    const int64_t grain = std::max<int64_t>(1, (1 << 17) / std::max<int64_t>(1, g * s * hd));
    parallelFor(0, b * hkv, grain, [&](int64_t first, int64_t end) {
        for (int64_t i = first; i < end; ++i) pair(i / hkv, i % hkv);
    });
    if (probs) *probs = p;
    return out;
}

} // namespace kvsteer
