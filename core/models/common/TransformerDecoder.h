#pragma once
// The decoder-only transformer every family shares: token embeddings, N pre-norm blocks (GQA/MQA
// attention with rotate-half RoPE, a gated MLP), final RMSNorm and the LM head. What differs
// between Llama (LLaVA) and Gemma (PaliGemma) is a handful of TextConfig fields, not code:
//   hiddenAct        silu (SwiGLU) | gelu_pytorch_tanh (GeGLU)
//   normAddsOne      RMSNorm scales by w (Llama) or by (1 + w) (Gemma)
//   scaleEmbeddings  every input row is multiplied by sqrt(hidden_size) first (Gemma)
// Every forward pass appends to a KVCache and takes its positions from it: the first new token
// sits at the position the cache gives for index cache.size() (KVCache::positions: the family's
// rule, kept with the cache). Qwen2 adds q/k/v biases and, in Qwen2-VL, M-RoPE (mropeSection);
// Qwen3 drops the biases for an RMSNorm over each head's q and k before RoPE (qkNorm), and
// Qwen3-VL interleaves the M-RoPE axes (mropeInterleaved) and adds DeepStack rows after its first
// layers (HiddenAdditions).
#include "io/Config.h"
#include "nn/Activation.h"
#include "nn/Linear.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <utility>
#include <vector>

namespace kvsteer {

class KVCache;

// A decode step (one token per row) whose changing inputs all live in device tensors, so the
// same launches serve every step: what a CUDA graph can capture once and replay per token
// (generate/DecodeGraph.h). The step writes its K/V at the cache index `cacheIndex` holds and
// attends over the cache's whole capacity, `mask` hiding the keys past that index; the cache's
// count is the caller's to advance (KVCache::writeAt).
struct GraphStep {
    at::Tensor cacheIndex;   // [1] int64, on the device
    at::Tensor cos, sin;     // [1, head_dim], compute dtype, on the device (ropeTables)
    at::Tensor mask;         // [1, capacity], compute dtype: 0 up to cacheIndex, -inf after it
};

// GraphStep::mask from the device tensors it depends on (keyIndex = 0, 1, ... capacity - 1), so a
// captured graph recomputes it on every replay.
at::Tensor graphStepMask(const at::Tensor& keyIndex, const at::Tensor& cacheIndex, c10::ScalarType dtype);

// Rows added to the hidden states of consecutive tokens right after some decoder layers: how
// Qwen3-VL's DeepStack feeds the vision tower's intermediate features into the image's positions
// (afterLayer[k] is added to the output of decoder layer k). They belong to the tokens at cache
// indices first .. first + N - 1, so any pass that computes some of those tokens (a prefill, a
// prefix, a recompute from inside the image) adds exactly their rows, and a pass over other
// tokens adds nothing.
struct HiddenAdditions {
    int64_t first = 0;                    // the cache index of the tokens' first
    std::vector<at::Tensor> afterLayer;   // [k]: [N, D] in the compute dtype, on the device
    bool empty() const { return afterLayer.empty(); }
};

// What one forward pass takes besides the embeddings and gives back besides the hidden states:
// an attention-logit bias in (spotlight steering), the last token's attention weights out (the
// heatmaps), and a stop check (a long prefill can be cancelled between layers).
struct ForwardPass {
    // Per layer (empty vector or undefined tensor = none): an additive bias on the attention
    // logits over key positions 0..S'-1, shape [B or 1, H or 1, S']. Keys past S' get no bias.
    std::vector<at::Tensor> attentionBias;
    // When set, `attention[l]` receives the softmax weights of the last query token in layer l,
    // [B, H, S] (S = keys attended, i.e. cache.size() after the pass).
    bool captureAttention = false;
    std::vector<at::Tensor> attention;
    // Prefix-LM (PaliGemma): the T new tokens attend to each other in both directions, not
    // causally. They always see every cached token.
    bool bidirectional = false;
    // When set, asked before every layer; true stops the pass by throwing ForwardStopped (the
    // cache is then partly written and must be thrown away). A long prefill can be cancelled.
    std::function<bool()> stopRequested;
    // When set, the pass is a captured decode step (see GraphStep).
    const GraphStep* graphStep = nullptr;
    // DeepStack rows (Qwen3-VL), added where this pass covers their tokens; none: nothing added.
    const HiddenAdditions* additions = nullptr;
    // When set, `layerInputs[l]` receives the hidden states [B, T, D] entering layer l (0: the
    // scaled embeddings; l > 0: layer l - 1's output with its additions), for inspection and tests.
    bool captureLayerInputs = false;
    std::vector<at::Tensor> layerInputs;
};

// The position row (0 = t, 1 = h, 2 = w) each of the head_dim / 2 RoPE frequencies reads.
//   plain RoPE       every frequency reads row 0
//   M-RoPE in runs   (Qwen2-VL) sections count the frequencies per axis: [16, 24, 24] gives t to
//                    the first 16, h to the next 24, w to the last 24
//   interleaved      (Qwen3-VL) frequency j reads h when j % 3 == 1 and j < 3 * sections[1], w when
//                    j % 3 == 2 and j < 3 * sections[2], else t: [24, 20, 20] over 64 frequencies
//                    gives t {0, 3, ..., 60, 61, 62, 63}, h {1, 4, ..., 58}, w {2, 5, ..., 59}
std::vector<int64_t> ropeFrequencyRows(const std::vector<int>& sections, bool interleaved, int64_t halfDim);

// Thrown by TransformerDecoder::forward when ForwardPass::stopRequested says so. Not an error.
struct ForwardStopped {};

class TransformerDecoder {
public:
    TransformerDecoder(const TextConfig& config, const Checkpoint& ckpt, const WeightFormat& format);

