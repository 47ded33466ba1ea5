// The demo trainer (see DemoTrainer.h). The only core file that includes <torch/torch.h>
// (for torch::optim::AdamW and gradient clipping); everything else is ATen ops with autograd.
#include <torch/torch.h>

#include "demo/DemoTrainer.h"

#include "Error.h"
#include "Runtime.h"
#include "demo/DemoFiles.h"
#include "demo/ShapeWorld.h"
#include "cache/KVCache.h"
#include "demo/DemoEval.h"
#include "model/Image.h"
#include "model/LlavaModel.h"
#include "model/RandomModel.h"
#include "model/SafeTensors.h"
#include "pipeline/Prompt.h"
#include "model/Tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

namespace kvsteer::demo {

namespace fs = std::filesystem;

ModelConfig demoModelConfig(const DemoModelSizes& s, int64_t vocabSize, int64_t imageTokenIndex) {
    ModelConfig c;
    c.modelType = "llava";
    c.hasVision = true;
    c.vision.hiddenSize = s.visionHidden;
    c.vision.intermediateSize = s.visionMlp;
    c.vision.numLayers = s.visionLayers;
    c.vision.numHeads = s.visionHeads;
    c.vision.imageSize = kImageSize;
    c.vision.patchSize = 14;
    c.vision.hiddenAct = "quick_gelu";
    c.text.vocabSize = vocabSize;
    c.text.hiddenSize = s.textHidden;
    c.text.intermediateSize = s.textMlp;
    c.text.numLayers = s.textLayers;
    c.text.numHeads = s.textHeads;
    c.text.numKvHeads = s.textKvHeads;
    c.text.headDim = s.textHidden / s.textHeads;
    c.text.rmsNormEps = 1e-5;
    c.text.maxPositionEmbeddings = s.maxPositions;
    c.text.bosTokenId = 1;
    c.text.eosTokenIds = {2};
    c.imageTokenIndex = imageTokenIndex;
    c.visionFeatureLayer = -2;
    c.visionFeatureSelectStrategy = "default";
    c.projectorHiddenAct = "gelu";
    return c;
}

namespace {

using at::Tensor;

double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string formatDuration(double s) {
    char buf[32];
    const int total = static_cast<int>(std::max(0.0, s));
    std::snprintf(buf, sizeof buf, "%d:%02d:%02d", total / 3600, (total / 60) % 60, total % 60);
    return buf;
}

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ---------------------------------------------------------------------------------------------
// Parameters, by their llava-hf names.

const std::string kV = "vision_tower.vision_model.";
const std::string kT = "language_model.model.";

struct Parameters {
    std::vector<TensorSpec> layout;
    std::map<std::string, Tensor> tensors;
    std::vector<Tensor> decay, noDecay;   // trainable ones

    const Tensor& operator()(const std::string& name) const {
        auto it = tensors.find(name);
        if (it == tensors.end()) throw Error("demo trainer: no parameter " + name);
        return it->second;
    }
};

// The 2D sine/cosine table CLIP's learned position embedding starts from, in the last quarter of
// the channels: half of them encode the row, half the column; centred over the grid; the CLS row
// is zero.
int positionChannels(int dim) { return dim / 4; }

Tensor sincosPositions(int grid, int dim, double amplitude) {
    const int pc = positionChannels(dim), half = pc / 2, first = dim - pc;
    std::vector<float> table(static_cast<size_t>(grid * grid + 1) * dim, 0.0f);
    for (int r = 0; r < grid; ++r)
        for (int c = 0; c < grid; ++c) {
            float* row = &table[static_cast<size_t>(1 + r * grid + c) * dim + first];
            for (int i = 0; i < half / 2; ++i) {
                // Periods from 48 cells (a half-wave over the grid) down to ~3 cells.
                const double freq = 2 * M_PI / (48.0 * std::pow(16.0, -double(i) / std::max(1, half / 2 - 1)));
                row[2 * i] = float(amplitude * std::sin((r + 0.5) * freq));
                row[2 * i + 1] = float(amplitude * std::cos((r + 0.5) * freq));
                row[half + 2 * i] = float(amplitude * std::sin((c + 0.5) * freq));
                row[half + 2 * i + 1] = float(amplitude * std::cos((c + 0.5) * freq));
            }
        }
    Tensor t = at::from_blob(table.data(), {grid * grid + 1, dim}, at::kFloat).clone();
    Tensor grid_ = t.narrow(0, 1, grid * grid);
    grid_.sub_(grid_.mean(0, true));   // centred: no constant component
    return t;
}

// Oriented step edges, one filter per direction (the same on R, G and B), scaled to `norm`:
// what tells the shapes apart is the direction of their edges (squares: axis-aligned; triangles:
// steep diagonals; circles: every direction), and a random patch embedding hides it.
Tensor orientedEdgeFilters(int count, int patchSize, double norm) {
    Tensor filters = at::empty({count, 3, patchSize, patchSize});
    auto a = filters.accessor<float, 4>();
    const double centre = (patchSize - 1) / 2.0;
    for (int k = 0; k < count; ++k) {
        const double angle = 2 * M_PI * k / count;
        for (int y = 0; y < patchSize; ++y)
            for (int x = 0; x < patchSize; ++x) {
                const double d = (x - centre) * std::cos(angle) + (y - centre) * std::sin(angle);
                for (int ch = 0; ch < 3; ++ch) a[k][ch][y][x] = float(std::tanh(d / 2.0));
            }
        filters[k].mul_(norm / filters[k].norm().item<double>());
    }
    return filters;
}

// The vision tower's starting point: random, except for two designed parts of the embeddings.
//   - Where a patch is gets channels of its own: a centred 2D sine/cosine table in the last
//     quarter of the position embedding's channels, with zero patch-embedding weights there, so
//     position starts readable beside the much larger colour signal.
//   - Sixteen channels before those start as oriented edge filters (orientedEdgeFilters).
// Measured (stage 0 alone): without the edge filters and the pooled readout of pretrainVision,
// shape kind stayed at chance for 1500 steps; with both, a shape's kind is read right 86 % of the
// time after 1000 steps and 99 % after 3000.
void designVisionInit(Parameters& p, const ModelConfig& c) {
    torch::NoGradGuard noGrad;
    const int h = c.vision.hiddenSize, pc = positionChannels(h), edges = 16;
    p(kV + "embeddings.position_embedding.weight").copy_(sincosPositions(c.vision.gridSize(), h, 1.0));
    Tensor patch = p(kV + "embeddings.patch_embedding.weight");   // [h, 3, 14, 14]
    patch.narrow(0, h - pc, pc).zero_();
    // Twice as strong as an average random filter, so the edges stand out from the start.
    const double randomNorm = patch.narrow(0, 0, h - pc - edges).norm(2, {1, 2, 3}).mean().item<double>();
    patch.narrow(0, h - pc - edges, edges).copy_(orientedEdgeFilters(edges, c.vision.patchSize, 2 * randomNorm));
}

Parameters initParameters(const ModelConfig& c, uint64_t seed) {
    Parameters p;
    p.layout = checkpointLayout(c);
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    const int used = c.visionLayersNeeded();
    const double residualScaleText = 1.0 / std::sqrt(2.0 * c.text.numLayers);
    const double residualScaleVision = 1.0 / std::sqrt(2.0 * used);
    for (const TensorSpec& spec : p.layout) {
        const std::string& n = spec.name;
        const bool isNorm = n.find("norm") != std::string::npos;
        Tensor t;
        if (isNorm && endsWith(n, ".weight")) t = at::ones(spec.shape);
        else if (endsWith(n, ".bias")) t = at::zeros(spec.shape);
        else {
            double std = 0.02;
            if (endsWith(n, "o_proj.weight") || endsWith(n, "down_proj.weight")) std *= residualScaleText;
            if (endsWith(n, "out_proj.weight") || endsWith(n, "fc2.weight")) std *= residualScaleVision;
            t = at::normal(0.0, std, spec.shape, gen);
        }
        // Parts LLaVA never runs (vision layers past the feature layer, post_layernorm) keep their
        // initial values and get no gradient.
        bool trainable = n.find("post_layernorm") == std::string::npos;
        const std::string layerPrefix = kV + "encoder.layers.";
        if (n.compare(0, layerPrefix.size(), layerPrefix) == 0) {
            const int layer = std::stoi(n.substr(layerPrefix.size()));
            if (layer >= used) trainable = false;
        }
        if (trainable) {
            t.set_requires_grad(true);
            const bool noDecay = t.dim() < 2 || n.find("embedding") != std::string::npos || n.find("embed_tokens") != std::string::npos;
            (noDecay ? p.noDecay : p.decay).push_back(t);
        }
        p.tensors[n] = t;
    }
    designVisionInit(p, c);
    return p;
}

// ---------------------------------------------------------------------------------------------
// The forward pass (same math as ClipVision.cpp, LlavaModel.cpp and Llama.cpp).

struct Net {
    const ModelConfig& c;
    const Parameters& p;
    Tensor ropeCos, ropeSin;   // [max_positions, head_dim]

