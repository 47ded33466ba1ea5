#pragma once
// The MLPs' activations, element by element: SiLU (Llama, Qwen), GELU with tanh (Gemma, SigLIP),
// exact GELU (erf; CLIP-L, Qwen2-VL's merger), quick GELU (CLIP in LLaVA, Qwen2-VL's tower).
//
// On CPU in float32 each element is computed by the same scalar formula whatever the thread count:
// ATen's own kernels compute the vector-wide part of each thread's share with one exp (SLEEF) and
// the share's ragged end with another (libm), so an element's bits depended on where the shares
// were cut, i.e. on the thread count (docs/internals.md "Determinism"). Elsewhere, ATen.
#include <ATen/core/Tensor.h>

namespace kvsteer {

enum class Activation { Silu, GeluTanh, GeluErf, QuickGelu };

at::Tensor activate(const at::Tensor& x, Activation kind);
// activate(gate) * up (the gated MLP), in one pass.
at::Tensor activateGated(const at::Tensor& gate, const at::Tensor& up, Activation kind);

} // namespace kvsteer