    const TextConfig& config() const { return config_; }

    at::Tensor embed(const at::Tensor& ids) const;   // [B, T] int64 -> [B, T, D] (compute dtype)

    // Runs the blocks over `embeds` [B, T, D] (as embed() returns them, before any scaling) at
    // the positions of cache indices cache.size() .. +T-1, appending their K/V to `cache`. Returns the final-normed hidden states [B, T, D].
    at::Tensor forward(const at::Tensor& embeds, KVCache& cache, ForwardPass* pass = nullptr) const;

    at::Tensor logits(const at::Tensor& hidden) const;   // [.., D] -> [.., V], float32

    // RoPE's inverse frequencies [head_dim / 2] float32, rope_scaling applied (transformers' inv_freq).
    const at::Tensor& ropeInvFreq() const { return invFreq_; }

    // The matrices one decode step reads (every layer's and the LM head), and their bytes: the
    // bandwidth at which they can be read, divided by the bytes, is the memory roofline of decoding.
    std::vector<const LinearWeight*> decodeStepWeights() const;
    int64_t weightBytesPerToken() const;

    // Rotates x [..., N, head_dim] by the RoPE angles of `positions` (int64 [N], or [3, N] under
    // M-RoPE: what KVCache::positions gives for those cache indices), or back
    // (inverse): how cached (post-RoPE) keys and position-free (pre-RoPE) directions relate.
    at::Tensor rotate(const at::Tensor& x, const at::Tensor& positions, bool inverse = false) const;
    // cos, sin [n, head_dim] (compute dtype, on the device) for positions [rows, n] or [n].
    std::pair<at::Tensor, at::Tensor> ropeTables(const at::Tensor& positions) const;

private:
    struct Layer {
        at::Tensor inputNorm, postNorm;      // (1 + w) already added for Gemma
        LinearWeight qkvWeight, oWeight;     // q, k, v fused: [(H + 2 H_kv) * hd, D]
        at::Tensor qkvBias, oBias;           // biases when the config has them, else undefined
        at::Tensor qNorm, kNorm;             // [head_dim] RMSNorm weights (Qwen3), else undefined
        LinearWeight gateUpWeight, downWeight; // gate and up fused: [2 I, D]
    };
    Activation activation() const;
    // x [B, T, D] of cache indices start .. start+T-1, after layer l: the additions that fall there.
    void addAfterLayer(at::Tensor& x, size_t l, int64_t start, const HiddenAdditions& additions) const;
    at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                         const at::Tensor& bias, at::Tensor* captured) const;

    TextConfig config_;
    WeightFormat format_;
    at::Tensor embedTokens_, finalNorm_;
    LinearWeight lmHead_;   // the embedding table itself when tied
    at::Tensor invFreq_;             // [head_dim / 2] float32
    at::Tensor freqRow_;             // [head_dim / 2] int64: the position row each frequency reads
    int64_t positionRows_ = 1;       // 1 (RoPE) or 3 (M-RoPE: t, h, w)
    double embedScale_ = 1.0;        // sqrt(hidden_size) rounded to the compute dtype, or 1
    std::vector<Layer> layers_;
};

} // namespace kvsteer
