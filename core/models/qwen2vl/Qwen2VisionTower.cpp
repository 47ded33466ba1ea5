#include "models/qwen2vl/Qwen2VisionTower.h"

#include "Error.h"
#include "io/Checkpoint.h"
#include "nn/Activation.h"
#include "nn/AttentionMatmul.h"
#include "models/qwen2vl/Qwen2VisionRope.h"
#include "models/qwen2vl/SegmentedAttention.h"
#include "models/qwen2vl/VisionWindows.h"
#include "nn/RmsNorm.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/softmax.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace kvsteer {

namespace {

std::string blockName(int i, const std::string& rest) { return "vision.blocks." + std::to_string(i) + "." + rest; }

} // namespace

Qwen2VisionTower::Qwen2VisionTower(const Qwen2VisionConfig& config, const Checkpoint& ckpt, const WeightFormat& format)
    : config_(config), format_(format) {
    const int64_t e = config.embedDim, c = config.inChannels, t = config.temporalPatchSize, p = config.patchSize;
    const int64_t merged = config.mergerWidth(), hidden = config.hiddenSize;
    // Norms and biases are tiny: keep them in the compute dtype.
    WeightFormat small = format;
    small.storage = format.compute;
    patchWeight_ = loadWeight(ckpt, "vision.patch_embed.proj.weight", {e, c, t, p, p}, format).view({e, config.patchDim()});
    for (int i = 0; i < config.depth; ++i) blocks_.push_back(loadBlock(ckpt, i, format, small));
    lnQWeight_ = loadWeight(ckpt, "vision.merger.ln_q.weight", {e}, small);
    if (!config.rmsNormSwiGlu) lnQBias_ = loadWeight(ckpt, "vision.merger.ln_q.bias", {e}, small);
    mergerFc1_ = loadLinear(ckpt, "vision.merger.mlp.0.weight", {merged, merged}, format);
    mergerFc1Bias_ = loadWeight(ckpt, "vision.merger.mlp.0.bias", {merged}, small);
    mergerFc2_ = loadLinear(ckpt, "vision.merger.mlp.2.weight", {hidden, merged}, format);
    mergerFc2Bias_ = loadWeight(ckpt, "vision.merger.mlp.2.bias", {hidden}, small);
}

Qwen2VisionTower::Block Qwen2VisionTower::loadBlock(const Checkpoint& ckpt, int i, const WeightFormat& format,
                                                    const WeightFormat& small) const {
    const int64_t e = config_.embedDim, m = config_.mlpHidden();
    Block b;
    b.norm1Weight = loadWeight(ckpt, blockName(i, "norm1.weight"), {e}, small);
    b.norm2Weight = loadWeight(ckpt, blockName(i, "norm2.weight"), {e}, small);
    b.qkv = loadLinear(ckpt, blockName(i, "attn.qkv.weight"), {3 * e, e}, format);   // rows: q, k, v; each head-major
    b.qkvBias = loadWeight(ckpt, blockName(i, "attn.qkv.bias"), {3 * e}, small);
    b.proj = loadLinear(ckpt, blockName(i, "attn.proj.weight"), {e, e}, format);
    b.projBias = loadWeight(ckpt, blockName(i, "attn.proj.bias"), {e}, small);
    if (config_.rmsNormSwiGlu) {
        b.gate = loadLinear(ckpt, blockName(i, "mlp.gate_proj.weight"), {m, e}, format);
        b.gateBias = loadWeight(ckpt, blockName(i, "mlp.gate_proj.bias"), {m}, small);
        b.up = loadLinear(ckpt, blockName(i, "mlp.up_proj.weight"), {m, e}, format);
        b.upBias = loadWeight(ckpt, blockName(i, "mlp.up_proj.bias"), {m}, small);
        b.down = loadLinear(ckpt, blockName(i, "mlp.down_proj.weight"), {e, m}, format);
        b.downBias = loadWeight(ckpt, blockName(i, "mlp.down_proj.bias"), {e}, small);
        return b;
    }
    b.norm1Bias = loadWeight(ckpt, blockName(i, "norm1.bias"), {e}, small);
    b.norm2Bias = loadWeight(ckpt, blockName(i, "norm2.bias"), {e}, small);
    b.fc1 = loadLinear(ckpt, blockName(i, "mlp.fc1.weight"), {m, e}, format);
    b.fc1Bias = loadWeight(ckpt, blockName(i, "mlp.fc1.bias"), {m}, small);
    b.fc2 = loadLinear(ckpt, blockName(i, "mlp.fc2.weight"), {e, m}, format);
    b.fc2Bias = loadWeight(ckpt, blockName(i, "mlp.fc2.bias"), {e}, small);
    return b;
}