    Net(const ModelConfig& config, const Parameters& params) : c(config), p(params) {
        const int64_t hd = c.text.headDim;
        Tensor invFreq = 1.0 / at::pow(c.text.ropeTheta, at::arange(0, hd, 2, at::kLong).to(at::kFloat) / double(hd));
        Tensor angles = at::outer(at::arange(c.text.maxPositionEmbeddings, at::kFloat), invFreq);
        Tensor emb = at::cat({angles, angles}, -1);
        ropeCos = emb.cos();
        ropeSin = emb.sin();
    }

    Tensor clipLayer(const Tensor& x, int i) const {
        const std::string l = kV + "encoder.layers." + std::to_string(i) + ".";
        const int64_t b = x.size(0), t = x.size(1), h = c.vision.hiddenSize, heads = c.vision.numHeads, d = c.vision.headDim();
        const double eps = c.vision.layerNormEps;
        Tensor y = at::layer_norm(x, {h}, p(l + "layer_norm1.weight"), p(l + "layer_norm1.bias"), eps);
        auto split = [&](const Tensor& z) { return z.view({b, t, heads, d}).transpose(1, 2); };
        Tensor q = split(at::linear(y, p(l + "self_attn.q_proj.weight"), p(l + "self_attn.q_proj.bias")) * (1.0 / std::sqrt(double(d))));
        Tensor k = split(at::linear(y, p(l + "self_attn.k_proj.weight"), p(l + "self_attn.k_proj.bias")));
        Tensor v = split(at::linear(y, p(l + "self_attn.v_proj.weight"), p(l + "self_attn.v_proj.bias")));
        Tensor probs = at::softmax(at::matmul(q, k.transpose(-1, -2)), -1);
        Tensor attn = at::matmul(probs, v).transpose(1, 2).reshape({b, t, h});
        Tensor r = x + at::linear(attn, p(l + "self_attn.out_proj.weight"), p(l + "self_attn.out_proj.bias"));
        y = at::layer_norm(r, {h}, p(l + "layer_norm2.weight"), p(l + "layer_norm2.bias"), eps);
        y = at::linear(y, p(l + "mlp.fc1.weight"), p(l + "mlp.fc1.bias"));
        y = y * at::sigmoid(1.702 * y);   // quick_gelu
        return r + at::linear(y, p(l + "mlp.fc2.weight"), p(l + "mlp.fc2.bias"));
    }

    // pixels [B, 3, 336, 336] -> hidden_states[-2] without CLS, [B, 576, Dv].
    Tensor visionFeatures(const Tensor& pixels) const {
        const int64_t b = pixels.size(0), g = c.vision.gridSize(), ps = c.vision.patchSize, h = c.vision.hiddenSize;
        // The stride-14 14x14 convolution as one matmul over flattened patches (c, ky, kx order,
        // the conv weight's layout); patch i is grid cell (i / 24, i % 24).
        Tensor patches = pixels.view({b, 3, g, ps, g, ps}).permute({0, 2, 4, 1, 3, 5}).reshape({b, g * g, 3 * ps * ps});
        Tensor x = at::matmul(patches, p(kV + "embeddings.patch_embedding.weight").view({h, 3 * ps * ps}).t());
        Tensor cls = p(kV + "embeddings.class_embedding").view({1, 1, h}).expand({b, 1, h});
        x = at::cat({cls, x}, 1) + p(kV + "embeddings.position_embedding.weight").unsqueeze(0);
        x = at::layer_norm(x, {h}, p(kV + "pre_layrnorm.weight"), p(kV + "pre_layrnorm.bias"), c.vision.layerNormEps);
        for (int i = 0; i < c.visionLayersNeeded(); ++i) x = clipLayer(x, i);
        return x.narrow(1, 1, g * g);   // "default": CLS dropped
    }

    // pixels [B, 3, 336, 336] -> projected image features [B, 576, D].
    Tensor encodeImages(const Tensor& pixels) const {
        Tensor y = at::gelu(at::linear(visionFeatures(pixels), p("multi_modal_projector.linear_1.weight"), p("multi_modal_projector.linear_1.bias")));
        return at::linear(y, p("multi_modal_projector.linear_2.weight"), p("multi_modal_projector.linear_2.bias"));
    }

    Tensor rmsNorm(const Tensor& x, const Tensor& w) const {
        return w * (x * at::rsqrt(x.pow(2).mean(-1, true) + c.text.rmsNormEps));
    }

    static Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
        const int64_t half = x.size(-1) / 2;
        Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
        return x * cos + rotated * sin;
    }

    Tensor mlp(const Tensor& x, const std::string& l) const {
        Tensor y = rmsNorm(x, p(l + "post_attention_layernorm.weight"));
        Tensor gate = at::linear(y, p(l + "mlp.gate_proj.weight")), up = at::linear(y, p(l + "mlp.up_proj.weight"));
        return at::linear(at::silu(gate) * up, p(l + "mlp.down_proj.weight"));
    }

    // GQA attention of queries q [B, H, N, hd] over keys/values [B, H_kv, M, hd] with an additive
    // mask broadcastable to [B, H_kv, G, N, M]. Returns [B, N, H*hd].
    // With `probsOut`, the attention probabilities [B, H, N, M] are stored there.
    Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, Tensor* probsOut = nullptr) const {
        const int64_t b = q.size(0), h = q.size(1), n = q.size(2), hd = q.size(3), hkv = k.size(1), g = h / hkv, m = k.size(2);
        Tensor qg = q.reshape({b, hkv, g * n, hd});
        Tensor scores = (at::matmul(qg, k.transpose(-1, -2)) / std::sqrt(double(hd))).view({b, hkv, g, n, m}) + mask;
        Tensor probs = at::softmax(scores, -1).view({b, hkv, g * n, m});
        if (probsOut) *probsOut = probs.view({b, h, n, m});   // head kvHead * g + j, as q's heads
        return at::matmul(probs, v).view({b, h, n, hd}).transpose(1, 2).reshape({b, n, h * hd});
    }

