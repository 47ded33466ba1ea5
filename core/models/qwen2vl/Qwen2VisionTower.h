#pragma once
// Qwen2-VL's vision tower (transformers' Qwen2VisionTransformerPretrainedModel) on one image's
// patches, in the listing order of Qwen2VlGrid.h:
//   pixel_values [N, C*T*P*P] -> patch embedding (Conv3d with kernel = stride = (T, P, P), no
//   bias: a matmul with the kernel reshaped to [embed, C*T*P*P]; no CLS, no absolute positions)
//   -> depth pre-norm blocks: x += proj(attn(norm1(x))), x += fc2(quick_gelu(fc1(norm2(x))));
//      fused qkv with bias, 2D RoPE on q and k, attention over all patches of a frame
//      (non-causal), LayerNorm eps 1e-6
//   -> PatchMerger: ln_q, every merge^2 consecutive rows (one 2x2 cell) concatenated,
//      Linear -> erf GELU -> Linear
//   -> image features [N / merge^2, hidden_size]: visual token k is merged cell (k / w', k % w').
// Qwen2.5-VL's tower is the same pipeline with three changes (Qwen2VisionConfig::rmsNormSwiGlu):
// RMSNorm for norm1, norm2 and ln_q; a SwiGLU MLP with biases, down(silu(gate(x)) * up(x)); and
// window attention — the patches regrouped window by window (VisionWindows.h) before
// the blocks, each block not in fullatt_block_indexes attending only inside its window, and the
// rows put back in listing order after the last block (the merger works per cell, so merging
// before or after putting them back is the same).
// Weights are read as vision.* (visual.* / model.visual.* on disk) in the WeightFormat: 16-bit
// matrices stay mmap views that kvsteer's kernels widen; norms and biases are kept in the compute
// dtype.
#include "models/qwen2vl/Qwen2VisionConfig.h"
#include "models/qwen2vl/Qwen2VlGrid.h"
#include "nn/Linear.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace kvsteer {

class Checkpoint;

class Qwen2VisionTower {
public:
    Qwen2VisionTower(const Qwen2VisionConfig& config, const Checkpoint& ckpt, const WeightFormat& format);

    // The stages a forward passes through, for tests and inspection.
    struct Trace {
        at::Tensor rotaryAngles;      // [N, head_dim / 2] float32 (CPU)
        at::Tensor patchEmbeddings;   // [N, embed_dim]
        at::Tensor blockOutput;       // [N, embed_dim], after the last block (the merger's input)
    };

    // pixelValues [N, patchDim] (rows in the 2x2-cell order), grid with t*h*w = N ->
    // image features [N / merge^2, hidden_size] in the compute dtype, on the format's device.
    // Throws kvsteer::Error for shapes that do not fit the config.
    at::Tensor forward(const at::Tensor& pixelValues, const GridThw& grid, Trace* trace = nullptr) const;

    at::Tensor embedPatches(const at::Tensor& pixelValues) const;              // [N, patchDim] -> [N, embed_dim]
    at::Tensor runBlocks(const at::Tensor& x, const GridThw& grid, Trace* trace = nullptr) const;   // [N, embed_dim]
    at::Tensor merge(const at::Tensor& blockOutput) const;                     // [N, embed_dim] -> [N / 4, hidden_size]

    const Qwen2VisionConfig& config() const { return config_; }
    std::string family() const { return config_.rmsNormSwiGlu ? "Qwen2.5-VL" : "Qwen2-VL"; }   // for messages

private:
    struct Block {
        at::Tensor norm1Weight, norm1Bias, norm2Weight, norm2Bias;   // no biases with RMSNorm
        LinearWeight qkv, proj;
        at::Tensor qkvBias, projBias;
        LinearWeight fc1, fc2;                  // Qwen2-VL: fc2(quick_gelu(fc1(x)))
        at::Tensor fc1Bias, fc2Bias;
        LinearWeight gate, up, down;            // Qwen2.5-VL: down(silu(gate(x)) * up(x))
        at::Tensor gateBias, upBias, downBias;
    };
    Block loadBlock(const Checkpoint& ckpt, int index, const WeightFormat& format, const WeightFormat& small) const;
    // `segments`: lengths of the consecutive runs of rows that attend among themselves (a frame,
    // or a window).
    at::Tensor block(const at::Tensor& x, const Block& b, const at::Tensor& cos, const at::Tensor& sin,
                     const std::vector<int64_t>& segments) const;
    at::Tensor attention(const at::Tensor& y, const Block& b, const at::Tensor& cos, const at::Tensor& sin,
                         const std::vector<int64_t>& segments) const;
    at::Tensor mlp(const at::Tensor& y, const Block& b) const;
    at::Tensor norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) const;
    void checkInput(const at::Tensor& pixelValues, const GridThw& grid) const;

    Qwen2VisionConfig config_;
    WeightFormat format_;
    at::Tensor patchWeight_;   // [embed_dim, patchDim]: the Conv3d kernel flattened
    std::vector<Block> blocks_;
    at::Tensor lnQWeight_, lnQBias_;   // no bias with RMSNorm
    LinearWeight mergerFc1_, mergerFc2_;   // [4E, 4E], [hidden, 4E]
    at::Tensor mergerFc1Bias_, mergerFc2Bias_;
};

} // namespace kvsteer
