#pragma once
// KVCache: per-layer keys and values of a Llama decoder, [B, H_kv, T, D], preallocated to a
// capacity so decoding appends in place. Keys are stored after RoPE (as transformers does).
//
// The number of tokens held, size(), is the only source of positions; no separate counter can
// drift. Cache index i sits at RoPE position i + positionOffset, where positionOffset is the
// family's rule for the prompt this cache holds, set once at prefill and kept with the cache like
// its visual span: LLaVA 0, PaliGemma 1, Qwen2-VL the prompt's rope delta. A family with
// multi-axis positions (Qwen2-VL's M-RoPE: t, h, w per image token) also keeps the prompt's own
// positions, promptPositions [3, P]; indices past the prompt use i + positionOffset in every row.
// Each layer keeps its own fill count while a forward pass is under way; size() reports the last
// layer's, i.e. the tokens every layer has seen.
#include "cache/VisualSpan.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace kvsteer {

class KVCache {
public:
    KVCache() = default;
    KVCache(int numLayers, int64_t batch, int64_t kvHeads, int64_t headDim, int64_t capacity, at::TensorOptions options);

    int64_t size() const { return fill_.empty() ? 0 : fill_.back(); }
    int64_t capacity() const { return capacity_; }
    int64_t batch() const { return batch_; }
    int numLayers() const { return static_cast<int>(fill_.size()); }
    bool empty() const { return size() == 0; }

    // Appends k, v ([B, H_kv, T, D]) to `layer` and returns that layer's keys and values for all
    // tokens so far (views, no copy). Grows the buffers if the capacity is exceeded.
    std::pair<at::Tensor, at::Tensor> update(const at::Tensor& k, const at::Tensor& v, int layer);

    // A decode step captured in a CUDA graph (generate/DecodeGraph.h) cannot narrow to a length
    // known only on the host: it writes k, v ([B, H_kv, 1, D]) at the cache index held in the
    // device tensor `index` ([1] int64) and attends over the whole buffers, which this returns
    // ([B, H_kv, capacity, D]). The count is left alone: advance() adds the token once the step ran.
    std::pair<at::Tensor, at::Tensor> writeAt(const at::Tensor& k, const at::Tensor& v, int layer, const at::Tensor& index);
    void advance(int64_t n);
    // The buffers' storage, every layer's K then V: a captured step is only valid for these.
    std::vector<const void*> bufferAddresses() const;

    // Views of the held tokens, [B, H_kv, size(), D]. Writing through them edits the cache.
    at::Tensor keys(int layer) const;
    at::Tensor values(int layer) const;

    KVCache clone() const;            // deep copy (same capacity)
    void truncate(int64_t n);         // forget tokens n.. (their positions will be reused)
    void reserve(int64_t capacity);   // grow the buffers ahead of a long decode

    // The ids whose K/V the cache holds (kept by the Session; lets a resume skip a cached prefix).
    const std::vector<int64_t>& tokens() const { return tokens_; }
    void appendTokens(const std::vector<int64_t>& ids) { tokens_.insert(tokens_.end(), ids.begin(), ids.end()); }

    VisualSpan visualSpan;
    int64_t positionOffset = 0;
    at::Tensor promptPositions;   // [rows, P] int64 (CPU), or undefined: i + positionOffset throughout
    // RoPE positions of cache indices start .. start+n-1: [rows, n] int64 on the CPU, rows = those
    // of promptPositions (3 under M-RoPE), else 1.
    at::Tensor positions(int64_t start, int64_t n) const;

    // Batch rows: stack single-row caches into one batch (side-by-side decoding), with room for
    // `capacity` tokens (0: the smallest of the rows' capacities). The rows are copied with as much
    // of their own room as that needs; bigger buffers only when some row has less.
    static KVCache stackRows(const std::vector<const KVCache*>& rows, int64_t capacity = 0);
    // Batch row b as a single-row cache that shares the batch's memory: edits and appends through
    // it (within the capacity) are the batch's. Its own bookkeeping (fill, tokens) is separate,
    // copied from the batch's, which is its first row's (stackRows keeps one set).
    KVCache rowView(int64_t b);
    // The same view with row b's own bookkeeping (tokens, span, positions) taken from `source`, the
    // cache that row was stacked from. A batch of different prompts of one length needs this: a
    // propagate edit re-feeds the row's own tokens, not its first row's.
    KVCache rowView(int64_t b, const KVCache& source);
    // Keeps only the given batch rows, in that order (the decode loop drops rows that have
    // finished): a run of consecutive rows stays a view of the same buffers, others are copied.
    void keepRows(const std::vector<int64_t>& rows);

private:
    int64_t batch_ = 0;
    int64_t capacity_ = 0;
    std::vector<at::Tensor> k_, v_;   // [B, H_kv, capacity, D] per layer
    std::vector<int64_t> fill_;       // tokens written per layer
    std::vector<int64_t> tokens_;
};

} // namespace kvsteer