    // One decoder layer over the packed batch x [B, P+S, D]: P shared prefix tokens then S
    // segment tokens. With `segmentsOnly` (the last layer) only the segment rows are computed
    // past K/V (nothing reads the prefix rows' outputs) and [B, S, D] is returned. With
    // `segmentProbs`, the segment queries' attention probabilities [B, H, S, P+S] are stored there.
    Tensor llamaLayer(const Tensor& x, int i, int64_t prefixLen, const Tensor& cos, const Tensor& sin, const Tensor& prefixMask,
                      const Tensor& segmentMask, bool segmentsOnly, Tensor* segmentProbs = nullptr) const {
        const std::string l = kT + "layers." + std::to_string(i) + ".";
        const int64_t b = x.size(0), t = x.size(1), s = t - prefixLen;
        const int64_t h = c.text.numHeads, hkv = c.text.numKvHeads, hd = c.text.headDim;
        Tensor y = rmsNorm(x, p(l + "input_layernorm.weight"));
        Tensor k = rope(at::linear(y, p(l + "self_attn.k_proj.weight")).view({b, t, hkv, hd}).transpose(1, 2), cos, sin);
        Tensor v = at::linear(y, p(l + "self_attn.v_proj.weight")).view({b, t, hkv, hd}).transpose(1, 2);
        const Tensor& wq = p(l + "self_attn.q_proj.weight");
        const Tensor& wo = p(l + "self_attn.o_proj.weight");

        // Segment queries see every prefix key and their own segment, causally.
        Tensor qS = rope(at::linear(y.narrow(1, prefixLen, s), wq).view({b, s, h, hd}).transpose(1, 2), cos.narrow(2, prefixLen, s),
                         sin.narrow(2, prefixLen, s));
        Tensor outS = attention(qS, k, v, segmentMask, segmentProbs);
        if (segmentsOnly) {
            Tensor xs = x.narrow(1, prefixLen, s) + at::linear(outS, wo);
            return xs + mlp(xs, l);
        }
        // Prefix queries see the prefix only, causally.
        Tensor qP = rope(at::linear(y.narrow(1, 0, prefixLen), wq).view({b, prefixLen, h, hd}).transpose(1, 2),
                         cos.narrow(2, 0, prefixLen), sin.narrow(2, 0, prefixLen));
        Tensor outP = attention(qP, k.narrow(2, 0, prefixLen), v.narrow(2, 0, prefixLen), prefixMask);
        Tensor r = x + at::linear(at::cat({outP, outS}, 1), wo);
        return r + mlp(r, l);
    }
};

// ---------------------------------------------------------------------------------------------
// Data: tokenised question segments and packed batches.

struct Segment {
    std::vector<int64_t> tokens;   // after-image prompt tokens, answer tokens, EOS
    int answerStart = 0;           // index in tokens of the first answer token
    QuestionType type = QuestionType::Color;
    std::vector<int> answerItem;   // descriptions: per answer token and EOS, the item it spells (-1: separator, EOS)
};

// The items of a description, "a red circle, a yellow circle and a green triangle" -> their
// [begin, end) character spans.
std::vector<std::pair<size_t, size_t>> describedItems(const std::string& text) {
    std::vector<std::pair<size_t, size_t>> spans;
    size_t begin = 0;
    while (begin <= text.size()) {
        const size_t comma = text.find(", ", begin), andWord = text.find(" and ", begin);
        const size_t end = std::min({comma, andWord, text.size()});
        spans.push_back({begin, end});
        if (end == text.size()) break;
        begin = end + (end == comma ? 2 : 5);
    }
    return spans;
}

// Which item each answer token of a description spells: the item holding the token's first
// non-space character, found by decoding the answer one token further at a time.
std::vector<int> itemOfEachToken(const Tokenizer& tok, const std::vector<int64_t>& answer, const std::string& text) {
    const std::vector<std::pair<size_t, size_t>> items = describedItems(text);
    std::vector<int> out;
    size_t done = 0;
    for (size_t t = 0; t < answer.size(); ++t) {
        std::string prefix = tok.decode(std::vector<int64_t>(answer.begin(), answer.begin() + static_cast<std::ptrdiff_t>(t + 1)));
        if (!prefix.empty() && prefix[0] == ' ') prefix.erase(0, 1);
        if (prefix.size() < done || text.compare(0, prefix.size(), prefix) != 0)
            throw Error("demo trainer: the tokens of \"" + text + "\" do not decode to it piece by piece");
        size_t first = done;
        while (first < prefix.size() && prefix[first] == ' ') ++first;
        int item = -1;
        for (size_t k = 0; k < items.size(); ++k)
            if (first < prefix.size() && first >= items[k].first && first < items[k].second) item = static_cast<int>(k);
        out.push_back(item);
        done = prefix.size();
    }
    out.push_back(-1);   // EOS
    return out;
}

class SegmentCache {
public:
    explicit SegmentCache(const Tokenizer& tok) : tok_(tok) {
        const std::vector<int64_t> ids = tok.encode(promptFor("How many shapes are there?"), true);
        auto it = std::find(ids.begin(), ids.end(), tok.imageTokenId());
        if (it == ids.end()) throw Error("demo trainer: the prompt has no <image> token");
        prefix_.assign(ids.begin(), it);   // BOS .. before <image>
    }

    const std::vector<int64_t>& prefixBeforeImage() const { return prefix_; }

    const Segment& get(const QA& qa) {
        const std::string key = qa.question + '\x01' + qa.answer;
        auto found = cache_.find(key);
        if (found != cache_.end()) return found->second;
        const std::string prompt = promptFor(qa.question);
        const std::vector<int64_t> compact = tok_.encode(prompt, true);
        const std::vector<int64_t> full = tok_.encode(prompt + " " + qa.answer, true);
        if (full.size() <= compact.size() || !std::equal(compact.begin(), compact.end(), full.begin()))
            throw Error("demo trainer: the prompt's tokens are not a prefix of prompt + answer for \"" + qa.question + "\"");
        auto img = std::find(compact.begin(), compact.end(), tok_.imageTokenId());
        if (img == compact.end() || !std::equal(prefix_.begin(), prefix_.end(), compact.begin()) ||
            static_cast<size_t>(img - compact.begin()) != prefix_.size())
            throw Error("demo trainer: prompt prefix differs for \"" + qa.question + "\"");
        Segment s;
        s.type = qa.type;
        s.tokens.assign(img + 1, compact.end());
        s.answerStart = static_cast<int>(s.tokens.size());
        s.tokens.insert(s.tokens.end(), full.begin() + static_cast<std::ptrdiff_t>(compact.size()), full.end());
        s.tokens.push_back(tok_.eosId());
        if (qa.type == QuestionType::Describe)
            s.answerItem = itemOfEachToken(tok_, std::vector<int64_t>(s.tokens.begin() + s.answerStart, s.tokens.end() - 1), qa.answer);
        return cache_.emplace(key, std::move(s)).first->second;
    }

private:
    const Tokenizer& tok_;
    std::vector<int64_t> prefix_;
    std::unordered_map<std::string, Segment> cache_;
};

// Where a question's answer is read from (see DemoTrainOptions::groundingWeight): grid cells, and
// for a description, the cells of each item it names.
struct Grounding {
    std::vector<int64_t> cells;
    std::vector<std::vector<int64_t>> itemCells;
};

struct Example {
    std::vector<float> pixels;   // CHW
    std::vector<const Segment*> segments;
    std::vector<Grounding> grounding;   // per segment
};

// Each grid cell's shape: the one covering most of it (at least 5 %), or -1 for background.
std::vector<int> cellOwners(const Scene& s) {
    const int cells = kGridSize * kGridSize;
    std::vector<float> best(cells, 0.05f);
    std::vector<int> owner(cells, -1);
    for (size_t k = 0; k < s.shapes.size(); ++k) {
        const std::vector<float> cov = gridCoverage(s.shapes[k]);
        for (int c = 0; c < cells; ++c)
            if (cov[c] >= best[c]) best[c] = cov[c], owner[c] = int(k);
    }
    return owner;
}

