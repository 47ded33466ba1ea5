#include "steer/Recipes.h"

#include "Error.h"
#include "models/Model.h"
#include "generate/Session.h"
#include "cache/SpanCells.h"
#include "steer/SpanMask.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/linalg_eigh.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/where.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace kvsteer {

namespace {

// The prompt's cache over all but its last token (what a Session keeps as the snapshot).
std::unique_ptr<Session> prefilled(const std::shared_ptr<const Model>& model, const std::string& question, const ImageU8* image,
                                   bool raw) {
    auto session = std::make_unique<Session>(model);
    session->prefill(buildPrompt(*model, question, raw, image), 1);
    return session;
}

// The visual span of one layer, [H_kv, N, D] float32; keys optionally rotated back to pre-RoPE.
at::Tensor visualKV(const Session& s, int layer, bool keys, KeySpace space) {
    const KVCache& c = s.snapshot();
    const VisualSpan& span = c.visualSpan;
    at::Tensor x = (keys ? c.keys(layer) : c.values(layer)).select(0, 0).narrow(1, span.start, span.length).to(at::kFloat);
    if (keys && space == KeySpace::PreRope)
        x = s.model().decoder().rotate(x, c.positions(span.start, span.length), true);
    return x.to(at::kCPU);
}

// Differences [H, M, D] -> one direction per head [H, D]: the mean, or the first principal
// direction (uncentred, of the differences themselves) aligned with and scaled to the mean.
at::Tensor summarize(const at::Tensor& diffs, bool pca) {
    at::Tensor mean = diffs.mean(1);
    if (!pca) return mean;
    at::Tensor gram = at::matmul(diffs.transpose(1, 2), diffs).to(at::kDouble);   // [H, D, D]
    at::Tensor u = std::get<1>(at::linalg_eigh(gram)).select(2, -1).to(at::kFloat); // largest eigenvalue's vector
    at::Tensor along = (u * mean).sum(1, true);                                       // mean · u, sign included
    return u * along;
}

SteeringVectors emptyVectors(const Model& model, KeySpace space) {
    SteeringVectors v;
    v.keySpace = space;
    v.keys.resize(model.config().text.numLayers);
    v.values.resize(model.config().text.numLayers);
    return v;
}

void requireVision(const Model& model) {
    if (!model.hasVision()) throw Error("recipe: model " + model.config().name + " has no vision tower");
}

// Weight 1 on every token that is a cell of the span's grid or views, 0 on the others (LLaVA-NeXT's
// image_newline): [1, N, 1].
at::Tensor cellWeights(const VisualSpan& span) {
    return strengthPerToken(span, at::ones({span.gridHeight, span.gridWidth})).reshape({1, -1, 1});
}

// A pair's weight per token [1, N, 1]: the mask read onto the span (every view of it), or every cell.
at::Tensor pairWeights(const ImagePair& pair, const VisualSpan& span) {
    if (pair.mask.empty()) return cellWeights(span);
    at::Tensor w;
    try {
        w = strengthPerToken(span, loadSpanMask(pair.mask, span).clamp(0, 1)).reshape({1, -1, 1});
    } catch (const Error& e) {
        throw Error("recipe image-pairs: " + pair.where + ": " + e.what());
    }
    if (w.sum().item<double>() <= 0) throw Error("recipe image-pairs: " + pair.where + ": the mask " + pair.mask + " paints no cell");
    return w;
}

std::string layoutText(const VisualSpan& s) {
    if (!s.hasViews()) return "a " + s.grid().text() + " grid";
    std::string text;
    for (const SpanView& v : s.views) text += (text.empty() ? "" : " + ") + v.name + " " + std::to_string(v.rows) + "x" + std::to_string(v.cols);
    return text;
}

// A picture in views: which, and how many tokens per-position entries count.
void recordViews(SteeringVectors& v, const VisualSpan& span) {
    if (!span.hasViews()) return;
    v.views = layoutText(span);
    v.viewTokens = span.length;
}

bool sameLayout(const VisualSpan& a, const VisualSpan& b) {
    return a.gridHeight == b.gridHeight && a.gridWidth == b.gridWidth && a.length == b.length;
}

// How many of the span's tokens a pair's difference compares: all of them when both images lay
// out alike. A picture in views (LLaVA-NeXT) whose two images choose different resolutions
// compares the base view alone, which every picture has at the same place; per-position vectors
// cannot be aligned that way and are refused.
int64_t comparedTokens(const VisualSpan& sa, const VisualSpan& sb, bool perPosition, const std::string& where) {
    if (sameLayout(sa, sb)) return sa.length;
    const std::string layouts = "image A lays out as " + layoutText(sa) + " and image B as " + layoutText(sb);
    if (!sa.hasViews() || !sb.hasViews()) throw Error("recipe image-pairs: " + where + layouts + "; give two images of the same size");
    if (perPosition)
        throw Error("recipe image-pairs: " + where + layouts +
                    "; per-position vectors need one layout: give two images of the same size, or take a mean vector (over the base view)");
    const SpanView& base = sa.views.front();
    return base.offset + int64_t(base.rows) * base.rowStride;
}

} // namespace