void Qwen2VisionTower::checkInput(const at::Tensor& pixelValues, const GridThw& grid) const {
    requireGrid(grid, config_.spatialMergeSize, (family() + " vision tower").c_str());
    if (pixelValues.dim() != 2 || pixelValues.size(1) != config_.patchDim() || pixelValues.size(0) != grid.patches())
        throw Error(family() + " vision tower: pixel_values must be [" + std::to_string(grid.patches()) + ", " +
                    std::to_string(config_.patchDim()) + "] for grid (" + std::to_string(grid.t) + ", " + std::to_string(grid.h) +
                    ", " + std::to_string(grid.w) + "), got " + std::to_string(pixelValues.dim()) + " dims with " +
                    std::to_string(pixelValues.numel()) + " values");
}

at::Tensor Qwen2VisionTower::embedPatches(const at::Tensor& pixelValues) const {
    // Conv3d with kernel = stride = the patch sees each row exactly once: a matmul.
    return applyLinear(pixelValues.to(format_.device, format_.compute), patchWeight_);   // [N, E]
}

at::Tensor Qwen2VisionTower::attention(const at::Tensor& y, const Block& b, const at::Tensor& cos, const at::Tensor& sin,
                                       const std::vector<int64_t>& segments) const {
    const int64_t n = y.size(0), heads = config_.numHeads, d = config_.headDim();
    const at::Tensor qkv = applyLinear(y, b.qkv, b.qkvBias).view({n, 3, heads, d});
    const at::Tensor q = applyVisionRope(qkv.select(1, 0), cos, sin).transpose(0, 1);   // [heads, N, d]
    const at::Tensor k = applyVisionRope(qkv.select(1, 1), cos, sin).transpose(0, 1);
    const at::Tensor v = qkv.select(1, 2).transpose(0, 1);
    const at::Tensor out = segmentedAttention(q, k, v, segments);   // each frame or window attends to itself
    return applyLinear(out.transpose(0, 1).reshape({n, heads * d}), b.proj, b.projBias);   // [N, E]
}

// LayerNorm (Qwen2-VL) or RMSNorm in float32 (Qwen2.5-VL, as transformers' Qwen2RMSNorm), eps 1e-6.
at::Tensor Qwen2VisionTower::norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) const {
    return config_.rmsNormSwiGlu ? rmsNorm(x, weight, config_.layerNormEps)
                                 : at::layer_norm(x, {config_.embedDim}, weight, bias, config_.layerNormEps);
}

at::Tensor Qwen2VisionTower::mlp(const at::Tensor& y, const Block& b) const {
    if (config_.rmsNormSwiGlu)
        return applyLinear(activateGated(applyLinear(y, b.gate, b.gateBias), applyLinear(y, b.up, b.upBias), Activation::Silu), b.down, b.downBias);
    const at::Tensor h = applyLinear(y, b.fc1, b.fc1Bias);
    return applyLinear(activate(h, Activation::QuickGelu), b.fc2, b.fc2Bias);
}

at::Tensor Qwen2VisionTower::block(const at::Tensor& x, const Block& b, const at::Tensor& cos, const at::Tensor& sin,
                                   const std::vector<int64_t>& segments) const {
    const at::Tensor r = x + attention(norm(x, b.norm1Weight, b.norm1Bias), b, cos, sin, segments);
    return r + mlp(norm(r, b.norm2Weight, b.norm2Bias), b);
}