// The cells a question's answer lives in: its shape's (colour, shape, position, "yes" exists), all
// shapes' (count, describe), none for "no" exists (there is nothing to look at); for a
// description also each named item's cells (every shape of that colour and kind), so that each
// word of "a red circle and a blue square" is read from the shape it names.
Grounding groundingOf(const QA& qa, const Scene& scene, const std::vector<int>& owner) {
    auto cellsWhere = [&](const std::function<bool(int)>& shapeMatches) {
        std::vector<int64_t> out;
        for (size_t c = 0; c < owner.size(); ++c)
            if (owner[c] >= 0 && shapeMatches(owner[c])) out.push_back(static_cast<int64_t>(c));
        return out;
    };
    Grounding g;
    const bool wholeScene = qa.type == QuestionType::Count || qa.type == QuestionType::Describe;
    g.cells = cellsWhere([&](int k) { return wholeScene || k == qa.shapeIndex; });
    if (qa.type == QuestionType::Describe)
        for (const auto& [begin, end] : describedItems(qa.answer)) {
            const std::string item = qa.answer.substr(begin, end - begin);
            g.itemCells.push_back(cellsWhere([&](int k) {
                const Shape& sh = scene.shapes[size_t(k)];
                return item == std::string("a ") + colorName(sh.color) + " " + kindName(sh.kind);
            }));
        }
    return g;
}

// The training questions of one scene: every Color/Shape/Position question that applies, Count,
// Describe, and two Exists questions (one yes, one no).
std::vector<QA> trainingQuestions(const Scene& scene, Rng& rng) {
    std::vector<QA> out;
    for (const QA& qa : allQuestions(scene))
        if (qa.type != QuestionType::Exists) out.push_back(qa);
    QA yes, no;
    for (int tries = 0; tries < 16; ++tries) {
        QA qa;
        sampleQuestion(scene, QuestionType::Exists, rng, qa);
        if (qa.answer == "yes" && yes.question.empty()) yes = qa;
        if (qa.answer == "no" && no.question.empty()) no = qa;
        if (!yes.question.empty() && !no.question.empty()) break;
    }
    if (!yes.question.empty()) out.push_back(yes);
    if (!no.question.empty()) out.push_back(no);
    return out;
}

Example makeExample(const Scene& scene, const std::vector<QA>& questions, SegmentCache& segments, const ClipPreprocessConfig& pre) {
    Example e;
    e.pixels = clipPreprocess(render(scene), pre).pixels;
    const std::vector<int> owner = cellOwners(scene);
    for (const QA& qa : questions) {
        e.segments.push_back(&segments.get(qa));
        e.grounding.push_back(groundingOf(qa, scene, owner));
    }
    return e;
}

struct Batch {
    Tensor pixels;          // [B, 3, 336, 336]
    Tensor ids;             // [B, T] (image positions hold 0; they are replaced by features)
    Tensor cos, sin;        // [B, 1, T, hd]
    Tensor prefixMask;      // [P, P]
    Tensor segmentMask;     // [B, 1, 1, S, T]
    Tensor lossRows;        // [N] rows of the flattened [B*S] segment outputs that predict an answer token
    Tensor targets;         // [N]
    Tensor groundedRows;    // [G] rows of the flattened [B*S] segment outputs that predict an answer token and have grounding cells
    Tensor groundingMask;   // [G, 576] 1 on those rows' grounding cells
    int64_t prefixLen = 0, imageStart = 0, segLen = 0;
    int64_t tokens = 0;     // real (non-padding) tokens
    // For validation: each loss row's (example, segment) and the segment's type.
    std::vector<std::pair<int, int>> rowOwner;
    std::vector<QuestionType> rowType;
};

Batch makeBatch(const std::vector<Example>& examples, const std::vector<int64_t>& prefixBeforeImage, int imageTokens,
                const Net& net) {
    Batch bt;
    const int64_t b = static_cast<int64_t>(examples.size());
    bt.imageStart = static_cast<int64_t>(prefixBeforeImage.size());
    bt.prefixLen = bt.imageStart + imageTokens;
    const int64_t P = bt.prefixLen;
    int64_t S = 1;
    for (const Example& e : examples) {
        int64_t n = 0;
        for (const Segment* s : e.segments) n += static_cast<int64_t>(s->tokens.size()) - 1;
        S = std::max(S, n);
    }
    bt.segLen = S;
    const int64_t T = P + S;
    std::vector<int64_t> ids(static_cast<size_t>(b * T), 0), positions(static_cast<size_t>(b * T), 0);
    std::vector<float> segMask(static_cast<size_t>(b * S * T), -std::numeric_limits<float>::infinity());
    std::vector<int64_t> rows, targets, groundedRows;
    std::vector<float> groundingMask;
    std::vector<float> pixels;
    pixels.reserve(static_cast<size_t>(b) * 3 * kImageSize * kImageSize);
    for (int64_t i = 0; i < b; ++i) {
        const Example& e = examples[static_cast<size_t>(i)];
        pixels.insert(pixels.end(), e.pixels.begin(), e.pixels.end());
        for (int64_t j = 0; j < T; ++j) positions[size_t(i * T + j)] = j < P ? j : P;   // padding: any valid position
        for (size_t j = 0; j < prefixBeforeImage.size(); ++j) ids[size_t(i * T) + j] = prefixBeforeImage[j];
        bt.tokens += P;
        int64_t at = 0;   // offset inside the segment area
        std::vector<int64_t> segOf(static_cast<size_t>(S), -1);
        for (size_t si = 0; si < e.segments.size(); ++si) {
            const Segment& seg = *e.segments[si];
            const int64_t n = static_cast<int64_t>(seg.tokens.size()) - 1;   // inputs: all but the last token
            for (int64_t j = 0; j < n; ++j) {
                const int64_t col = P + at + j;
                ids[size_t(i * T + col)] = seg.tokens[size_t(j)];
                positions[size_t(i * T + col)] = P + j;
                segOf[size_t(at + j)] = static_cast<int64_t>(si);
                if (j + 1 >= seg.answerStart) {   // predicts an answer token or EOS
                    const Grounding& g = e.grounding[si];
                    const int item = seg.answerItem.empty() ? -1 : seg.answerItem[size_t(j + 1 - seg.answerStart)];
                    const std::vector<int64_t>& cells = item >= 0 ? g.itemCells.at(size_t(item)) : g.cells;
                    if (!cells.empty()) {
                        groundedRows.push_back(i * S + at + j);
                        groundingMask.resize(groundingMask.size() + size_t(imageTokens), 0.0f);
                        for (int64_t cell : cells) groundingMask[groundingMask.size() - size_t(imageTokens) + size_t(cell)] = 1.0f;
                    }
                    rows.push_back(i * S + at + j);
                    targets.push_back(seg.tokens[size_t(j + 1)]);
                    bt.rowOwner.push_back({static_cast<int>(i), static_cast<int>(si)});
                    bt.rowType.push_back(seg.type);
                }
            }
            at += n;
            bt.tokens += n;
        }
        for (int64_t q = 0; q < S; ++q) {
            float* row = &segMask[size_t((i * S + q) * T)];
            for (int64_t kk = 0; kk < P; ++kk) row[kk] = 0.0f;
            if (segOf[size_t(q)] < 0) continue;   // padding sees the prefix only
            for (int64_t kk = q; kk >= 0 && segOf[size_t(kk)] == segOf[size_t(q)]; --kk) row[P + kk] = 0.0f;
        }
    }
    const auto longOpts = at::TensorOptions().dtype(at::kLong);
    bt.pixels = at::from_blob(pixels.data(), {b, 3, kImageSize, kImageSize}, at::kFloat).clone();
    bt.ids = at::from_blob(ids.data(), {b, T}, longOpts).clone();
    Tensor pos = at::from_blob(positions.data(), {b * T}, longOpts).clone();
    const int64_t hd = net.ropeCos.size(1);
    bt.cos = net.ropeCos.index_select(0, pos).view({b, 1, T, hd});
    bt.sin = net.ropeSin.index_select(0, pos).view({b, 1, T, hd});
    bt.prefixMask = at::full({P, P}, -std::numeric_limits<double>::infinity(), at::kFloat).triu(1);
    bt.segmentMask = at::from_blob(segMask.data(), {b, 1, 1, S, T}, at::kFloat).clone();
    bt.lossRows = at::from_blob(rows.data(), {static_cast<int64_t>(rows.size())}, longOpts).clone();
    bt.targets = at::from_blob(targets.data(), {static_cast<int64_t>(targets.size())}, longOpts).clone();
    const int64_t g = static_cast<int64_t>(groundedRows.size());
    bt.groundedRows = at::from_blob(groundedRows.data(), {g}, longOpts).clone();
    bt.groundingMask = at::from_blob(groundingMask.data(), {g, imageTokens}, at::kFloat).clone();
    return bt;
}