std::vector<ImagePair> loadImagePairs(const std::string& path, const std::string& defaultPrompt) {
    std::ifstream in(path);
    if (!in) throw Error("pairs file " + path + ": cannot open");
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    // Paths are relative to the pairs file, so a folder of pairs moves as one; a MASK form
    // (rect:..., tokens:...) is not a path.
    auto isForm = [](const std::string& p) {
        for (const char* form : {"rect:", "tokens:", "px:", "view:"})
            if (p.rfind(form, 0) == 0) return true;
        return false;
    };
    auto resolve = [&](const std::string& p) { return isForm(p) || std::filesystem::path(p).is_absolute() ? p : (folder / p).string(); };
    std::vector<ImagePair> pairs;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = path + " line " + std::to_string(n);
        ImagePair pair;
        try {
            const auto j = nlohmann::json::parse(line);
            pair.prompt = j.value("prompt", defaultPrompt);
            pair.mask = j.contains("mask") ? resolve(j.at("mask").get<std::string>()) : "";
            const std::string a = resolve(j.at("image_a").get<std::string>()), b = resolve(j.at("image_b").get<std::string>());
            // A mask file is read once the pair's grid is known: say now that one is missing.
            if (!pair.mask.empty() && !isForm(pair.mask) && !std::filesystem::exists(pair.mask))
                throw Error("mask " + pair.mask + ": file not found (a mask file, or a rect: / tokens: / px: / view: form)");
            pair.a = loadImage(a);
            pair.b = loadImage(b);
        } catch (const nlohmann::json::exception& e) {
            throw Error("pairs file " + where + ": expected {\"image_a\": PATH, \"image_b\": PATH, \"prompt\"?: TEXT, \"mask\"?: MASK} (" +
                        e.what() + ")");
        } catch (const Error& e) {
            throw Error("pairs file " + where + ": " + e.what());
        }
        if (pair.prompt.empty()) throw Error("pairs file " + where + ": no \"prompt\", and no --prompt for lines without one");
        pair.where = where;
        pairs.push_back(std::move(pair));
    }
    if (pairs.empty()) throw Error("pairs file " + path + ": no pairs");
    return pairs;
}

