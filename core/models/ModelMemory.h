#pragma once
// The two decisions a load makes before it touches a weight, as pure functions (tested on any
// machine, CUDA or not):
//   chooseWeightFormat  the dtypes weights are kept and computed in, per device:
//       CPU   storage = --dtype (auto: each tensor as the checkpoint stores it); compute is always
//             float32 (kvsteer's kernels widen 16-bit rows as they stream them)
//       CUDA  --dtype f32 / f16 / bf16: storage = compute = that dtype; auto: the checkpoint's own
//             dtype (the one most of its bytes are in) for both, as transformers'
//             torch_dtype="auto" loads it — a float16 7B stays 13.5 GB, a float32 file float32
//   estimateMemory  the peak a model reaches: weights as kept, KV caches for a prompt (the image's
//             tokens + 128 text tokens) plus the reserved new tokens, the largest prefill buffers.
//             An estimate on the safe side, not an accounting.
#include "MemoryBudget.h"
#include "io/Config.h"
#include "nn/Linear.h"

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

namespace kvsteer {

// `requested`: Undefined for --dtype auto. `stored`: the checkpoint's dominant dtype.
WeightFormat chooseWeightFormat(const c10::Device& device, c10::ScalarType requested, c10::ScalarType stored);

// `weightBytes`: the weights in their storage dtype; activations and caches in `compute`.
MemoryNeed estimateMemory(const ModelConfig& config, int64_t weightBytes, c10::ScalarType compute, int64_t reserveTokens);

} // namespace kvsteer
