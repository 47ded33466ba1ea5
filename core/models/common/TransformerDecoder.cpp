#include "models/common/TransformerDecoder.h"

#include "Error.h"
#include "cache/KVCache.h"
#include "io/Checkpoint.h"
#include "nn/Activation.h"
#include "nn/AttentionMatmul.h"
#include "nn/DecodeAttention.h"
#include "nn/RmsNorm.h"
#include "nn/RotateHalf.h"

#include "ThreadPool.h"
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/full.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/softmax.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace kvsteer {

namespace {

std::string layerName(int i, const std::string& rest) { return "text.layers." + std::to_string(i) + "." + rest; }

// Llama-3's scaled frequencies, in float32 and in transformers' order of operations
// (_compute_llama3_parameters; `x / t` for a number x and a tensor t is reciprocal(t) * x there):
// a wavelength shorter than original / high_freq_factor is kept, one longer than
// original / low_freq_factor is divided by the factor, and in between the two are blended by
// how far the wavelength sits between those bounds.
at::Tensor llama3Frequencies(const at::Tensor& invFreq, const RopeScaling& r) {
    const double original = double(r.originalMaxPositions);
    const double lowFreqWavelength = original / r.lowFreqFactor, highFreqWavelength = original / r.highFreqFactor;
    const at::Tensor wavelength = at::reciprocal(invFreq) * (2 * M_PI);
    const at::Tensor divided = at::where(wavelength > lowFreqWavelength, invFreq / r.factor, invFreq);
    const at::Tensor smooth = (at::reciprocal(wavelength) * original - r.lowFreqFactor) / (r.highFreqFactor - r.lowFreqFactor);
    const at::Tensor smoothed = (1 - smooth) * divided / r.factor + smooth * divided;
    const at::Tensor medium = (wavelength >= highFreqWavelength).logical_and(wavelength <= lowFreqWavelength);
    return at::where(medium, smoothed, divided);
}

// An RMSNorm weight as the forward pass multiplies by it: Gemma stores w and scales by (1 + w),
// which is added here once, in float32 like transformers' GemmaRMSNorm.
at::Tensor loadNorm(const Checkpoint& ckpt, const std::string& name, int64_t d, const WeightFormat& small, bool addsOne) {
    at::Tensor w = loadWeight(ckpt, name, {d}, small);
    return addsOne ? (w.to(at::kFloat) + 1.0).to(w.scalar_type()) : w;
}

} // namespace

std::vector<int64_t> ropeFrequencyRows(const std::vector<int>& sections, bool interleaved, int64_t halfDim) {
    std::vector<int64_t> rows;
    if (sections.empty()) return std::vector<int64_t>(size_t(halfDim), 0);
    if (interleaved) {
        for (int64_t j = 0; j < halfDim; ++j)
            rows.push_back(j % 3 == 1 && j < 3 * sections[1] ? 1 : j % 3 == 2 && j < 3 * sections[2] ? 2 : 0);
        return rows;
    }
    for (size_t axis = 0; axis < sections.size(); ++axis) rows.insert(rows.end(), sections[axis], int64_t(axis));
    if (int64_t(rows.size()) != halfDim) throw Error("mrope_section must sum to head_dim / 2 (" + std::to_string(halfDim) + ")");
    return rows;
}

TransformerDecoder::TransformerDecoder(const TextConfig& c, const Checkpoint& ckpt, const WeightFormat& format) : config_(c), format_(format) {
    const int64_t d = c.hiddenSize, hd = c.headDim, qDim = int64_t(c.numHeads) * hd, kvDim = int64_t(c.numKvHeads) * hd;
    const int64_t inter = c.intermediateSize, vocab = c.vocabSize;
    WeightFormat small = format;
    small.storage = format.compute;

    embedTokens_ = loadWeight(ckpt, "text.embed_tokens.weight", {vocab, d}, format);
    finalNorm_ = loadNorm(ckpt, "text.norm.weight", d, small, c.normAddsOne);
    if (ckpt.has("lm_head.weight")) lmHead_ = loadLinear(ckpt, "lm_head.weight", {vocab, d}, format);
    else if (c.tieWordEmbeddings) lmHead_ = LinearWeight{{embedTokens_}};
    else lmHead_ = loadLinear(ckpt, "lm_head.weight", {vocab, d}, format);   // throws: missing tensor

    for (int i = 0; i < c.numLayers; ++i) {
        Layer L;
        L.inputNorm = loadNorm(ckpt, layerName(i, "input_layernorm.weight"), d, small, c.normAddsOne);
        L.postNorm = loadNorm(ckpt, layerName(i, "post_attention_layernorm.weight"), d, small, c.normAddsOne);
        L.qkvWeight = loadFusedLinear(ckpt,
                                      {layerName(i, "self_attn.q_proj.weight"), layerName(i, "self_attn.k_proj.weight"),
                                       layerName(i, "self_attn.v_proj.weight")},
                                      {{qDim, d}, {kvDim, d}, {kvDim, d}}, format);
        if (c.attentionBias || c.qkvBiasOnly)
            L.qkvBias = at::cat({loadWeight(ckpt, layerName(i, "self_attn.q_proj.bias"), {qDim}, small),
                                 loadWeight(ckpt, layerName(i, "self_attn.k_proj.bias"), {kvDim}, small),
                                 loadWeight(ckpt, layerName(i, "self_attn.v_proj.bias"), {kvDim}, small)});
        if (c.qkNorm) {
            L.qNorm = loadWeight(ckpt, layerName(i, "self_attn.q_norm.weight"), {hd}, small);
            L.kNorm = loadWeight(ckpt, layerName(i, "self_attn.k_norm.weight"), {hd}, small);
        }
        L.oWeight = loadLinear(ckpt, layerName(i, "self_attn.o_proj.weight"), {d, qDim}, format);
        if (c.attentionBias) L.oBias = loadWeight(ckpt, layerName(i, "self_attn.o_proj.bias"), {d}, small);
        L.gateUpWeight = loadFusedLinear(ckpt, {layerName(i, "mlp.gate_proj.weight"), layerName(i, "mlp.up_proj.weight")},
                                         {{inter, d}, {inter, d}}, format);
        L.downWeight = loadLinear(ckpt, layerName(i, "mlp.down_proj.weight"), {d, inter}, format);
        layers_.push_back(std::move(L));
    }

    // RoPE frequencies exactly as transformers builds them: inv_freq = 1 / theta^(2i/d) in float32.
    // Frequency i reads position row freqRow_[i] (ropeFrequencyRows).
    invFreq_ = 1.0 / at::pow(c.ropeTheta, at::arange(0, hd, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) / double(hd));
    if (c.ropeScaling.type == "llama3") invFreq_ = llama3Frequencies(invFreq_, c.ropeScaling);
    freqRow_ = at::tensor(ropeFrequencyRows(c.mropeSection, c.mropeInterleaved, hd / 2), at::TensorOptions().dtype(at::kLong));
    positionRows_ = c.mropeSection.empty() ? 1 : 3;
    // Gemma's normalizer is a tensor of the hidden states' dtype: sqrt(hidden) rounded to it.
    if (c.scaleEmbeddings)
        embedScale_ = at::scalar_tensor(std::sqrt(double(d)), at::TensorOptions().dtype(format.compute)).item<double>();
}

at::Tensor graphStepMask(const at::Tensor& keyIndex, const at::Tensor& cacheIndex, c10::ScalarType dtype) {
    return at::zeros({1, keyIndex.size(0)}, keyIndex.options().dtype(dtype))
        .masked_fill_(keyIndex.gt(cacheIndex), -std::numeric_limits<double>::infinity());
}

at::Tensor TransformerDecoder::embed(const at::Tensor& ids) const {
    return at::embedding(embedTokens_, ids.to(format_.device)).to(format_.compute);
}

Activation TransformerDecoder::activation() const {
    // The gate of the gated MLP: SwiGLU (Llama) or GeGLU with the tanh GELU (Gemma).
    return config_.hiddenAct == "silu" ? Activation::Silu : Activation::GeluTanh;
}

namespace {

// Attention of one block of query groups against its keys, any leading dims [...]:
//   q [..., G*T, hd]; k, v [..., S, hd]; mask [T, S] or undefined; bias [..., G or 1, 1, S'] or
//   undefined (added to the first S' keys) -> probs [..., G, T, S] and out [..., G*T, hd].
std::pair<at::Tensor, at::Tensor> attendBlock(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                                              const at::Tensor& bias, double scale, int64_t g, int64_t t) {
    std::vector<int64_t> lead(q.sizes().begin(), q.sizes().end() - 2);
    std::vector<int64_t> grouped = lead, flat = lead;
    grouped.insert(grouped.end(), {g, t, k.size(-2)});
    flat.insert(flat.end(), {g * t, k.size(-2)});
    at::Tensor scores = matmulTransposed(q, k).view(grouped);   // a fresh tensor: edited in place
    scores.mul_(scale);
    if (mask.defined()) scores.add_(mask);   // [T, S] causal mask broadcasts
    if (bias.defined()) scores.narrow(-1, 0, bias.size(-1)).add_(bias);
    at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
    return {probs, matmulPlain(probs.view(flat), v)};
}

// Several query positions (a prompt, a suffix): below this many elements a batch row touches (its
// cache plus its scores, over all KV heads), the whole batch is one batched matmul: each
// (row, head) block costs microseconds of ATen calls and little arithmetic, so a short suffix of a
// small model is faster as one call than spread over the pool. (One position, a decode step, goes
// through decodeAttention on CPU.) The choice depends on the row's own size, never
// on the batch size, so a row gives the same bits alone or batched (the atlas and the pair rely
// on it).
constexpr int64_t kBatchedAttentionMaxElements = 1 << 18;

} // namespace

at::Tensor TransformerDecoder::attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                            const at::Tensor& bias, at::Tensor* captured) const {
    // q [B, H, T, hd]; k, v [B, H_kv, S, hd]. Grouped-query attention without repeating K/V:
    // the G = H / H_kv query heads that share a KV head are stacked along the query axis.
    const int64_t b = q.size(0), h = q.size(1), t = q.size(2), hd = q.size(3);
    const int64_t hkv = k.size(1), g = h / hkv, s = k.size(2);
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    // bias [Bb, Hb, S'] -> [Bb, H_kv or 1, G or 1, 1, S'], added to the first S' key positions.
    at::Tensor bb;
    if (bias.defined())
        bb = (bias.size(1) == 1 ? bias.view({bias.size(0), 1, 1, 1, bias.size(2)}) : bias.view({bias.size(0), hkv, g, 1, bias.size(2)}))
                 .to(q.scalar_type());

    if (t == 1 && !mask.defined() && decodeAttentionTakes(q, k, v, bb)) {   // a decode step on CPU: plain loops
        at::Tensor probs;
        const at::Tensor o = decodeAttention(q, k, v, bb, scale, captured ? &probs : nullptr);   // [B, H, hd]
        if (captured) *captured = probs.reshape({b, h, s});
        return o.view({b, 1, h * hd});
    }

    const at::Tensor qg = q.reshape({b, hkv, g * t, hd});
    at::Tensor out, lastProbs;   // [B, H_kv, G*T, hd]; [B, H_kv, G, S]
    const bool smallRows = hkv * s * (hd + g * t) <= kBatchedAttentionMaxElements;
    if (!q.device().is_cpu() || smallRows) {
        // A GPU runs the whole batch of heads as one kernel each; so does the CPU for small rows.
        auto [probs, o] = attendBlock(qg, k, v, mask, bb, scale, g, t);
        out = o;
        if (captured) lastProbs = probs.select(3, t - 1);
    } else {
        // On CPU each (batch row, KV head) is independent, so the pairs are spread over the
        // thread pool: ATen would run these small matmuls one after another on one thread, and
        // in a decode step they read the whole cache (a 7B cache of 600 tokens is 630 MB).
        out = at::empty({b, hkv, g * t, hd}, q.options());
        if (captured) lastProbs = at::empty({b, hkv, g, s}, q.options());
        parallelFor(0, b * hkv, 1, [&](int64_t first, int64_t end) {
            for (int64_t i = first; i < end; ++i) {
                const int64_t bi = i / hkv, hi = i % hkv;
                const at::Tensor row = bb.defined() ? bb[bb.size(0) == 1 ? 0 : bi][bb.size(1) == 1 ? 0 : hi] : at::Tensor();
                auto [probs, o] = attendBlock(qg[bi][hi], k[bi][hi], v[bi][hi], mask, row, scale, g, t);
                out[bi][hi].copy_(o);
                if (captured) lastProbs[bi][hi].copy_(probs.select(1, t - 1));
            }
        });
    }
    if (captured) *captured = lastProbs.reshape({b, h, s});
    return out.view({b, h, t, hd}).transpose(1, 2).reshape({b, t, h * hd});
}