at::Tensor Qwen2VisionTower::runBlocks(const at::Tensor& x, const GridThw& grid, Trace* trace) const {
    requireGrid(grid, config_.spatialMergeSize, (family() + " vision blocks").c_str());
    if (x.dim() != 2 || x.size(0) != grid.patches() || x.size(1) != config_.embedDim)
        throw Error(family() + " vision blocks: expected [" + std::to_string(grid.patches()) + ", " + std::to_string(config_.embedDim) +
                    "] patch embeddings for the grid");
    const at::Tensor angles = visionRotaryAngles(patchPositions(grid, config_.spatialMergeSize), config_.headDim());   // [N, d/2]
    if (trace) trace->rotaryAngles = angles;
    const std::vector<int64_t> frames(size_t(grid.t), grid.patchesPerFrame());
    // Window attention (Qwen2.5-VL): the rows and their rotary angles regrouped window by window,
    // a cell's merge-unit rows staying together, then the blocks, then the rows put back.
    std::vector<int64_t> windows;
    at::Tensor order;   // undefined: the listing order throughout (Qwen2-VL)
    if (config_.windowSize > 0) {
        const int64_t unit = config_.mergeUnit(), m = config_.spatialMergeSize;
        const VisionWindows w = visionWindows(grid.t, grid.h / m, grid.w / m, config_.windowSide());
        std::vector<int64_t> rowOrder;
        for (int64_t cell : w.cellOrder)
            for (int64_t j = 0; j < unit; ++j) rowOrder.push_back(cell * unit + j);
        for (int64_t cells : w.cellsPerWindow) windows.push_back(cells * unit);
        order = at::tensor(rowOrder, at::kLong);
    }
    const at::Tensor onDevice = (order.defined() ? angles.index_select(0, order) : angles).to(format_.device);
    const at::Tensor cos = at::cos(onDevice), sin = at::sin(onDevice);   // float32, as transformers keeps them
    const at::Tensor rows = order.defined() ? order.to(format_.device) : at::Tensor();
    at::Tensor h = rows.defined() ? x.index_select(0, rows) : x;
    for (size_t i = 0; i < blocks_.size(); ++i) h = block(h, blocks_[i], cos, sin, config_.windowed(int(i)) ? windows : frames);
    if (!rows.defined()) return h;
    at::Tensor back = at::empty_like(h);
    back.index_copy_(0, rows, h);   // row rowOrder[i] of the listing is row i of the window order
    return back;
}

at::Tensor Qwen2VisionTower::merge(const at::Tensor& blockOutput) const {
    const int64_t e = config_.embedDim, unit = config_.mergeUnit();
    if (blockOutput.dim() != 2 || blockOutput.size(1) != e || blockOutput.size(0) % unit != 0)
        throw Error(family() + " patch merger: expected [N, " + std::to_string(e) + "] with N a multiple of " + std::to_string(unit));
    const at::Tensor normed = norm(blockOutput, lnQWeight_, lnQBias_);
    // Consecutive rows are one merged cell, so a view concatenates them: [N / unit, unit * E].
    const at::Tensor cells = normed.reshape({blockOutput.size(0) / unit, unit * e});
    const at::Tensor h = activate(applyLinear(cells, mergerFc1_, mergerFc1Bias_), Activation::GeluErf);
    return applyLinear(h, mergerFc2_, mergerFc2Bias_);                                // [N / unit, hidden]
}

at::Tensor Qwen2VisionTower::forward(const at::Tensor& pixelValues, const GridThw& grid, Trace* trace) const {
    checkInput(pixelValues, grid);
    const at::Tensor embedded = embedPatches(pixelValues);
    const at::Tensor hidden = runBlocks(embedded, grid, trace);
    if (trace) {
        trace->patchEmbeddings = embedded;
        trace->blockOutput = hidden;
    }
    return merge(hidden);
}

} // namespace kvsteer