// The decoder layer and head whose attention the grounding loss guides (see DemoTrainOptions).
int groundingLayer(const ModelConfig& c) { return std::max(0, c.text.numLayers - 2); }

// Logits [N, V] of the batch's loss rows. With `groundingMass`, also the attention mass [G] that
// head 0 of groundingLayer puts on each grounded row's cells.
Tensor forwardLogits(const Net& net, const Batch& bt, Tensor* groundingMass = nullptr) {
    const ModelConfig& c = net.c;
    const Parameters& p = net.p;
    Tensor features = net.encodeImages(bt.pixels);   // [B, 576, D]
    Tensor embeds = at::embedding(p(kT + "embed_tokens.weight"), bt.ids);
    const int64_t T = embeds.size(1), n = features.size(1);
    Tensor x = at::cat({embeds.narrow(1, 0, bt.imageStart), features,
                        embeds.narrow(1, bt.imageStart + n, T - bt.imageStart - n)},
                       1);
    Tensor probs;
    for (int i = 0; i < c.text.numLayers; ++i) {
        const bool guided = groundingMass && i == groundingLayer(c);
        x = net.llamaLayer(x, i, bt.prefixLen, bt.cos, bt.sin, bt.prefixMask, bt.segmentMask, i + 1 == c.text.numLayers,
                           guided ? &probs : nullptr);
    }
    if (groundingMass) {
        // Head 0's probabilities over the image tokens, on the loss rows that have grounding cells.
        const int64_t b = probs.size(0), s = probs.size(2);
        Tensor onImage = probs.select(1, 0).narrow(2, bt.imageStart, n).reshape({b * s, n});
        Tensor grounded = onImage.index_select(0, bt.groundedRows);
        *groundingMass = (grounded * bt.groundingMask).sum(1);
    }
    Tensor rows = x.reshape({-1, x.size(2)}).index_select(0, bt.lossRows);
    return at::linear(net.rmsNorm(rows, p(kT + "norm.weight")), p("language_model.lm_head.weight"));
}

// ---------------------------------------------------------------------------------------------
// Validation: teacher-forced exact match, which equals greedy-decoding exact match (greedy
// reproduces the answer iff every answer token and EOS is the argmax given the answer so far).

struct Validation {
    std::vector<Example> examples;
    std::vector<std::vector<QuestionType>> types;
};

std::string validate(const Net& net, const Validation& v, const std::vector<int64_t>& prefix, int imageTokens, double* overall) {
    torch::NoGradGuard noGrad;
    int correct[kNumQuestionTypes] = {}, total[kNumQuestionTypes] = {};
    const size_t chunk = 8;
    for (size_t start = 0; start < v.examples.size(); start += chunk) {
        std::vector<Example> part(v.examples.begin() + static_cast<std::ptrdiff_t>(start),
                                  v.examples.begin() + static_cast<std::ptrdiff_t>(std::min(v.examples.size(), start + chunk)));
        const Batch bt = makeBatch(part, prefix, imageTokens, net);
        const Tensor pred = forwardLogits(net, bt).argmax(-1);
        const Tensor ok = pred.eq(bt.targets).contiguous();
        const bool* okp = ok.data_ptr<bool>();
        std::map<std::pair<int, int>, std::pair<bool, QuestionType>> perSegment;
        for (size_t r = 0; r < bt.rowOwner.size(); ++r) {
            auto it = perSegment.find(bt.rowOwner[r]);
            if (it == perSegment.end()) perSegment[bt.rowOwner[r]] = {okp[r], bt.rowType[r]};
            else it->second.first = it->second.first && okp[r];
        }
        for (const auto& [key, value] : perSegment) {
            total[int(value.second)] += 1;
            correct[int(value.second)] += value.first ? 1 : 0;
        }
    }
    std::ostringstream o;
    int c = 0, t = 0;
    for (int i = 0; i < kNumQuestionTypes; ++i) {
        c += correct[i];
        t += total[i];
        char buf[64];
        std::snprintf(buf, sizeof buf, " %s %.0f%%", questionTypeName(QuestionType(i)), total[i] ? 100.0 * correct[i] / total[i] : 0.0);
        o << buf;
    }
    *overall = t ? double(c) / t : 0;
    char buf[64];
    std::snprintf(buf, sizeof buf, "validation (teacher-forced exact match): overall %.1f%% |", 100.0 * *overall);
    return buf + o.str();
}

// ---------------------------------------------------------------------------------------------
// Stage 0: the vision tower's pretraining. LLaVA-1.5 starts from a pretrained CLIP; we have none,
// so the tower is first trained on ShapeWorld scenes with labels known from the generator, read
// from its output hidden_states[-2] by linear heads that are thrown away afterwards:
//   - every grid cell: the colour, kind and position word of the shape that covers most of it
//     (or background), and the row third and column third of that shape's centre (the position
//     word alone teaches the row only in the middle column, where left/right do not win);
//   - every shape: its kind from the plain mean of the tower's output over its cells.
// This is the readout the decoder needs later (attend to the tokens of one colour or one place,
// read what is there). Measured without it (15-minute runs): a tower trained only through the
// decoder's answers learns colours, but shapes and positions stay near chance.

constexpr int kGroups = 5;   // kind, colour, position word, row third, column third
constexpr int kObjectClasses[kGroups] = {kNumKinds, kNumColors, 5, 3, 3};

int positionIndex(const Shape& sh) {
    static const char* places[] = {"left", "right", "top", "bottom", "center"};
    const std::string w = positionWord(sh);
    for (int k = 0; k < 5; ++k)
        if (w == places[k]) return k;
    return 0;
}

// One stage-0 batch: the images and every label pretrainVision reads.
struct VisionBatch {
    int images = 0;
    std::vector<float> pixels;             // [B, 3, 336, 336]
    std::vector<int64_t> cellLabels[kGroups];   // per cell [B*576]; background = last class
    std::vector<float> shapeMask;          // [shapes, B*576]: uniform weights over each shape's cells
    std::vector<int64_t> shapeKinds;       // [shapes]
};

