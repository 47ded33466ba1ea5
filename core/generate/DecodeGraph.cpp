#include "generate/DecodeGraph.h"

#include "generate/Session.h"
#include "models/Model.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/tensor.h>
#include <c10/core/GradMode.h>

#include <cstdlib>
#include <cstring>

#ifdef KVSTEER_CUDA_GRAPHS
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace kvsteer {

#ifdef KVSTEER_CUDA_GRAPHS

namespace {

bool graphsWanted() {
    const char* v = std::getenv("KVSTEER_CUDA_GRAPHS");
    return !v || std::strcmp(v, "0") != 0;
}

// What a captured graph baked in: it replays only while all of these are unchanged.
struct GraphKey {
    std::vector<const void*> buffers;   // the cache's K/V storage
    std::vector<const void*> biases;    // the spotlight biases' storage, per layer
    int64_t rows = 0, capacity = 0;

    static GraphKey of(const KVCache& batch, const ForwardPass& pass) {
        GraphKey k;
        k.buffers = batch.bufferAddresses();
        for (const at::Tensor& b : pass.attentionBias) k.biases.push_back(b.defined() ? b.data_ptr() : nullptr);
        k.rows = batch.batch();
        k.capacity = batch.capacity();
        return k;
    }
    bool operator==(const GraphKey& o) const { return buffers == o.buffers && biases == o.biases && rows == o.rows && capacity == o.capacity; }
};

} // namespace

struct DecodeGraph::Captured {
    explicit Captured(c10::Device device) : stream(c10::cuda::getStreamFromPool(false, device.index())) {}
    c10::cuda::CUDAStream stream;   // captures and replays run here (the default stream cannot capture)
    at::cuda::CUDAGraph graph;
    GraphKey key;
    // The step's inputs, written before every replay; the graph reads them.
    at::Tensor ids;          // [m, 1] int64
    at::Tensor cacheIndex;   // [1] int64
    at::Tensor cos, sin;     // [1, head_dim]
    at::Tensor keyIndex;     // [capacity] int64: 0, 1, ... (the mask compares it with cacheIndex)
    at::Tensor logits;       // [m, V] float32: the graph's output
};

namespace {

// The decode step as the graph holds it: Session::forwardIds with a GraphStep built from the
// captured inputs.
at::Tensor runStep(const Session& session, KVCache& batch, const ForwardPass& pass, const at::Tensor& ids, GraphStep& step,
                   const at::Tensor& keyIndex) {
    step.mask = graphStepMask(keyIndex, step.cacheIndex, session.model().format().compute);
    ForwardPass p;
    p.attentionBias = pass.attentionBias;
    p.graphStep = &step;
    return session.forwardIds(batch, ids, &p);
}

} // namespace

DecodeGraph::DecodeGraph(const Session& session, const ForwardPass& pass) : session_(session) {
    enabled_ = session.model().format().device.is_cuda() && !pass.captureAttention && !pass.stopRequested && graphsWanted();
}

DecodeGraph::~DecodeGraph() = default;

at::Tensor DecodeGraph::step(KVCache& batch, const std::vector<int64_t>& ids, const ForwardPass& pass) {
    if (!enabled_ || batch.size() + 1 > batch.capacity()) return {};
    c10::NoGradGuard noGrad;
    const Model& model = session_.model();
    const c10::Device device = model.format().device;
    const int64_t m = int64_t(ids.size());
    const GraphKey key = GraphKey::of(batch, pass);
    const bool fresh = !captured_ || !(captured_->key == key);
    if (fresh) {
        captured_.reset();   // its memory pool goes before the new one is made
        captured_ = std::make_unique<Captured>(device);
        Captured& c = *captured_;
        const auto ints = at::TensorOptions().dtype(at::kLong).device(device);
        c.key = key;
        c.ids = at::empty({m, 1}, ints);
        c.cacheIndex = at::empty({1}, ints);
        c.keyIndex = at::arange(batch.capacity(), ints);
    }
    Captured& c = *captured_;
    // Everything before this step (prefill, edits, copies into the batch) ran on the default stream.
    c10::cuda::getDefaultCUDAStream(device.index()).synchronize();
    c10::cuda::CUDAStreamGuard onStream(c.stream);

    // This step's inputs, written into the tensors the graph reads.
    const int64_t index = batch.size();
    const auto [cos, sin] = model.decoder().ropeTables(batch.positions(index, 1));
    if (fresh) {
        c.cos = at::empty_like(cos);
        c.sin = at::empty_like(sin);
    }
    c.ids.copy_(at::tensor(ids, at::TensorOptions().dtype(at::kLong)).view({m, 1}));
    c.cacheIndex.fill_(index);
    c.cos.copy_(cos);
    c.sin.copy_(sin);

    GraphStep step{c.cacheIndex, c.cos, c.sin, {}};
    if (fresh) {
        // One eager run on the capture stream first: it creates what the launches need (cuBLAS's
        // workspace, lazily loaded kernels), which a capture cannot do. It writes this step's K/V
        // at `index`, as the replay below writes them again, so it changes nothing.
        runStep(session_, batch, pass, c.ids, step, c.keyIndex);
        c.stream.synchronize();
        c.graph.capture_begin();
        c.logits = runStep(session_, batch, pass, c.ids, step, c.keyIndex);
        c.graph.capture_end();
    }
    c.graph.replay();
    const at::Tensor logits = c.logits.clone();   // the graph overwrites its output on the next replay
    c.stream.synchronize();   // the caller reads the logits on the default stream
    batch.advance(1);
    return logits;
}

#else   // a libtorch without CUDA: every step runs eagerly

struct DecodeGraph::Captured {};

DecodeGraph::DecodeGraph(const Session& session, const ForwardPass&) : session_(session) {}
DecodeGraph::~DecodeGraph() = default;
at::Tensor DecodeGraph::step(KVCache&, const std::vector<int64_t>&, const ForwardPass&) { return {}; }

#endif

} // namespace kvsteer
