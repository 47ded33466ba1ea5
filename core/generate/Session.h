#pragma once
// Session: the prefill -> edit -> decode loop for one (image, prompt), the same for every family.
//
// The pristine snapshot holds the prompt's K/V at every position but the last; decoding starts
// from a copy of it, seeded with the last prompt token, so an edit of the cache is seen by the
// very first generated token. How the snapshot is made follows the family's prompt attention:
//   causal (LLaVA)         the decoder runs over ids[0 .. L-2]
//   prefix-LM (PaliGemma)  the decoder runs over all L ids bidirectionally, and the last
//                          position is dropped again: the kept positions have seen it, exactly as
//                          in the reference's full prefill, and feeding the last token against
//                          them reproduces the full prefill's last position (its logits are the
//                          first answer token's). "Prefill L-1 causally, then decode" would not.
// Positions always come from the cache: cache.size() + cache.positionOffset.
#include "cache/KVCache.h"
#include "generate/TokenStream.h"
#include "models/Prompt.h"
#include "models/common/TransformerDecoder.h"
#include "generate/Sampler.h"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

class Model;

struct GenerationOptions {
    int maxNewTokens = 64;
    SamplingParams sampling;
    bool stopAtEos = true;
    std::vector<at::Tensor> attentionBias;   // per layer, see ForwardPass (spotlight steering)
    bool captureAttention = false;           // fill TokenEvent::attention at every step
};

// How many of `wanted` new tokens fit the model's context after a prompt of `promptTokens`
// (positions end at max_position_embeddings): the CLI and the studio clamp with it.
int newTokensThatFit(const TextConfig& config, int64_t promptTokens, int wanted);

class Session {
public:
    explicit Session(std::shared_ptr<const Model> model);

    const Model& model() const { return *model_; }
    std::shared_ptr<const Model> modelPtr() const { return model_; }

    // Encodes the image (if any) and makes the snapshot of prompt.ids[0 .. L-2] (see above). `reserveTokens` sizes the
    // cache so decoding that many tokens never reallocates. `stopRequested`, when given, is asked
    // after the image encoding and before every decoder layer; once it says true the prefill
    // stops and returns false, leaving the session unprefilled (a real 7B prompt takes seconds
    // to minutes on a CPU, and the user may change the image meanwhile).
    bool prefill(const Prompt& prompt, int64_t reserveTokens = 256, const std::function<bool()>& stopRequested = {});
    // Prefix reuse (causal families): several prompts that share their first tokens — the template
    // and the image — share that part of the cache. prefillPrefix runs the image encoder and the
    // decoder over the prompt's first `n` ids only; prefillFrom then makes this session's
    // snapshot from a copy of that prefix by running only the rest of the prompt (the same
    // positions, so the snapshot equals prefill()'s up to summation order). prefillFrom throws
    // kvsteer::Error when the prompt does not start with the prefix's ids or the family's prompt
    // attention is bidirectional (every token sees the ones after it: nothing can be reused).
    KVCache prefillPrefix(const Prompt& prompt, int64_t n) const;
    void prefillFrom(const KVCache& prefix, const Prompt& prompt, int64_t reserveTokens);
    // prefillFrom for several sessions at once: prompts that start with the prefix and lay out
    // alike after it (an image's questions) continue as one batch, the shorter ones padded at
    // their end, so the rest of all of them costs one pass over the weights. Each session gets its
    // own snapshot, as prefillFrom would make it.
    static void prefillFromShared(const KVCache& prefix, const std::vector<Session*>& sessions, const std::vector<const Prompt*>& prompts,
                                  int64_t reserveTokens);
    // Whether two prompts can continue as one such batch from a prefix of their first `shared`
    // ids: those ids equal, the same position offset, and positions alike up to the shorter's end.
    static bool continueAlike(const Prompt& a, const Prompt& b, int64_t shared);
    bool prefilled() const { return prefilled_; }
    // Whether the snapshot is of exactly this prompt (the same ids and the same pixels): a new
    // plan on it needs no prefill.
    bool holds(const Prompt& prompt) const;
    const Prompt& prompt() const { return prompt_; }
    const KVCache& snapshot() const { return snapshot_; }
    int64_t lastPromptToken() const { return prompt_.ids.back(); }
    const at::Tensor& imageFeatures() const { return image_.tokens; }   // undefined after prefix reuse
    const ImageFeatures& image() const { return image_; }
    double imageEncodeMs() const { return imageEncodeMs_; }
    double prefillMs() const { return prefillMs_; }

    // Runs the decoder over `ids` ([B, T] int64) appended to `cache`; returns the logits of the
    // last position, [B, V] float32.
    at::Tensor forwardIds(KVCache& cache, const at::Tensor& ids, ForwardPass* pass = nullptr) const;

    // Resumes a single-row cache with token ids. `ids` may be only the new tokens, or the whole
    // sequence starting with the tokens the cache already holds (that prefix is then skipped).
    // Returns the logits of the last id, [V].
    at::Tensor feed(KVCache& cache, const std::vector<int64_t>& ids, ForwardPass* pass = nullptr) const;

    // Recomputes the prompt positions `from` .. L-2 of a cache made from this session's snapshot
    // against its first `from` positions (steering's propagate mode, after the image's K/V were
    // edited), with the family's prompt attention: causal, or bidirectional together with the
    // last prompt token (whose K/V are then dropped again, as in prefill). `pass` carries the
    // attention bias of a spotlight plan. `from` may lie inside the image: its tokens are then
    // computed again from the image's features, DeepStack rows included, which the session keeps
    // (not after prefix reuse: kvsteer::Error).
    void recomputePrompt(KVCache& cache, int64_t from, const ForwardPass& pass = {}) const;

    // Generates from `cache`, seeded with `seedToken` (not yet in the cache). Stops at EOS, at
    // the token budget, or when `cancel` becomes true (checked between steps).
    Generation decode(KVCache cache, int64_t seedToken, const GenerationOptions& options, const TokenCallback& onToken = {},
                      const std::atomic<bool>* cancel = nullptr) const;

    // decode() from a copy of the pristine snapshot.
    Generation generate(const GenerationOptions& options, const TokenCallback& onToken = {},
                        const std::atomic<bool>* cancel = nullptr) const;

private:
    void requirePrefilled() const;
    // recomputePrompt's path when `from` lies inside the image (see there).
    void recomputeFromImage(KVCache& cache, const std::vector<int64_t>& prompt, int64_t from, const ForwardPass& pass) const;

    std::shared_ptr<const Model> model_;
    Prompt prompt_;
    KVCache snapshot_;
    ImageFeatures image_;
    bool prefilled_ = false;
    double imageEncodeMs_ = 0, prefillMs_ = 0;
};

} // namespace kvsteer