VisionBatch makeVisionBatch(uint64_t seed, int64_t step, int images) {
    static const ClipPreprocessConfig pre;
    const int cells = kGridSize * kGridSize;
    VisionBatch vb;
    vb.images = images;
    for (int i = 0; i < images; ++i) {
        // Scenes of their own inside the training id range: indices from 2^31 of the train seed.
        const Scene s = generateScene(trainSceneId(seed, (1ull << 31) + uint64_t(step) * uint64_t(images) + uint64_t(i)));
        const std::vector<float> px = clipPreprocess(render(s), pre).pixels;
        vb.pixels.insert(vb.pixels.end(), px.begin(), px.end());
        const std::vector<int> owner = cellOwners(s);
        for (size_t k = 0; k < s.shapes.size(); ++k) {
            std::vector<float> row(static_cast<size_t>(images) * cells, 0.0f);
            int n = 0;
            for (int c = 0; c < cells; ++c) n += owner[c] == int(k);
            for (int c = 0; c < cells; ++c)
                if (owner[c] == int(k)) row[static_cast<size_t>(i) * cells + c] = 1.0f / n;
            if (n == 0) continue;
            vb.shapeMask.insert(vb.shapeMask.end(), row.begin(), row.end());
            vb.shapeKinds.push_back(int(s.shapes[k].kind));
        }
        // Every cell of a shape carries all its labels, interior cells included (the
        // tower's attention carries the kind in from the edges): the decoder then finds "the
        // red circle" by one attention over tokens that each say both red and circle.
        for (int c = 0; c < cells; ++c) {
            const Shape* sh = owner[c] < 0 ? nullptr : &s.shapes[owner[c]];
            vb.cellLabels[0].push_back(sh ? int(sh->kind) : kObjectClasses[0]);
            vb.cellLabels[1].push_back(sh ? int(sh->color) : kObjectClasses[1]);
            vb.cellLabels[2].push_back(sh ? positionIndex(*sh) : kObjectClasses[2]);
            auto third = [](double v) { return v < kImageSize / 3.0 ? 0 : (v < 2 * kImageSize / 3.0 ? 1 : 2); };
            vb.cellLabels[3].push_back(sh ? third(sh->cy) : kObjectClasses[3]);
            vb.cellLabels[4].push_back(sh ? third(sh->cx) : kObjectClasses[4]);
        }
    }
    return vb;
}

// The linear head stage 0 reads the tower with (thrown away afterwards): each group's classes + 1
// (background), one block after the other.
struct VisionHeads {
    Tensor cellW, cellB;
};

// Stage 0's loss for tower output h [B, 576, Dv]; accuracy[kGroups] gets kind (per shape) and the
// other groups (per shape cell). Every label is local to a shape's own cells: no objective asks a
// background token to know about the scene (an image-level count head did, and the decoder then
// read colours from background tokens: painting the circle stopped steering it).
Tensor visionLoss(const Tensor& h, VisionBatch& vb, const VisionHeads& heads, double accuracy[kGroups]) {
    const int64_t b = vb.images, cells = h.size(1), dv = h.size(2);
    Tensor logits = at::linear(h.reshape({b * cells, dv}), heads.cellW, heads.cellB);   // [B*576, classes]
    Tensor loss;
    int64_t offset = 0;
    for (int g = 0; g < kGroups; ++g) {
        Tensor lg = logits.narrow(1, offset, kObjectClasses[g] + 1);
        Tensor target = at::from_blob(vb.cellLabels[g].data(), {b * cells}, at::kLong);
        // Colour also learns shape vs background; the other groups are learned (and scored) on
        // the cells that belong to a shape only (background is easy and 90 % of the cells).
        Tensor onShape = target.ne(kObjectClasses[g]).nonzero().squeeze(1);
        if (g != 1 && onShape.numel() > 0) {
            lg = lg.index_select(0, onShape);
            target = target.index_select(0, onShape);
        }
        Tensor term = at::cross_entropy_loss(lg, target);
        loss = loss.defined() ? loss + term : term;
        accuracy[g] = lg.argmax(-1).eq(target).to(at::kFloat).mean().item<double>();
        offset += kObjectClasses[g] + 1;
    }
    // A shape's kind from the plain mean of the tower's output over its cells (through the same
    // kind head): the readout the decoder learns later (attend to the tokens of one colour, read
    // what they are).
    const int64_t n = static_cast<int64_t>(vb.shapeKinds.size());
    Tensor pooled = at::matmul(at::from_blob(vb.shapeMask.data(), {n, b * cells}, at::kFloat), h.reshape({b * cells, dv}));
    Tensor kindLogits = at::linear(pooled, heads.cellW.narrow(0, 0, kObjectClasses[0] + 1), heads.cellB.narrow(0, 0, kObjectClasses[0] + 1));
    Tensor kindTarget = at::from_blob(vb.shapeKinds.data(), {n}, at::kLong);
    loss = loss + at::cross_entropy_loss(kindLogits, kindTarget);
    accuracy[0] = kindLogits.argmax(-1).eq(kindTarget).to(at::kFloat).mean().item<double>();
    return loss;
}

struct VisionPretrainResult {
    int64_t steps = 0;
    double seconds = 0;
};

VisionPretrainResult pretrainVision(const DemoTrainOptions& o, Parameters& params, const Net& net, double budgetSeconds,
                                    const std::function<void(const std::string&)>& log) {
    VisionPretrainResult r;
    if (o.visionPretrainSteps <= 0) return r;
    const int64_t dv = net.c.vision.hiddenSize;
    int64_t cellClasses = 0;
    for (int g = 0; g < kGroups; ++g) cellClasses += kObjectClasses[g] + 1;   // + background each
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(mixSeed(o.seed, 0x51A6E0));
    VisionHeads heads;
    heads.cellW = at::normal(0.0, 0.02, {cellClasses, dv}, gen).set_requires_grad(true);
    heads.cellB = at::zeros({cellClasses}).set_requires_grad(true);
    std::vector<Tensor> all;
    for (auto& [name, t] : params.tensors)
        if (name.compare(0, kV.size(), kV) == 0 && t.requires_grad()) all.push_back(t);
    for (const Tensor& t : {heads.cellW, heads.cellB}) all.push_back(t);
    using torch::optim::AdamW;
    using torch::optim::AdamWOptions;
    AdamW optimizer(all, AdamWOptions(o.visionPretrainLr).betas({0.9, 0.98}).weight_decay(0.0));

    const auto t0 = std::chrono::steady_clock::now();
    double ema[kGroups] = {-1, -1, -1, -1, -1};
    for (int64_t step = 0; step < o.visionPretrainSteps; ++step) {
        if (budgetSeconds > 0 && secondsSince(t0) >= budgetSeconds) break;
        // Warmup over 5 %, then cosine down to a tenth, by steps or by time, whichever is further.
        double pr = double(step) / double(o.visionPretrainSteps);
        if (budgetSeconds > 0) pr = std::max(pr, secondsSince(t0) / budgetSeconds);
        const double warm = 0.05;
        const double lr = pr < warm ? o.visionPretrainLr * pr / warm
                                    : o.visionPretrainLr * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * (pr - warm) / (1 - warm))));
        for (auto& g : optimizer.param_groups()) static_cast<AdamWOptions&>(g.options()).lr(lr);

        VisionBatch vb = makeVisionBatch(o.seed, step, o.visionPretrainBatch);
        Tensor pix = at::from_blob(vb.pixels.data(), {vb.images, 3, kImageSize, kImageSize}, at::kFloat);
        optimizer.zero_grad();
        double acc[kGroups];
        Tensor loss = visionLoss(net.visionFeatures(pix), vb, heads, acc);
        for (int g = 0; g < kGroups; ++g) ema[g] = ema[g] < 0 ? acc[g] : 0.95 * ema[g] + 0.05 * acc[g];
        loss.backward();
        torch::nn::utils::clip_grad_norm_(all, 1.0);
        optimizer.step();
        r.steps = step + 1;
        if ((step + 1) % (o.logEvery * 2) == 0 || step == 0) {
            char buf[256];
            std::snprintf(buf, sizeof buf,
                          "vision step %5lld  loss %.4f  objects: kind %.1f%%  colour %.1f%%  position %.1f%% (row %.1f%% col %.1f%%)  lr %.2e  %.1f img/s  elapsed %s",
                          static_cast<long long>(step + 1), loss.item<double>(), 100 * ema[0], 100 * ema[1], 100 * ema[2], 100 * ema[3], 100 * ema[4], lr,
                          double((step + 1) * vb.images) / std::max(1e-9, secondsSince(t0)), formatDuration(secondsSince(t0)).c_str());
            log(buf);
        }
    }
    r.seconds = secondsSince(t0);
    return r;
}

} // namespace

