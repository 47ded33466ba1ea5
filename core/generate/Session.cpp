#include "generate/Session.h"

#include "Elapsed.h"
#include "Error.h"
#include "Runtime.h"
#include "generate/BatchDecode.h"
#include "models/Model.h"

#include <ATen/ops/equal.h>
#include <ATen/ops/tensor.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>

namespace kvsteer {

namespace {

// An image's DeepStack rows, belonging to the span's tokens (none for most families).
HiddenAdditions deepstackOf(const ImageFeatures& image, const VisualSpan& span) {
    HiddenAdditions additions;
    additions.first = span.start;
    additions.afterLayer = image.deepstack;
    return additions;
}

} // namespace

Session::Session(std::shared_ptr<const Model> model) : model_(std::move(model)) {
    if (!model_) throw Error("Session: no model");
}

void Session::requirePrefilled() const {
    if (!prefilled_) throw Error("Session: prefill() must run before decoding");
}

bool Session::prefill(const Prompt& prompt, int64_t reserveTokens, const std::function<bool()>& stopRequested) {
    c10::NoGradGuard noGrad;
    if (prompt.ids.size() < 2) throw Error("prompt: needs at least two tokens (BOS and one more)");
    const ModelConfig& c = model_->config();
    // Unprefilled until the new prefill is complete: no snapshot of the previous prompt is left
    // behind if this one stops (and a 7B cache is freed before the next is allocated).
    prefilled_ = false;
    snapshot_ = KVCache();
    prompt_ = prompt;

    auto t0 = std::chrono::steady_clock::now();
    image_ = prompt.hasImage ? model_->encodePromptImage(prompt) : ImageFeatures();
    waitForDevice(model_->format().device);   // a GPU's times count the work, not its launches
    imageEncodeMs_ = msSince(t0);
    if (stopRequested && stopRequested()) return false;

    t0 = std::chrono::steady_clock::now();
    const int64_t n = static_cast<int64_t>(prompt.ids.size()) - 1;   // positions the snapshot keeps
    const bool prefixLm = model_->promptAttention() == PromptAttention::Bidirectional;
    const std::vector<int64_t> kept(prompt.ids.begin(), prompt.ids.end() - 1);
    at::Tensor embeds = model_->embedPrompt(prefixLm ? prompt.ids : kept, image_.tokens);
    const int64_t capacity = std::min<int64_t>(n + 1 + std::max<int64_t>(reserveTokens, 1), c.text.maxPositionEmbeddings);
    snapshot_ = KVCache(c.text.numLayers, 1, c.text.numKvHeads, c.text.headDim, capacity,
                        at::TensorOptions().dtype(model_->format().compute).device(model_->format().device));
    snapshot_.positionOffset = prompt.positionOffset;
    snapshot_.promptPositions = prompt.positionIds;
    ForwardPass pass;
    pass.stopRequested = stopRequested;
    pass.bidirectional = prefixLm;
    const HiddenAdditions deepstack = deepstackOf(image_, prompt.span);
    if (!deepstack.empty()) pass.additions = &deepstack;
    try {
        model_->decoder().forward(embeds, snapshot_, &pass);
    } catch (const ForwardStopped&) {
        snapshot_ = KVCache();   // partly written
        return false;
    }
    if (prefixLm) snapshot_.truncate(n);   // the last token is fed again by decode
    snapshot_.appendTokens(kept);
    snapshot_.visualSpan = prompt.span;
    waitForDevice(model_->format().device);
    prefillMs_ = msSince(t0);
    prefilled_ = true;
    return true;
}

KVCache Session::prefillPrefix(const Prompt& prompt, int64_t n) const {
    c10::NoGradGuard noGrad;
    if (model_->promptAttention() == PromptAttention::Bidirectional)
        throw Error("prefix reuse: " + model_->familyName() + " prompts attend in both directions, so no prefix can be shared");
    if (n < 1 || n >= int64_t(prompt.ids.size())) throw Error("prefix reuse: the prefix must be a proper part of the prompt");
    if (prompt.hasImage && prompt.span.end() > n) throw Error("prefix reuse: the prefix must hold the whole image");
    const ModelConfig& c = model_->config();
    const ImageFeatures features = prompt.hasImage ? model_->encodePromptImage(prompt) : ImageFeatures();
    const std::vector<int64_t> ids(prompt.ids.begin(), prompt.ids.begin() + n);
    KVCache prefix(c.text.numLayers, 1, c.text.numKvHeads, c.text.headDim, n,
                   at::TensorOptions().dtype(model_->format().compute).device(model_->format().device));
    prefix.positionOffset = prompt.positionOffset;
    prefix.promptPositions = prompt.positionIds;
    ForwardPass pass;
    const HiddenAdditions deepstack = deepstackOf(features, prompt.span);
    if (!deepstack.empty()) pass.additions = &deepstack;
    model_->decoder().forward(model_->embedPrompt(ids, features.tokens), prefix, &pass);
    prefix.appendTokens(ids);
    prefix.visualSpan = prompt.span;
    return prefix;
}

void Session::prefillFrom(const KVCache& prefix, const Prompt& prompt, int64_t reserveTokens) {
    prefillFromShared(prefix, {this}, {&prompt}, reserveTokens);
}

bool Session::continueAlike(const Prompt& a, const Prompt& b, int64_t shared) {
    if (int64_t(std::min(a.ids.size(), b.ids.size())) < shared || !std::equal(a.ids.begin(), a.ids.begin() + shared, b.ids.begin())) return false;
    if (a.positionOffset != b.positionOffset || a.positionIds.defined() != b.positionIds.defined()) return false;
    if (!a.positionIds.defined()) return true;
    // M-RoPE rows: the shorter prompt's are the first columns of the longer's (true of prompts
    // about one image: the text after it counts on).
    const int64_t n = std::min(a.positionIds.size(1), b.positionIds.size(1));
    return at::equal(a.positionIds.narrow(1, 0, n), b.positionIds.narrow(1, 0, n));
}

void Session::prefillFromShared(const KVCache& prefix, const std::vector<Session*>& sessions, const std::vector<const Prompt*>& prompts,
                                int64_t reserveTokens) {
    c10::NoGradGuard noGrad;
    if (sessions.empty() || sessions.size() != prompts.size()) throw Error("prefix reuse: one prompt per session");
    const Session& first = *sessions.front();
    const Model& model = *first.model_;
    const std::vector<int64_t>& shared = prefix.tokens();
    if (model.promptAttention() == PromptAttention::Bidirectional)
        throw Error("prefix reuse: " + model.familyName() + " prompts attend in both directions, so no prefix can be shared");
    const Prompt& longest = **std::max_element(prompts.begin(), prompts.end(),
                                               [](const Prompt* a, const Prompt* b) { return a->ids.size() < b->ids.size(); });
    for (size_t b = 0; b < prompts.size(); ++b) {
        if (sessions[b]->model_ != first.model_) throw Error("prefix reuse: the sessions of one batch must share their model");
        if (shared.size() + 1 > prompts[b]->ids.size() || !std::equal(shared.begin(), shared.end(), prompts[b]->ids.begin()))
            throw Error("prefix reuse: the prompt does not start with the prefix's tokens");
        if (!continueAlike(*prompts[b], longest, int64_t(shared.size())))
            throw Error("prefix reuse: prompts continued as one batch must lay out alike after the prefix (offset, positions)");
    }
    for (Session* s : sessions) {   // until the snapshots are made (a failed forward leaves them unprefilled)
        s->prefilled_ = false;
        s->snapshot_ = KVCache();
    }
    const auto t0 = std::chrono::steady_clock::now();
    // A copy with room for the longest rest and the answer, made in one go: reserve() on a shallow
    // copy moves the held tokens into new buffers and leaves the prefix's own untouched.
    KVCache roomy = prefix;
    roomy.reserve(std::max(prefix.capacity() + 1, std::min<int64_t>(int64_t(longest.ids.size()) + std::max<int64_t>(reserveTokens, 1),
                                                                    model.config().text.maxPositionEmbeddings)));
    roomy.positionOffset = longest.positionOffset;
    roomy.promptPositions = longest.positionIds;
    // The rest of every prompt but its last token, [B, T], in one forward over B copies of the
    // prefix: the weights are read once for all the questions. A shorter rest is padded at its
    // end (with its own last token); being causal, its real tokens never see the padding, whose
    // K/V are cut off again below. (Not feed(): its "full sequence" rule must not guess here.)
    const int64_t restLength = int64_t(longest.ids.size() - shared.size()) - 1;
    std::vector<std::vector<int64_t>> rests;
    std::vector<int64_t> padded;
    for (const Prompt* p : prompts) {
        rests.emplace_back(p->ids.begin() + int64_t(shared.size()), p->ids.end() - 1);
        std::vector<int64_t> row = rests.back();
        row.resize(size_t(restLength), row.empty() ? shared.back() : row.back());
        padded.insert(padded.end(), row.begin(), row.end());
    }
    KVCache batch = sessions.size() == 1 ? std::move(roomy) : KVCache::stackRows(std::vector<const KVCache*>(sessions.size(), &roomy));
    if (restLength > 0) {   // K/V only: no logits (decode feeds each prompt's last token)
        const at::Tensor ids = at::tensor(padded, at::TensorOptions().dtype(at::kLong)).view({int64_t(sessions.size()), restLength});
        model.decoder().forward(model.decoder().embed(ids), batch);
    }
    waitForDevice(model.format().device);
    const double ms = msSince(t0) / double(sessions.size());
    for (size_t b = 0; b < sessions.size(); ++b) {
        const Prompt& p = *prompts[b];
        // A view of its row, not a copy: the rows stay side by side in the batch's buffers, which
        // live as long as any of the snapshots does (decoding never writes into a snapshot).
        KVCache snapshot = sessions.size() == 1 ? std::move(batch) : batch.rowView(int64_t(b));
        snapshot.truncate(int64_t(shared.size() + rests[b].size()));   // the padding's K/V dropped
        snapshot.appendTokens(rests[b]);
        snapshot.promptPositions = p.positionIds;
        snapshot.visualSpan = p.span;
        Session& s = *sessions[b];
        s.prompt_ = p;
        s.image_ = ImageFeatures();   // inside the prefix; not encoded again
        s.imageEncodeMs_ = 0;
        s.snapshot_ = std::move(snapshot);
        s.prefillMs_ = ms;
        s.prefilled_ = true;
    }
}

bool Session::holds(const Prompt& prompt) const {
    if (!prefilled_ || prompt.ids != prompt_.ids || prompt.hasImage != prompt_.hasImage) return false;
    if (!prompt.hasImage || prompt.pixels.is_same(prompt_.pixels)) return true;   // the very tensor: no need to read it
    return prompt.pixels.sizes() == prompt_.pixels.sizes() && at::equal(prompt.pixels, prompt_.pixels);
}

void Session::recomputePrompt(KVCache& cache, int64_t from, const ForwardPass& pass) const {
    requirePrefilled();
    std::vector<int64_t> prompt = cache.tokens();   // what the snapshot holds, and for a prefix-LM the last token
    if (from < 0 || from > static_cast<int64_t>(prompt.size())) throw Error("Session::recomputePrompt: position outside the cache");
    const bool bidirectional = model_->promptAttention() == PromptAttention::Bidirectional;
    if (bidirectional) prompt.push_back(lastPromptToken());
    if (from == static_cast<int64_t>(prompt.size())) return;   // nothing after the edit
    const VisualSpan span = cache.visualSpan;
    const int64_t end = cache.size();
    cache.truncate(from);
    ForwardPass recompute = pass;
    recompute.bidirectional = bidirectional;
    if (prompt_.hasImage && from < span.end()) recomputeFromImage(cache, prompt, from, recompute);
    else feed(cache, std::vector<int64_t>(prompt.begin() + from, prompt.end()), &recompute);
    if (bidirectional) cache.truncate(end);
    cache.visualSpan = span;
}

void Session::recomputeFromImage(KVCache& cache, const std::vector<int64_t>& prompt, int64_t from, const ForwardPass& pass) const {
    c10::NoGradGuard noGrad;
    if (cache.batch() != 1) throw Error("Session::recomputePrompt: recomputes a single-row cache");
    if (!image_.tokens.defined())
        throw Error("Session::recomputePrompt: position " + std::to_string(from) +
                    " is inside the image, whose features this session does not keep (its prefix was reused)");
    // The image's tokens enter through their features, never their ids, and get their DeepStack
    // rows again after the first layers: the same inputs the prefill gave them.
    const int64_t n = static_cast<int64_t>(prompt.size()) - from;
    const at::Tensor embeds = model_->embedPrompt(prompt, image_.tokens).narrow(1, from, n);
    const HiddenAdditions deepstack = deepstackOf(image_, prompt_.span);
    ForwardPass withRows = pass;
    if (!deepstack.empty()) withRows.additions = &deepstack;
    model_->decoder().forward(embeds, cache, &withRows);
    cache.appendTokens(std::vector<int64_t>(prompt.begin() + from, prompt.end()));
}

at::Tensor Session::forwardIds(KVCache& cache, const at::Tensor& ids, ForwardPass* pass) const {
    c10::NoGradGuard noGrad;
    const TransformerDecoder& decoder = model_->decoder();
    at::Tensor embeds = decoder.embed(ids);
    if (embeds.size(0) != cache.batch()) embeds = embeds.expand({cache.batch(), embeds.size(1), embeds.size(2)});
    at::Tensor hidden = decoder.forward(embeds, cache, pass);
    return decoder.logits(hidden.select(1, hidden.size(1) - 1));
}

at::Tensor Session::feed(KVCache& cache, const std::vector<int64_t>& ids, ForwardPass* pass) const {
    if (cache.batch() != 1) throw Error("Session::feed: resumes a single-row cache");
    const std::vector<int64_t>& held = cache.tokens();
    std::vector<int64_t> fresh = ids;
    // The full sequence: it starts with everything the cache holds. Skip that prefix.
    if (ids.size() > held.size() && !held.empty() && std::equal(held.begin(), held.end(), ids.begin()))
        fresh.assign(ids.begin() + static_cast<std::ptrdiff_t>(held.size()), ids.end());
    if (fresh.empty()) throw Error("Session::feed: no new tokens to feed (the ids are all in the cache already)");
    if (model_->config().hasVision)
        for (int64_t id : fresh)
            if (id == model_->config().imageTokenIndex)
                throw Error("Session::feed: image tokens can only enter through prefill (the image is encoded once)");
    at::Tensor idTensor = at::tensor(fresh, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
    at::Tensor logits = forwardIds(cache, idTensor, pass);
    cache.appendTokens(fresh);
    return logits.squeeze(0);
}

Generation Session::decode(KVCache cache, int64_t seedToken, const GenerationOptions& options, const TokenCallback& onToken,
                           const std::atomic<bool>* cancel) const {
    DecodeRow row;   // a batch of one
    row.seedToken = seedToken;
    row.maxNewTokens = options.maxNewTokens;
    row.sampling = options.sampling;
    row.stopAtEos = options.stopAtEos;
    row.attentionBias = options.attentionBias;
    BatchCallbacks callbacks;
    if (onToken)
        callbacks.onStep = [&](const BatchStep& step) {
            TokenEvent ev = step.tokens[0];
            ev.attention = step.attention;
            onToken(ev);
        };
    return decodeBatch(*this, std::move(cache), {row}, callbacks, cancel, options.captureAttention).rows[0];
}

int newTokensThatFit(const TextConfig& config, int64_t promptTokens, int wanted) {
    const int64_t room = std::max<int64_t>(0, config.maxPositionEmbeddings - promptTokens);
    return static_cast<int>(std::min<int64_t>(wanted, room));
}

Generation Session::generate(const GenerationOptions& options, const TokenCallback& onToken, const std::atomic<bool>* cancel) const {
    requirePrefilled();
    return decode(snapshot_.clone(), lastPromptToken(), options, onToken, cancel);
}

} // namespace kvsteer