at::Tensor TransformerDecoder::forward(const at::Tensor& embeds, KVCache& cache, ForwardPass* pass) const {
    const int64_t b = embeds.size(0), t = embeds.size(1);
    const int64_t h = config_.numHeads, hkv = config_.numKvHeads, hd = config_.headDim;
    const int64_t start = cache.size();
    if (start + t > config_.maxPositionEmbeddings)
        throw Error("sequence of " + std::to_string(start + t) + " tokens exceeds the model's context of " +
                    std::to_string(config_.maxPositionEmbeddings) + " (max_position_embeddings)");
    if (cache.numLayers() != config_.numLayers || cache.batch() != b)
        throw Error("KVCache shape does not match the model (layers or batch size)");

    const GraphStep* graph = pass ? pass->graphStep : nullptr;
    if (graph && t != 1) throw Error("a captured decode step feeds one token per row");
    const auto [cos, sin] = graph ? std::make_pair(graph->cos, graph->sin) : ropeTables(cache.positions(start, t));
    at::Tensor mask = graph ? graph->mask : at::Tensor();
    const bool bidirectional = pass && pass->bidirectional;
    if (t > 1 && !bidirectional)   // query i (cache index start+i) sees keys 0..start+i
        mask = at::full({t, start + t}, -std::numeric_limits<double>::infinity(), embeds.options()).triu(start + 1);
    if (pass && pass->captureAttention) pass->attention.assign(layers_.size(), at::Tensor());
    if (pass && pass->captureLayerInputs) pass->layerInputs.clear();

    at::Tensor x = embedScale_ == 1.0 ? embeds : embeds * embedScale_;
    for (size_t l = 0; l < layers_.size(); ++l) {
        if (pass && pass->stopRequested && pass->stopRequested()) throw ForwardStopped{};
        if (pass && pass->captureLayerInputs) pass->layerInputs.push_back(x);
        const Layer& L = layers_[l];
        at::Tensor qkv = applyLinear(rmsNorm(x, L.inputNorm, config_.rmsNormEps), L.qkvWeight, L.qkvBias);
        at::Tensor q = qkv.narrow(-1, 0, h * hd).view({b, t, h, hd}).transpose(1, 2);
        at::Tensor k = qkv.narrow(-1, h * hd, hkv * hd).view({b, t, hkv, hd}).transpose(1, 2);
        at::Tensor v = qkv.narrow(-1, (h + hkv) * hd, hkv * hd).view({b, t, hkv, hd}).transpose(1, 2);
        if (L.qNorm.defined()) {   // Qwen3: each head's q and k RMS-normed before RoPE (v is not)
            q = rmsNorm(q, L.qNorm, config_.rmsNormEps);
            k = rmsNorm(k, L.kNorm, config_.rmsNormEps);
        }
        q = rotateHalf(q, cos, sin);
        k = rotateHalf(k, cos, sin);
        auto [keys, values] = graph ? cache.writeAt(k, v, static_cast<int>(l), graph->cacheIndex) : cache.update(k, v, static_cast<int>(l));

        at::Tensor bias;
        if (pass && l < pass->attentionBias.size()) bias = pass->attentionBias[l];
        at::Tensor* captured = pass && pass->captureAttention ? &pass->attention[l] : nullptr;
        x = x + applyLinear(attention(q, keys, values, mask, bias, captured), L.oWeight, L.oBias);

        at::Tensor gateUp = applyLinear(rmsNorm(x, L.postNorm, config_.rmsNormEps), L.gateUpWeight);
        const int64_t inter = config_.intermediateSize;
        x = x + applyLinear(activateGated(gateUp.narrow(-1, 0, inter), gateUp.narrow(-1, inter, inter), activation()), L.downWeight);
        if (pass && pass->additions) addAfterLayer(x, l, start, *pass->additions);
    }
    return rmsNorm(x, finalNorm_, config_.rmsNormEps);   // in float32, like transformers' LlamaRMSNorm
}

