#pragma once
// Qwen3-VL's vision tower (transformers' Qwen3VLVisionModel) on one image's patches, listed in the
// 2 x 2-cell order of qwen2vl/Qwen2VlGrid.h (N patches, M = N / 4 visual tokens):
//
//   pixel_values [N, C*T*P*P]
//     -> patch embedding: Conv3d with kernel = stride = (T, P, P) and a bias = a matmul   [N, E]
//     -> + the learned position table interpolated to the grid (Qwen3VisionPositions.h), once
//     -> depth pre-LayerNorm blocks (eps 1e-6), every one attending over the whole image:
//          x += proj(attn(norm1(x)))       fused qkv with bias, Qwen2-VL's 2D RoPE on q and k
//          x += fc2(gelu_tanh(fc1(norm2(x))))
//        after block deepstack_visual_indexes[k]: its own merger -> deepstack[k]          [M, D]
//     -> merger: LayerNorm over each patch, the 4 patches of a cell concatenated,
//        fc1 -> erf GELU -> fc2                                                     -> tokens [M, D]
//
// The DeepStack mergers differ from the last one in where they norm: the cell's 4 patches are
// concatenated first and the 4E values LayerNormed together ("post-shuffle"). The decoder adds
// deepstack[k] to the image positions' hidden states after its layer k (HiddenAdditions).
// Weights are read as vision.* (model.visual.* on disk); 16-bit matrices stay mmap views that
// kvsteer's kernels widen; norms, biases and the position table are kept in the compute dtype.
#include "models/Prompt.h"
#include "models/qwen2vl/Qwen2VlGrid.h"
#include "models/qwen3vl/Qwen3VlConfig.h"
#include "nn/Linear.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace kvsteer {

class Checkpoint;

class Qwen3VisionTower {
public:
    Qwen3VisionTower(const Qwen3VisionConfig& config, const Checkpoint& ckpt, const WeightFormat& format);

    // The stages a forward passes through, for tests and inspection.
    struct Trace {
        at::Tensor patchEmbeddings;      // [N, E], the Conv3d with its bias
        at::Tensor positionEmbeddings;   // [N, E], interpolated, in the rows' order
        at::Tensor blockOutput;          // [N, E], after the last block
    };

    // pixelValues [N, patchDim] (rows in the 2 x 2-cell order), grid with t*h*w = N -> the image's
    // tokens and DeepStack rows [M, out_hidden_size] each, in the compute dtype, on the device.
    // Throws kvsteer::Error for shapes that do not fit the config.
    ImageFeatures forward(const at::Tensor& pixelValues, const GridThw& grid, Trace* trace = nullptr) const;

    const Qwen3VisionConfig& config() const { return config_; }

private:
    struct Block {
        at::Tensor norm1Weight, norm1Bias, norm2Weight, norm2Bias;
        LinearWeight qkv, proj, fc1, fc2;
        at::Tensor qkvBias, projBias, fc1Bias, fc2Bias;
    };
    // A merger: norm (over a patch, or over a cell's 4 patches: postShuffle), fc1, GELU, fc2.
    struct Merger {
        bool postShuffle = false;
        at::Tensor normWeight, normBias;
        LinearWeight fc1, fc2;
        at::Tensor fc1Bias, fc2Bias;
    };
    Block loadBlock(const Checkpoint& ckpt, int index, const WeightFormat& format, const WeightFormat& small) const;
    Merger loadMerger(const Checkpoint& ckpt, const std::string& prefix, bool postShuffle, const WeightFormat& format,
                      const WeightFormat& small) const;
    void checkInput(const at::Tensor& pixelValues, const GridThw& grid) const;
    at::Tensor block(const at::Tensor& x, const Block& b, const at::Tensor& cos, const at::Tensor& sin, const GridThw& grid) const;
    at::Tensor merge(const at::Tensor& x, const Merger& m) const;   // [N, E] -> [N / 4, D]

    Qwen3VisionConfig config_;
    WeightFormat format_;
    at::Tensor patchWeight_, patchBias_;   // [E, patchDim]: the Conv3d kernel flattened; [E]
    at::Tensor positionTable_;             // [side * side, E]
    std::vector<Block> blocks_;
    Merger merger_;
    std::vector<Merger> deepstackMergers_;   // one per deepstack_visual_indexes entry
};

} // namespace kvsteer
