#include "models/common/VisionTransformer.h"

#include "io/Checkpoint.h"
#include "nn/Activation.h"
#include "nn/AttentionMatmul.h"
#include "nn/Linear.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/softmax.h>

#include <cmath>

namespace kvsteer {

namespace {

std::string layerName(int i, const std::string& rest) { return "vision.encoder.layers." + std::to_string(i) + "." + rest; }

} // namespace

VisionTransformer::VisionTransformer(const VisionConfig& config, const VisionTowerSpec& spec, const Checkpoint& ckpt,
                                     const WeightFormat& format)
    : config_(config), spec_(spec) {
    const int64_t h = config.hiddenSize, p = config.patchSize, n = config.numPatches(), m = config.intermediateSize;
    // Norms, biases and embeddings are tiny: keep them in the compute dtype.
    WeightFormat small = format;
    small.storage = format.compute;
    patchWeight_ = loadWeight(ckpt, "vision.embeddings.patch_embedding.weight", {h, 3, p, p}, format);
    if (spec.patchBias) patchBias_ = loadWeight(ckpt, "vision.embeddings.patch_embedding.bias", {h}, small);
    if (spec.classToken) classEmbedding_ = loadWeight(ckpt, "vision.embeddings.class_embedding", {h}, small);
    positionEmbedding_ = loadWeight(ckpt, "vision.embeddings.position_embedding.weight", {n + (spec.classToken ? 1 : 0), h}, small);
    if (spec.preLayerNorm) {
        preLnWeight_ = loadWeight(ckpt, "vision.pre_layrnorm.weight", {h}, small);
        preLnBias_ = loadWeight(ckpt, "vision.pre_layrnorm.bias", {h}, small);
    }
    if (spec.postLayerNorm) {
        postLnWeight_ = loadWeight(ckpt, "vision.post_layernorm.weight", {h}, small);
        postLnBias_ = loadWeight(ckpt, "vision.post_layernorm.bias", {h}, small);
    }
    for (int i = 0; i < spec.layersToRun; ++i) {
        Layer L;
        L.ln1Weight = loadWeight(ckpt, layerName(i, "layer_norm1.weight"), {h}, small);
        L.ln1Bias = loadWeight(ckpt, layerName(i, "layer_norm1.bias"), {h}, small);
        L.ln2Weight = loadWeight(ckpt, layerName(i, "layer_norm2.weight"), {h}, small);
        L.ln2Bias = loadWeight(ckpt, layerName(i, "layer_norm2.bias"), {h}, small);
        L.qWeight = loadWeight(ckpt, layerName(i, "self_attn.q_proj.weight"), {h, h}, format);
        L.kWeight = loadWeight(ckpt, layerName(i, "self_attn.k_proj.weight"), {h, h}, format);
        L.vWeight = loadWeight(ckpt, layerName(i, "self_attn.v_proj.weight"), {h, h}, format);
        L.qBias = loadWeight(ckpt, layerName(i, "self_attn.q_proj.bias"), {h}, small);
        L.kBias = loadWeight(ckpt, layerName(i, "self_attn.k_proj.bias"), {h}, small);
        L.vBias = loadWeight(ckpt, layerName(i, "self_attn.v_proj.bias"), {h}, small);
        L.outWeight = loadWeight(ckpt, layerName(i, "self_attn.out_proj.weight"), {h, h}, format);
        L.outBias = loadWeight(ckpt, layerName(i, "self_attn.out_proj.bias"), {h}, small);
        L.fc1Weight = loadWeight(ckpt, layerName(i, "mlp.fc1.weight"), {m, h}, format);
        L.fc1Bias = loadWeight(ckpt, layerName(i, "mlp.fc1.bias"), {m}, small);
        L.fc2Weight = loadWeight(ckpt, layerName(i, "mlp.fc2.weight"), {h, m}, format);
        L.fc2Bias = loadWeight(ckpt, layerName(i, "mlp.fc2.bias"), {h}, small);
        layers_.push_back(std::move(L));
    }
}

at::Tensor VisionTransformer::encoderLayer(const at::Tensor& x, const Layer& L) const {
    const int64_t b = x.size(0), t = x.size(1), h = config_.hiddenSize, heads = config_.numHeads, d = config_.headDim();
    const double eps = config_.layerNormEps;

    // Self-attention (bidirectional). transformers scales q before the product.
    at::Tensor y = at::layer_norm(x, {h}, L.ln1Weight, L.ln1Bias, eps);
    auto heads4d = [&](const at::Tensor& x) { return x.view({b, t, heads, d}).transpose(1, 2); };
    at::Tensor q = heads4d(applyLinear(y, L.qWeight, L.qBias) * (1.0 / std::sqrt(static_cast<double>(d))));
    at::Tensor k = heads4d(applyLinear(y, L.kWeight, L.kBias));
    at::Tensor v = heads4d(applyLinear(y, L.vWeight, L.vBias));
    at::Tensor probs = at::softmax(matmulTransposed(q, k), -1);
    at::Tensor attn = matmulPlain(probs, v).transpose(1, 2).reshape({b, t, h});
    at::Tensor r = x + applyLinear(attn, L.outWeight, L.outBias);

    // MLP: fc1 -> activation -> fc2.
    y = at::layer_norm(r, {h}, L.ln2Weight, L.ln2Bias, eps);
    y = applyLinear(y, L.fc1Weight, L.fc1Bias);
    return r + applyLinear(activation(y), L.fc2Weight, L.fc2Bias);
}

at::Tensor VisionTransformer::activation(const at::Tensor& y) const {
    if (config_.hiddenAct == "quick_gelu") return activate(y, Activation::QuickGelu);
    if (config_.hiddenAct == "gelu_pytorch_tanh") return activate(y, Activation::GeluTanh);
    return activate(y, Activation::GeluErf);   // exact (erf) GELU
}

at::Tensor VisionTransformer::forward(const at::Tensor& pixels, at::Tensor* embeddings) const {
    const int64_t b = pixels.size(0), p = config_.patchSize, h = config_.hiddenSize;
    const c10::ScalarType dtype = positionEmbedding_.scalar_type();
    // The stride-p, kernel-p convolution, flattened row-major over the grid: patch i is grid cell (i / g, i % g).
    // ATen's conv2d, not kvsteer's kernels: its sums are transformers' own, bit for bit, and the
    // tower amplifies a difference here some 60-fold by its output (tiny-llava: 2e-6 in the
    // embeddings from another summation order became 1.5e-4 in the image features, over the
    // reference's 1e-4). Its bits are the same at every thread count here (test_determinism).
    at::Tensor x = at::conv2d(pixels.to(dtype), patchWeight_.to(dtype), patchBias_, p).flatten(2).transpose(1, 2);
    if (spec_.classToken) x = at::cat({classEmbedding_.view({1, 1, h}).expand({b, 1, h}), x}, 1);
    x = x + positionEmbedding_.unsqueeze(0);
    if (spec_.preLayerNorm) x = at::layer_norm(x, {h}, preLnWeight_, preLnBias_, config_.layerNormEps);
    if (embeddings) *embeddings = x;
    for (const Layer& L : layers_) x = encoderLayer(x, L);
    if (spec_.postLayerNorm) x = at::layer_norm(x, {h}, postLnWeight_, postLnBias_, config_.layerNormEps);
    return x;
}

} // namespace kvsteer