SteeringVectors extractImagePairs(std::shared_ptr<const Model> model, const std::vector<ImagePair>& pairs, const ExtractOptions& options) {
    c10::NoGradGuard noGrad;
    requireVision(*model);
    if (pairs.empty()) throw Error("recipe image-pairs: no pairs");
    if (options.perPosition && options.pca) throw Error("recipe image-pairs: a PCA direction and per-position vectors exclude each other");
    const int layers = model->config().text.numLayers;
    // Per layer, keys then values: the sum over pairs of each pair's Δ, or (PCA) every pair's
    // per-position differences, pooled.
    std::vector<at::Tensor> sum(size_t(2 * layers));
    std::vector<std::vector<at::Tensor>> pooled(size_t(2 * layers));
    VisualSpan first;
    for (size_t i = 0; i < pairs.size(); ++i) {
        const ImagePair& pair = pairs[i];
        auto a = prefilled(model, pair.prompt, &pair.a, options.rawPrompt);
        auto b = prefilled(model, pair.prompt, &pair.b, options.rawPrompt);
        const VisualSpan& sa = a->snapshot().visualSpan, &sb = b->snapshot().visualSpan;
        const std::string where = pair.where.empty() ? "" : pair.where + ": ";
        // A family whose grid follows the image size: the two must lay out alike (or, in views,
        // be compared on the base view).
        const int64_t n = comparedTokens(sa, sb, options.perPosition, where);
        // Per-position vectors keep the grid's layout, so their pairs must share one grid; the
        // mean and PCA directions are one per head, whatever each pair's grid.
        if (i == 0) first = sa;
        else if (options.perPosition && !sameLayout(sa, first))
            throw Error("recipe image-pairs: " + where + "the images lay out as " + layoutText(sa) + ", the first pair's as " + layoutText(first) +
                        "; per-position vectors need every pair on one layout");
        const at::Tensor w = pairWeights(pair, sa).narrow(1, 0, n);
        if (w.sum().item<double>() <= 0)
            throw Error("recipe image-pairs: " + where + "the mask " + pair.mask + " paints none of the base view, the part both images share");
        // PCA pools the cells the mask paints above 0.5 (all of them without a mask).
        const at::Tensor painted = pair.mask.empty() && !sa.hasViews() ? at::Tensor() : at::where(w.reshape({-1}) > 0.5)[0];
        if (options.pca && painted.defined() && painted.numel() == 0)
            throw Error("recipe image-pairs: " + where + "--pca takes the cells the mask paints above 0.5, and " + pair.mask + " paints none");
        for (int l = 0; l < layers; ++l)
            for (bool keys : {true, false}) {
                const size_t slot = size_t(2 * l + (keys ? 0 : 1));
                const at::Tensor diffs = visualKV(*a, l, keys, options.keySpace).narrow(1, 0, n) -
                                         visualKV(*b, l, keys, options.keySpace).narrow(1, 0, n);   // [H, n, D]
                if (options.pca) {
                    pooled[slot].push_back(painted.defined() ? diffs.index_select(1, painted) : diffs);
                    continue;
                }
                const at::Tensor delta = options.perPosition ? (diffs * w).contiguous()
                                         : pair.mask.empty() && !sa.hasViews() ? diffs.mean(1)
                                                                               : (diffs * w).sum(1) / w.sum();
                sum[slot] = i == 0 ? delta : sum[slot] + delta;
            }
    }
    SteeringVectors v = emptyVectors(*model, options.keySpace);
    recordViews(v, first);
    for (int l = 0; l < layers; ++l)
        for (bool keys : {true, false}) {
            const size_t slot = size_t(2 * l + (keys ? 0 : 1));
            (keys ? v.keys : v.values)[l] = options.pca ? summarize(at::cat(pooled[slot], 1), true) : sum[slot] / double(pairs.size());
        }
    return v;
}

SteeringVectors extractImagePair(std::shared_ptr<const Model> model, const std::string& question, const ImageU8& imageA,
                                 const ImageU8& imageB, const ExtractOptions& options) {
    return extractImagePairs(std::move(model), {ImagePair{imageA, imageB, question, "", ""}}, options);
}