DemoTrainResult trainDemoModel(const DemoTrainOptions& o) {
    auto log = [&](const std::string& line) {
        if (o.log) o.log(line);
        else std::cerr << line << std::endl;
    };
    if (o.outDir.empty()) throw Error("train-demo: no output directory");
    if (o.steps <= 0 && o.minutes <= 0) throw Error("train-demo: give a step count or a time budget");
    if (o.imagesPerStep < 1) throw Error("train-demo: images per step must be >= 1");
    setThreads(o.threads);
    at::manual_seed(o.seed);
    const c10::ScalarType dtype = o.dtype == "f16" ? at::kHalf : (o.dtype == "f32" ? at::kFloat : throw Error("train-demo: dtype must be f32 or f16"));

    // Tokenizer: the spm_train model plus the llava-hf JSON files, copied into the output.
    fs::create_directories(o.outDir);
    if (!fs::exists(fs::path(o.tokenizerDir) / "added_tokens.json")) writeDemoTokenizerFiles(o.tokenizerDir);
    copyDemoTokenizerFiles(o.tokenizerDir, o.outDir);
    const Tokenizer tok = Tokenizer::loadFromDirectory(o.outDir);
    ModelConfig config = demoModelConfig(o.sizes, tok.vocabSize(), tok.imageTokenId());
    config.name = o.modelName;
    const int imageTokens = config.imageSeqLength();

    Parameters params = initParameters(config, o.seed);
    Net net(config, params);
    int64_t trainable = 0, total = 0;
    for (const auto& [name, t] : params.tensors) {
        total += t.numel();
        if (t.requires_grad()) trainable += t.numel();
    }
    {
        std::ostringstream s;
        s << "demo model: vision " << config.vision.hiddenSize << "x" << config.vision.numLayers << " layers (" << config.visionLayersNeeded()
          << " used), text " << config.text.hiddenSize << "x" << config.text.numLayers << " layers, " << config.text.numHeads << "/"
          << config.text.numKvHeads << " heads, vocab " << config.text.vocabSize << "; " << total << " parameters (" << trainable
          << " trained); threads " << currentThreads();
        log(s.str());
    }

    // Stage 0: the vision tower (see pretrainVision).
    const double totalBudget = o.minutes > 0 ? o.minutes * 60.0 : 0.0;
    const VisionPretrainResult vp = pretrainVision(o, params, net, totalBudget * o.visionPretrainFraction, log);
    if (vp.steps > 0) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "vision pretraining: %lld steps in %s", static_cast<long long>(vp.steps), formatDuration(vp.seconds).c_str());
        log(buf);
    }

    using torch::optim::AdamW;
    using torch::optim::AdamWOptions;
    std::vector<torch::optim::OptimizerParamGroup> groups;
    // Four groups: (weight decay or not) x (vision tower or not); the tower, pretrained in stage 0,
    // learns at visionLrScale times the rate so the decoder's early noise does not wash it out.
    // The default freezes it: its stage-0 features already say colour, kind and place on every
    // shape cell, a frozen tower costs no backward pass (stage 1 runs ~20 % faster), and nothing
    // in stage 1 can teach background tokens about the shapes (which would break steering).
    std::vector<double> groupScale;
    {
        std::set<const void*> vision;
        for (const auto& [name, t] : params.tensors)
            if (name.compare(0, kV.size(), kV) == 0) vision.insert(t.unsafeGetTensorImpl());
        for (int decay = 1; decay >= 0; --decay)
            for (int isVision = 0; isVision <= 1; ++isVision) {
                std::vector<Tensor> members;
                for (const Tensor& t : decay ? params.decay : params.noDecay)
                    if (bool(vision.count(t.unsafeGetTensorImpl())) == bool(isVision)) members.push_back(t);
                if (members.empty()) continue;
                if (isVision && vp.steps > 0 && o.visionLrScale == 0) {
                    // A frozen tower: no gradient flows into it at all (and none is computed).
                    for (Tensor& t : members) t.set_requires_grad(false);
                    continue;
                }
                groups.emplace_back(members, std::make_unique<AdamWOptions>(
                                                 AdamWOptions(o.learningRate).betas({0.9, 0.98}).weight_decay(decay ? o.weightDecay : 0.0)));
                groupScale.push_back(isVision && vp.steps > 0 ? o.visionLrScale : 1.0);
            }
    }
    AdamW optimizer(std::move(groups), AdamWOptions(o.learningRate));
    std::vector<Tensor> allTrainable;
    for (const auto& g : optimizer.param_groups()) allTrainable.insert(allTrainable.end(), g.params().begin(), g.params().end());

    SegmentCache segments(tok);
    const ClipPreprocessConfig pre;   // the defaults = what preprocessor_config.json says
    Validation validation;
    if (o.validateEvery > 0)
        for (int i = 0; i < o.validationImages; ++i) {
            // Reserved validation scenes: eval id space, seed 2^30 - 1 (eval-demo never defaults there).
            const Scene s = generateScene(evalSceneId(0x3FFFFFFF, static_cast<uint64_t>(i)));
            Rng rng(mixSeed(s.id, 17));
            validation.examples.push_back(makeExample(s, sampleQuestions(s, rng), segments, pre));
        }

    const auto t0 = std::chrono::steady_clock::now();
    const double budget = totalBudget > 0 ? std::max(1.0, totalBudget - vp.seconds) : 0.0;
    auto progress = [&](int64_t step) {
        double pr = 0;
        if (o.steps > 0) pr = std::max(pr, double(step) / double(o.steps));
        if (budget > 0) pr = std::max(pr, secondsSince(t0) / budget);
        return std::min(pr, 1.0);
    };
    auto learningRate = [&](double pr) {
        const double warm = o.warmupFraction;
        if (pr < warm) return o.learningRate * (pr / warm);
        const double t = (pr - warm) / std::max(1e-9, 1.0 - warm);
        const double floor = o.minLearningRateFraction;
        return o.learningRate * (floor + (1 - floor) * 0.5 * (1 + std::cos(M_PI * std::min(1.0, t))));
    };

    DemoTrainResult result;
    Rng dataRng(mixSeed(o.seed, 0xDA7A));
    uint64_t sceneIndex = 0;
    std::vector<double> recentLoss;
    double emaLoss = -1, emaMass = -1, tokensSinceLog = 0, timeAtLog = 0;
    for (int64_t step = 0;; ++step) {
        const double pr = progress(step);
        if ((o.steps > 0 && step >= o.steps) || (budget > 0 && secondsSince(t0) >= budget)) break;
        const double lr = learningRate(pr);
        for (size_t gi = 0; gi < optimizer.param_groups().size(); ++gi)
            static_cast<AdamWOptions&>(optimizer.param_groups()[gi].options()).lr(lr * groupScale[gi]);

        SceneOptions so;
        if (pr < o.oneShapeUntil) so.maxShapes = 1;
        else if (pr < o.twoShapesUntil) so.maxShapes = 2;
        if (pr < o.bigShapesUntil) {
            const double t = pr / o.bigShapesUntil;   // 0 -> 1
            so.minSize = 150 + (so.minSize - 150) * t;
            so.maxSize = 250 + (so.maxSize - 250) * t;
        }
        std::vector<Example> examples;
        for (int i = 0; i < o.imagesPerStep; ++i) {
            const Scene s = generateScene(trainSceneId(o.seed, sceneIndex++), so);
            std::vector<QA> qs = trainingQuestions(s, dataRng);
            if (!o.questionTypes.empty()) {
                std::vector<QA> kept;
                for (const QA& qa : qs)
                    if (("," + o.questionTypes + ",").find("," + std::string(questionTypeName(qa.type)) + ",") != std::string::npos)
                        kept.push_back(qa);
                qs = kept;
            }
            if (qs.empty()) {
                --i;
                continue;
            }
            examples.push_back(makeExample(s, qs, segments, pre));
        }
        const Batch bt = makeBatch(examples, segments.prefixBeforeImage(), imageTokens, net);
        optimizer.zero_grad();
        Tensor mass;
        Tensor loss = at::cross_entropy_loss(forwardLogits(net, bt, o.groundingWeight > 0 ? &mass : nullptr), bt.targets);
        Tensor total = loss;
        if (o.groundingWeight > 0 && mass.numel() > 0) {
            total = loss + o.groundingWeight * (-(mass + 1e-6).log()).mean();
            const double m = mass.mean().item<double>();
            if (emaMass < 0) result.firstGroundingMass = m;
            emaMass = emaMass < 0 ? m : 0.95 * emaMass + 0.05 * m;
            result.groundingMass = emaMass;
        }
        total.backward();
        if (o.gradClip > 0) torch::nn::utils::clip_grad_norm_(allTrainable, o.gradClip);
        optimizer.step();

        const double l = loss.item<double>();
        if (!std::isfinite(l)) throw Error("train-demo: the loss became " + std::to_string(l) + " at step " + std::to_string(step));
        if (step == 0) result.firstLoss = l;
        emaLoss = emaLoss < 0 ? l : 0.95 * emaLoss + 0.05 * l;
        recentLoss.push_back(l);
        if (recentLoss.size() > 50) recentLoss.erase(recentLoss.begin());
        result.steps = step + 1;
        result.images += o.imagesPerStep;
        tokensSinceLog += double(bt.tokens);

        const double elapsed = secondsSince(t0);
        if ((step + 1) % o.logEvery == 0 || step == 0) {
            double eta = 0;
            if (o.steps > 0) eta = elapsed / double(step + 1) * double(o.steps - step - 1);
            if (budget > 0) eta = eta > 0 ? std::min(eta, budget - elapsed) : budget - elapsed;
            char grounding[32] = "";   // nothing when the grounding loss is off
            if (emaMass >= 0) std::snprintf(grounding, sizeof grounding, "  grounding %.2f", emaMass);
            char buf[256];
            std::snprintf(buf, sizeof buf, "step %6lld  loss %.4f (avg %.4f)%s  lr %.2e  %.0f tok/s  %.2f img/s  elapsed %s  eta %s",
                          static_cast<long long>(step + 1), l, emaLoss, grounding, lr, tokensSinceLog / std::max(1e-9, elapsed - timeAtLog),
                          double(result.images) / std::max(1e-9, elapsed), formatDuration(elapsed).c_str(), formatDuration(eta).c_str());
            log(buf);
            tokensSinceLog = 0;
            timeAtLog = elapsed;
        }
        if (o.validateEvery > 0 && (step + 1) % o.validateEvery == 0) {
            double acc = 0;
            log(validate(net, validation, segments.prefixBeforeImage(), imageTokens, &acc));
            result.validationAccuracy = acc;
        }
    }
    result.seconds = secondsSince(t0);
    double sum = 0;
    for (double l : recentLoss) sum += l;
    result.finalLoss = recentLoss.empty() ? 0 : sum / double(recentLoss.size());
    if (o.validateEvery > 0) {
        double acc = 0;
        log(validate(net, validation, segments.prefixBeforeImage(), imageTokens, &acc));
        result.validationAccuracy = acc;
    }

    // The llava-hf directory.
    std::ofstream(fs::path(o.outDir) / "config.json") << config.toJsonText() << "\n";
    writePreprocessorConfig(config, o.outDir);
    writeDemoProcessorFiles(o.outDir, tok.bosId(), tok.eosId(), tok.padId());
    fs::remove(fs::path(o.outDir) / "model.safetensors.index.json");
    writeCheckpoint(o.outDir, params.layout, dtype, int64_t(1) << 40,
                    [&](const TensorSpec& spec) { return params(spec.name).detach().contiguous(); });
    {
        char buf[256];
        std::snprintf(buf, sizeof buf, "trained %lld steps (%lld images) in %s; final loss %.4f; wrote %s",
                      static_cast<long long>(result.steps), static_cast<long long>(result.images), formatDuration(result.seconds).c_str(),
                      result.finalLoss, o.outDir.c_str());
        log(buf);
    }
    // The saved directory through the real loader must compute what the trainer computed.
    const double parity = trainingForwardParity(o.outDir, 2, 0x3FFFFFFF);
    {
        char buf[160];
        std::snprintf(buf, sizeof buf, "parity: trainer forward vs LlavaModel::load inference, max |logit diff| %.2e (2 scenes)", parity);
        log(buf);
    }
    if (!(parity < 1e-3)) throw Error("train-demo: the saved model does not reproduce the trainer's logits (max diff " + std::to_string(parity) + ")");
    return result;
}

