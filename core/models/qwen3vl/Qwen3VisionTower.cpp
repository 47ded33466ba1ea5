#include "models/qwen3vl/Qwen3VisionTower.h"

#include "Error.h"
#include "io/Checkpoint.h"
#include "models/qwen2vl/Qwen2VisionRope.h"
#include "models/qwen2vl/SegmentedAttention.h"
#include "models/qwen3vl/Qwen3VisionPositions.h"
#include "nn/Activation.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/sin.h>

#include <algorithm>
#include <string>

namespace kvsteer {

namespace {

std::string blockName(int i, const std::string& rest) { return "vision.blocks." + std::to_string(i) + "." + rest; }

} // namespace

Qwen3VisionTower::Qwen3VisionTower(const Qwen3VisionConfig& config, const Checkpoint& ckpt, const WeightFormat& format)
    : config_(config), format_(format) {
    const int64_t e = config.hiddenSize, p = config.patchSize;
    WeightFormat small = format;   // norms, biases and the position table are small: the compute dtype
    small.storage = format.compute;
    patchWeight_ = loadWeight(ckpt, "vision.patch_embed.proj.weight", {e, config.inChannels, config.temporalPatchSize, p, p}, format)
                       .view({e, config.patchDim()});
    patchBias_ = loadWeight(ckpt, "vision.patch_embed.proj.bias", {e}, small);
    const int64_t side = config.positionSide();
    positionTable_ = loadWeight(ckpt, "vision.pos_embed.weight", {side * side, e}, small);
    for (int i = 0; i < config.depth; ++i) blocks_.push_back(loadBlock(ckpt, i, format, small));
    merger_ = loadMerger(ckpt, "vision.merger.", false, format, small);
    for (size_t k = 0; k < config.deepstackVisualIndexes.size(); ++k)
        deepstackMergers_.push_back(loadMerger(ckpt, "vision.deepstack_merger_list." + std::to_string(k) + ".", true, format, small));
}

Qwen3VisionTower::Block Qwen3VisionTower::loadBlock(const Checkpoint& ckpt, int i, const WeightFormat& format,
                                                    const WeightFormat& small) const {
    const int64_t e = config_.hiddenSize, m = config_.intermediateSize;
    Block b;
    b.norm1Weight = loadWeight(ckpt, blockName(i, "norm1.weight"), {e}, small);
    b.norm1Bias = loadWeight(ckpt, blockName(i, "norm1.bias"), {e}, small);
    b.norm2Weight = loadWeight(ckpt, blockName(i, "norm2.weight"), {e}, small);
    b.norm2Bias = loadWeight(ckpt, blockName(i, "norm2.bias"), {e}, small);
    b.qkv = loadLinear(ckpt, blockName(i, "attn.qkv.weight"), {3 * e, e}, format);   // rows: q, k, v; each head-major
    b.qkvBias = loadWeight(ckpt, blockName(i, "attn.qkv.bias"), {3 * e}, small);
    b.proj = loadLinear(ckpt, blockName(i, "attn.proj.weight"), {e, e}, format);
    b.projBias = loadWeight(ckpt, blockName(i, "attn.proj.bias"), {e}, small);
    b.fc1 = loadLinear(ckpt, blockName(i, "mlp.linear_fc1.weight"), {m, e}, format);
    b.fc1Bias = loadWeight(ckpt, blockName(i, "mlp.linear_fc1.bias"), {m}, small);
    b.fc2 = loadLinear(ckpt, blockName(i, "mlp.linear_fc2.weight"), {e, m}, format);
    b.fc2Bias = loadWeight(ckpt, blockName(i, "mlp.linear_fc2.bias"), {e}, small);
    return b;
}

Qwen3VisionTower::Merger Qwen3VisionTower::loadMerger(const Checkpoint& ckpt, const std::string& prefix, bool postShuffle,
                                                      const WeightFormat& format, const WeightFormat& small) const {
    const int64_t width = config_.mergerWidth(), out = config_.outHiddenSize;
    const int64_t normed = postShuffle ? width : config_.hiddenSize;
    Merger m;
    m.postShuffle = postShuffle;
    m.normWeight = loadWeight(ckpt, prefix + "norm.weight", {normed}, small);
    m.normBias = loadWeight(ckpt, prefix + "norm.bias", {normed}, small);
    m.fc1 = loadLinear(ckpt, prefix + "linear_fc1.weight", {width, width}, format);
    m.fc1Bias = loadWeight(ckpt, prefix + "linear_fc1.bias", {width}, small);
    m.fc2 = loadLinear(ckpt, prefix + "linear_fc2.weight", {out, width}, format);
    m.fc2Bias = loadWeight(ckpt, prefix + "linear_fc2.bias", {out}, small);
    return m;
}

void Qwen3VisionTower::checkInput(const at::Tensor& pixelValues, const GridThw& grid) const {
    requireGrid(grid, config_.spatialMergeSize, "Qwen3-VL vision tower");
    if (pixelValues.dim() != 2 || pixelValues.size(1) != config_.patchDim() || pixelValues.size(0) != grid.patches())
        throw Error("Qwen3-VL vision tower: pixel_values must be [" + std::to_string(grid.patches()) + ", " +
                    std::to_string(config_.patchDim()) + "] for grid (" + std::to_string(grid.t) + ", " + std::to_string(grid.h) + ", " +
                    std::to_string(grid.w) + "), got " + std::to_string(pixelValues.dim()) + " dims with " +
                    std::to_string(pixelValues.numel()) + " values");
}

at::Tensor Qwen3VisionTower::block(const at::Tensor& x, const Block& b, const at::Tensor& cos, const at::Tensor& sin,
                                   const GridThw& grid) const {
    const int64_t n = x.size(0), e = config_.hiddenSize, heads = config_.numHeads, d = config_.headDim();
    const double eps = config_.layerNormEps;
    // Attention over every patch of a frame (no windows in Qwen3-VL).
    const at::Tensor qkv = applyLinear(at::layer_norm(x, {e}, b.norm1Weight, b.norm1Bias, eps), b.qkv, b.qkvBias).view({n, 3, heads, d});
    const at::Tensor q = applyVisionRope(qkv.select(1, 0), cos, sin).transpose(0, 1);   // [heads, N, d]
    const at::Tensor k = applyVisionRope(qkv.select(1, 1), cos, sin).transpose(0, 1);
    const at::Tensor v = qkv.select(1, 2).transpose(0, 1);
    const std::vector<int64_t> frames(size_t(grid.t), grid.patchesPerFrame());
    const at::Tensor attended = segmentedAttention(q, k, v, frames).transpose(0, 1).reshape({n, e});
    const at::Tensor r = x + applyLinear(attended, b.proj, b.projBias);
    const Activation act = config_.hiddenAct == "gelu" ? Activation::GeluErf : Activation::GeluTanh;
    const at::Tensor h = activate(applyLinear(at::layer_norm(r, {e}, b.norm2Weight, b.norm2Bias, eps), b.fc1, b.fc1Bias), act);
    return r + applyLinear(h, b.fc2, b.fc2Bias);
}

at::Tensor Qwen3VisionTower::merge(const at::Tensor& x, const Merger& m) const {
    // Consecutive rows are one merged cell, so a reshape concatenates them: [N / 4, 4E].
    const int64_t cells = x.size(0) / config_.mergeUnit(), width = config_.mergerWidth(), e = config_.hiddenSize;
    const double eps = config_.layerNormEps;
    const at::Tensor normed = m.postShuffle ? at::layer_norm(x.reshape({cells, width}), {width}, m.normWeight, m.normBias, eps)
                                            : at::layer_norm(x, {e}, m.normWeight, m.normBias, eps).reshape({cells, width});
    const at::Tensor h = activate(applyLinear(normed, m.fc1, m.fc1Bias), Activation::GeluErf);
    return applyLinear(h, m.fc2, m.fc2Bias);   // [N / 4, D]
}

ImageFeatures Qwen3VisionTower::forward(const at::Tensor& pixelValues, const GridThw& grid, Trace* trace) const {
    checkInput(pixelValues, grid);
    // Conv3d with kernel = stride = the patch sees each row exactly once: a matmul, with its bias.
    const at::Tensor patches = applyLinear(pixelValues.to(format_.device, format_.compute), patchWeight_, patchBias_);   // [N, E]
    const at::Tensor positions = interpolatedPositionEmbeddings(positionTable_, config_.positionSide(), grid, config_.spatialMergeSize);
    at::Tensor x = patches + positions;
    const at::Tensor angles = visionRotaryAngles(patchPositions(grid, config_.spatialMergeSize), config_.headDim()).to(format_.device);
    const at::Tensor cos = at::cos(angles), sin = at::sin(angles);   // float32, as transformers keeps them

    ImageFeatures out;
    const std::vector<int>& deepstack = config_.deepstackVisualIndexes;
    out.deepstack.resize(deepstack.size());
    for (size_t i = 0; i < blocks_.size(); ++i) {
        x = block(x, blocks_[i], cos, sin, grid);
        for (size_t k = 0; k < deepstack.size(); ++k)
            if (deepstack[k] == int(i)) out.deepstack[k] = merge(x, deepstackMergers_[k]);
    }
    out.tokens = merge(x, merger_);
    if (trace) *trace = {patches, positions, x};
    return out;
}

} // namespace kvsteer
