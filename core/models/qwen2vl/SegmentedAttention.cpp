#include "models/qwen2vl/SegmentedAttention.h"

#include "nn/AttentionMatmul.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/softmax.h>

#include <algorithm>
#include <cmath>

namespace kvsteer {

namespace {

// Scores are materialised per chunk of queries: at most this many floats at once (16 MB). Below
// malloc's mmap threshold (Runtime.cpp), so one chunk's scores reuse the last one's memory instead
// of faulting in fresh pages (at 128 MB a chunk, a 4096-patch image spent a quarter of its encode
// in the kernel's page-fault path). A row's bits do not depend on the chunk it is in.
constexpr int64_t kScoreElements = int64_t(1) << 22;

} // namespace

at::Tensor segmentedAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::vector<int64_t>& segments) {
    const int64_t heads = q.size(0), d = q.size(2);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    at::Tensor out = at::empty(q.sizes(), q.options());
    int64_t start = 0;
    for (const int64_t length : segments) {
        const int64_t chunk = std::max<int64_t>(1, kScoreElements / (heads * length));
        const at::Tensor ks = k.narrow(1, start, length);
        const at::Tensor vt = v.narrow(1, start, length).transpose(1, 2).contiguous();   // [heads, d, L], once per segment
        for (int64_t row = 0; row < length; row += chunk) {
            const int64_t rows = std::min(chunk, length - row);
            const at::Tensor scores = matmulTransposed(q.narrow(1, start + row, rows), ks) * scale;   // [heads, rows, L]
            const at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
            out.narrow(1, start + row, rows).copy_(matmulTransposed(probs, vt));                      // probs · v
        }
        start += length;
    }
    return out;
}

} // namespace kvsteer