void TransformerDecoder::addAfterLayer(at::Tensor& x, size_t l, int64_t start, const HiddenAdditions& additions) const {
    if (l >= additions.afterLayer.size()) return;
    const at::Tensor& rows = additions.afterLayer[l];   // [N, D]
    const int64_t from = std::max(start, additions.first), to = std::min(start + x.size(1), additions.first + rows.size(0));
    if (from >= to) return;   // this pass covers none of their tokens
    // x is this layer's fresh output: adding in place touches nothing else. The same float sum as
    // transformers' hidden[mask] + features, row for row, in every batch row.
    x.narrow(1, from - start, to - from).add_(rows.narrow(0, from - additions.first, to - from));
}

std::pair<at::Tensor, at::Tensor> TransformerDecoder::ropeTables(const at::Tensor& positions) const {
    // angle = float32(position * inv_freq), each frequency from its position row, the half-dim
    // table repeated twice (rotate-half pairs dims i and i + d/2).
    // [n] or [1, n] (the same position on every axis) or [positionRows_, n].
    at::Tensor pos = positions.to(at::kCPU).to(at::kFloat);
    if (pos.dim() == 1) pos = pos.unsqueeze(0);
    if (pos.size(0) == 1) pos = pos.expand({positionRows_, pos.size(1)});
    if (pos.size(0) != positionRows_)
        throw Error("RoPE positions have " + std::to_string(pos.size(0)) + " rows; this decoder expects " + std::to_string(positionRows_));
    const at::Tensor angles = (pos.index_select(0, freqRow_) * invFreq_.unsqueeze(1)).t();   // [n, d/2]
    const at::Tensor emb = at::cat({angles, angles}, -1);
    return {emb.cos().to(format_.device, format_.compute), emb.sin().to(format_.device, format_.compute)};
}

at::Tensor TransformerDecoder::rotate(const at::Tensor& x, const at::Tensor& positions, bool inverse) const {
    auto [cos, sin] = ropeTables(positions);
    cos = cos.to(x.device(), x.scalar_type());
    sin = sin.to(x.device(), x.scalar_type());
    return rotateHalf(x, cos, inverse ? -sin : sin);   // rotating by -theta undoes rotating by theta
}

std::vector<const LinearWeight*> TransformerDecoder::decodeStepWeights() const {
    std::vector<const LinearWeight*> weights{&lmHead_};
    for (const Layer& L : layers_)
        for (const LinearWeight* w : {&L.qkvWeight, &L.oWeight, &L.gateUpWeight, &L.downWeight}) weights.push_back(w);
    return weights;
}

int64_t TransformerDecoder::weightBytesPerToken() const {
    int64_t total = 0;
    for (const LinearWeight* w : decodeStepWeights())
        for (const at::Tensor& p : w->parts) total += p.numel() * static_cast<int64_t>(p.element_size());
    return total;
}

at::Tensor TransformerDecoder::logits(const at::Tensor& hidden) const { return applyLinear(hidden, lmHead_).to(at::kFloat); }

} // namespace kvsteer
