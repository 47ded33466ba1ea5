#pragma once
// BatchDecode: the one decode loop. Every answer kvsteer generates comes out of decodeBatch — a
// single answer is a batch of one row, the side-by-side pair a batch of two (unsteered, steered),
// the atlas a batch of up to eight cells, eval a batch of questions.
//
// Each row starts from its own copy of a prompt's cache (the rows are stacked into one KVCache,
// [B, H_kv, T, D]) and is fed its seed token first (the last prompt token). Per step the loop
//   1. feeds every active row its next token in one forward pass ([B, 1] ids, one row's spotlight
//      bias each; on CUDA the pass is replayed as one CUDA graph, generate/DecodeGraph.h),
//   2. lets each row's TokenStream pick the next id (its own sampler, detokenizer and EOS),
//   3. retires rows that ended (EOS, or the row's own token budget) and, once half of the batch
//      (at least one row) has ended, drops them from the batch, so a short answer does not keep
//      paying for the longest one's steps.
// A row's numbers do not depend on the other rows (the skinny matmul kernel and the attention
// compute each row alone for batches of up to kernels::kSkinnyMaxRows rows), so one row decoded
// alone, in the pair or in a batch of eight gives the same ids and logits bit for bit
// (test_batch_decode). The cancel flag is asked once per step.
#include "cache/KVCache.h"
#include "generate/Sampler.h"
#include "generate/TokenStream.h"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

namespace kvsteer {

class Session;

// One row of the batch: how it starts, how it is steered while decoding, and when it stops.
struct DecodeRow {
    int64_t seedToken = 0;                   // fed first (the last prompt token)
    int maxNewTokens = 64;                   // this row's budget
    SamplingParams sampling;                 // greedy by default
    bool stopAtEos = true;
    std::vector<at::Tensor> attentionBias;   // per layer [1, H, S'] (spotlight), or empty
};

// What one step gave. Rows that have ended report id -1 and no text.
struct BatchStep {
    int step = 0;
    std::vector<TokenEvent> tokens;                        // one per row, in row order
    // When captured: per layer [active.size(), H, S], batch position i holding row active[i].
    const std::vector<at::Tensor>* attention = nullptr;
    const std::vector<int64_t>* active = nullptr;          // the rows this step fed
};

struct BatchCallbacks {
    std::function<void(const BatchStep&)> onStep;
    // A row's answer as soon as it has ended (EOS or its budget), rows of one step in row order.
    // Rows still running when the decode is cancelled are not reported.
    std::function<void(int64_t row, const Generation&)> onRowDone;
};

struct BatchResult {
    std::vector<Generation> rows;   // in row order; unfinished rows of a cancelled decode say so
    double decodeMs = 0;
    bool cancelled = false;
};

// Decodes `batch` (one row per DecodeRow, all holding the same number of tokens) until every row
// has ended. `captureAttention` reports the attention weights of every step. At most
// kernels::kSkinnyMaxRows rows, the skinny kernel's widest tile, which reads each weight once for
// the whole batch. (The bits would not change beyond it: the panel kernel gives each row the
// skinny kernel's bits, test_determinism.)
BatchResult decodeBatch(const Session& session, KVCache batch, const std::vector<DecodeRow>& rows, const BatchCallbacks& callbacks = {},
                        const std::atomic<bool>* cancel = nullptr, bool captureAttention = false);

// The per-row spotlight biases as one batch bias per layer ([rows, H, S']): rows without a bias in
// a layer get zeros there. Empty when no row has any.
std::vector<at::Tensor> stackAttentionBiases(const std::vector<const std::vector<at::Tensor>*>& perRow);

} // namespace kvsteer