SteeringVectors extractRegion(std::shared_ptr<const Model> model, const std::string& question, const ImageU8& image,
                              const at::Tensor& mask, const ExtractOptions& options) {
    c10::NoGradGuard noGrad;
    requireVision(*model);
    auto s = prefilled(model, question, &image, options.rawPrompt);
    const VisualSpan& span = s->snapshot().visualSpan;
    if (mask.sizes().vec() != std::vector<int64_t>{span.gridHeight, span.gridWidth})
        throw Error("recipe region: mask must be [" + std::to_string(span.gridHeight) + ", " + std::to_string(span.gridWidth) + "]");
    const at::Tensor w = strengthPerToken(span, mask.clamp(0, 1)).reshape({1, -1, 1});   // region weight per position
    const at::Tensor others = cellWeights(span) - w;   // the rest of the picture's cells (never a newline token)
    const double inside = w.sum().item<double>(), outside = others.sum().item<double>();
    if (inside <= 0 || outside <= 0) throw Error("recipe region: the mask must cover part of the grid, not none or all of it");
    SteeringVectors v = emptyVectors(*model, options.keySpace);
    recordViews(v, span);
    v.mask = mask.to(at::kFloat).clone();
    for (int l = 0; l < model->config().text.numLayers; ++l)
        for (bool keys : {true, false}) {
            at::Tensor x = visualKV(*s, l, keys, options.keySpace);       // [H, N, D]
            at::Tensor rest = (x * others).sum(1, true) / outside;         // [H, 1, D]
            at::Tensor entry;
            if (options.perPosition) {
                entry = (w * (x - rest)).contiguous();
            } else if (options.pca) {
                at::Tensor inRegion = at::where(w.reshape({-1}) > 0.5)[0];
                entry = summarize((x - rest).index_select(1, inRegion), true);
            } else {
                entry = ((x * w).sum(1) / inside) - rest.squeeze(1);
            }
            (keys ? v.keys : v.values)[l] = entry;
        }
    return v;
}

std::vector<TextPair> loadTextPairs(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error("pairs file " + path + ": cannot open");
    std::vector<TextPair> pairs;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        try {
            const auto j = nlohmann::json::parse(line);
            pairs.push_back({j.at("positive").get<std::string>(), j.at("negative").get<std::string>()});
        } catch (const std::exception& e) {
            throw Error("pairs file " + path + " line " + std::to_string(n) + ": expected {\"positive\": \"...\", \"negative\": \"...\"} (" + e.what() + ")");
        }
    }
    if (pairs.empty()) throw Error("pairs file " + path + ": no pairs");
    return pairs;
}

SteeringVectors extractTextPairs(std::shared_ptr<const Model> model, const std::vector<TextPair>& pairs, const ExtractOptions& options) {
    c10::NoGradGuard noGrad;
    if (options.perPosition) throw Error("recipe text-pairs: per-position vectors need an image");
    if (pairs.empty()) throw Error("recipe text-pairs: no pairs");
    const int layers = model->config().text.numLayers;
    // K/V of the last token of a prompt, per layer: [H, D] each (keys optionally pre-RoPE).
    auto lastToken = [&](const std::string& text) {
        Session s(model);
        s.prefill(buildPrompt(*model, text, true, nullptr), 1);
        KVCache cache = s.snapshot().clone();
        s.feed(cache, {s.lastPromptToken()});
        const int64_t pos = cache.size() - 1;
        std::vector<std::pair<at::Tensor, at::Tensor>> kv;
        for (int l = 0; l < layers; ++l) {
            at::Tensor k = cache.keys(l).select(0, 0).narrow(1, pos, 1).to(at::kFloat);   // [H, 1, D]
            if (options.keySpace == KeySpace::PreRope)
                k = model->decoder().rotate(k, cache.positions(pos, 1), true);
            kv.emplace_back(k.squeeze(1).cpu(), cache.values(l).select(0, 0).narrow(1, pos, 1).squeeze(1).to(at::kFloat).cpu());
        }
        return kv;
    };
    std::vector<std::vector<at::Tensor>> dk(layers), dv(layers);
    for (const TextPair& p : pairs) {
        const auto pos = lastToken(p.positive), neg = lastToken(p.negative);
        for (int l = 0; l < layers; ++l) {
            dk[l].push_back(pos[l].first - neg[l].first);
            dv[l].push_back(pos[l].second - neg[l].second);
        }
    }
    SteeringVectors v = emptyVectors(*model, options.keySpace);
    for (int l = 0; l < layers; ++l) {
        v.keys[l] = summarize(at::stack(dk[l], 1), options.pca);   // [H, pairs, D] -> [H, D]
        v.values[l] = summarize(at::stack(dv[l], 1), options.pca);
    }
    return v;
}

} // namespace kvsteer