double trainingForwardParity(const std::string& modelDir, int scenes, uint64_t seed) {
    torch::NoGradGuard noGrad;
    auto model = LlavaModel::load(modelDir, LoadOptions{"cpu", "f32", currentThreads()});
    const ModelConfig& config = model->config();
    const Tokenizer& tok = model->tokenizer();

    // The trainer's parameters, from the file (float32).
    Parameters params;
    params.layout = checkpointLayout(config);
    const SafeTensorsFile file((fs::path(modelDir) / "model.safetensors").string());
    for (const TensorSpec& spec : params.layout) params.tensors[spec.name] = file.tensor(spec.name).to(at::kFloat).clone();
    Net net(config, params);
    SegmentCache segments(tok);
    const ClipPreprocessConfig pre = model->imageConfig();

    double worst = 0;
    for (int i = 0; i < scenes; ++i) {
        const Scene scene = generateScene(evalSceneId(seed, static_cast<uint64_t>(i)));
        const std::vector<QA> questions = evalQuestions(scene);
        std::vector<Example> one{makeExample(scene, questions, segments, pre)};
        const Batch bt = makeBatch(one, segments.prefixBeforeImage(), config.imageSeqLength(), net);
        const Tensor packed = forwardLogits(net, bt);   // rows in (segment, token) order

        const ImageU8 image = render(scene);
        std::vector<Tensor> reference;
        for (size_t q = 0; q < questions.size(); ++q) {
            const Segment& seg = *one[0].segments[q];
            const Prompt prompt = buildPrompt(*model, questions[q].question, false, &image);
            std::vector<int64_t> ids = prompt.ids;
            ids.insert(ids.end(), seg.tokens.begin() + seg.answerStart, seg.tokens.end() - 1);   // answer, not EOS
            const Tensor features = model->encodeImage(prompt.pixels);
            const TextConfig& t = config.text;
            KVCache cache(t.numLayers, 1, t.numKvHeads, t.headDim, static_cast<int64_t>(ids.size()), at::kFloat);
            const Tensor hidden = model->llama().forward(model->embedPrompt(ids, features), cache);
            const int64_t first = static_cast<int64_t>(prompt.ids.size()) - 1;
            reference.push_back(model->llama().logits(hidden.squeeze(0).narrow(0, first, static_cast<int64_t>(ids.size()) - first)));
        }
        const Tensor expected = at::cat(reference, 0);
        if (expected.sizes() != packed.sizes())
            throw Error("trainingForwardParity: packed and per-question logits differ in shape");
        worst = std::max(worst, (expected - packed).abs().max().item<double>());
    }
    return worst;
}

} // namespace kvsteer::demo
