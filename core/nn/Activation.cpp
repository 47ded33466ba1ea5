#include "nn/Activation.h"

#include "ThreadPool.h"
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/silu.h>

#include <cmath>

namespace kvsteer {

namespace {

// One element, the formulas of transformers' activations (in float, as ATen's scalar paths).
// A template, so the loop below is compiled once per activation with no branch per element.
template <Activation Kind>
float activateOne(float x) {
    if constexpr (Kind == Activation::Silu) return x / (1.0f + std::exp(-x));
    if constexpr (Kind == Activation::GeluTanh) {
        constexpr float kBeta = 0.7978845608028654f;   // sqrt(2 / pi)
        constexpr float kKappa = 0.044715f;
        return 0.5f * x * (1.0f + std::tanh(kBeta * (x + kKappa * x * x * x)));
    }
    if constexpr (Kind == Activation::GeluErf) return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
    if constexpr (Kind == Activation::QuickGelu) return x / (1.0f + std::exp(-1.702f * x));
}

at::Tensor atenActivate(const at::Tensor& x, Activation kind) {
    switch (kind) {
    case Activation::Silu: return at::silu(x);
    case Activation::GeluTanh: return at::gelu(x, "tanh");
    case Activation::GeluErf: return at::gelu(x);
    case Activation::QuickGelu: return x * at::sigmoid(1.702 * x);
    }
    return x;
}

bool plainLoopTakes(const at::Tensor& x) { return x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() >= 1; }

// out[r, i] = activate(gate[r, i]) (* up[r, i]) over rows of the last dim, spread over the pool
// by rows: each element's value is its own, so the split changes no bit.
at::Tensor rowLoop(const at::Tensor& gate, const at::Tensor* up, Activation kind) {
    const int64_t cols = gate.size(-1);
    const at::Tensor g = gate.reshape({-1, cols}), u = up ? up->reshape({-1, cols}) : at::Tensor();
    const at::Tensor gc = g.stride(1) == 1 ? g : g.contiguous(), uc = !up || u.stride(1) == 1 ? u : u.contiguous();
    const int64_t rows = gc.size(0);
    at::Tensor out = at::empty({rows, cols}, gate.options());
    const float* gp = gc.data_ptr<float>();
    const float* upPtr = up ? uc.data_ptr<float>() : nullptr;
    float* op = out.data_ptr<float>();
    const int64_t gs = gc.stride(0), us = up ? uc.stride(0) : 0;
    auto loop = [&](auto one) {   // `one`: a lambda of its own type per activation, inlined
        parallelFor(0, rows, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, cols)), [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r)
                for (int64_t i = 0; i < cols; ++i) {
                    const float a = one(gp[r * gs + i]);
                    op[r * cols + i] = upPtr ? a * upPtr[r * us + i] : a;
                }
        });
    };
    switch (kind) {
    case Activation::Silu: loop([](float x) { return activateOne<Activation::Silu>(x); }); break;
    case Activation::GeluTanh: loop([](float x) { return activateOne<Activation::GeluTanh>(x); }); break;
    case Activation::GeluErf: loop([](float x) { return activateOne<Activation::GeluErf>(x); }); break;
    case Activation::QuickGelu: loop([](float x) { return activateOne<Activation::QuickGelu>(x); }); break;
    }
    return out.view(gate.sizes());
}

} // namespace

at::Tensor activate(const at::Tensor& x, Activation kind) {
    return plainLoopTakes(x) ? rowLoop(x, nullptr, kind) : atenActivate(x, kind);
}

at::Tensor activateGated(const at::Tensor& gate, const at::Tensor& up, Activation kind) {
    if (!plainLoopTakes(gate) || !plainLoopTakes(up) || gate.sizes() != up.sizes()) return atenActivate(gate, kind) * up;
    return rowLoop(gate, &up, kind);
}

} // namespace kvsteer
