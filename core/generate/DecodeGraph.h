#pragma once
// DecodeGraph: a batch's decode step on CUDA as one CUDA graph, captured once and replayed per
// token. A 7B decode step is about 800 small kernels; launched one by one from the host they take
// longer to launch than the GPU takes to run them (the step is launch-bound). Replayed as a graph
// they go out in one call.
//
// A graph replays the same launches on the same memory, so whatever changes from step to step
// lives in device tensors the step reads (TransformerDecoder's GraphStep): the fed ids, the cache
// index written, the RoPE row. The attention runs over the cache's whole capacity with a mask, so
// no shape changes either. The graph is captured again when something it baked in changes: the
// batch's buffers (rows dropped, the cache grown), the number of rows, the spotlight biases.
// What it cannot hold runs eagerly (step() returns an undefined tensor): CPU models, a pass that
// captures attention weights, a libtorch without CUDA, KVSTEER_CUDA_GRAPHS=0 in the environment.
//
// Greedy ids are the same with and without the graph (scripts/gpu-check.sh checks it); logits
// agree to float rounding, the masked softmax summing over more (zero) terms.
#include "cache/KVCache.h"
#include "models/common/TransformerDecoder.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace kvsteer {

class Session;

class DecodeGraph {
public:
    DecodeGraph(const Session& session, const ForwardPass& pass);
    ~DecodeGraph();
    DecodeGraph(const DecodeGraph&) = delete;
    DecodeGraph& operator=(const DecodeGraph&) = delete;

    // Whether steps can go through a graph at all (see above).
    bool enabled() const { return enabled_; }
    // What Session::forwardIds(batch, ids as [m, 1], &pass) gives — logits [m, V], float32 — run
    // through the graph, the batch's count advanced by the token. Undefined when this step has to
    // run eagerly (the graph is off, or the cache is full and must grow first).
    at::Tensor step(KVCache& batch, const std::vector<int64_t>& ids, const ForwardPass& pass);

private:
    struct Captured;
    const Session& session_;
    bool enabled_ = false;
    std::unique_ptr<Captured> captured_;
};

} // namespace kvsteer
