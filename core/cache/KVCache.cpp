#include "cache/KVCache.h"

#include "Error.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include <algorithm>

namespace kvsteer {

KVCache::KVCache(int numLayers, int64_t batch, int64_t kvHeads, int64_t headDim, int64_t capacity, at::TensorOptions options)
    : batch_(batch), capacity_(capacity), fill_(numLayers, 0) {
    // Zeros, not whatever the allocator hands back: a CUDA graph's step attends over the whole
    // capacity with the unwritten keys masked, and a masked score (-inf) or probability (0) meets
    // the stale value there; a NaN left by an earlier tensor would make the row NaN.
    for (int l = 0; l < numLayers; ++l) {
        k_.push_back(at::zeros({batch, kvHeads, capacity, headDim}, options));
        v_.push_back(at::zeros({batch, kvHeads, capacity, headDim}, options));
    }
}

std::pair<at::Tensor, at::Tensor> KVCache::update(const at::Tensor& k, const at::Tensor& v, int layer) {
    if (layer < 0 || layer >= numLayers()) throw Error("KVCache::update: layer " + std::to_string(layer) + " out of range");
    const int64_t t = k.size(2);
    const int64_t start = fill_[layer];
    if (start + t > capacity_) reserve(std::max(start + t, capacity_ * 2));
    k_[layer].narrow(2, start, t).copy_(k);
    v_[layer].narrow(2, start, t).copy_(v);
    fill_[layer] = start + t;
    return {k_[layer].narrow(2, 0, start + t), v_[layer].narrow(2, 0, start + t)};
}

std::pair<at::Tensor, at::Tensor> KVCache::writeAt(const at::Tensor& k, const at::Tensor& v, int layer, const at::Tensor& index) {
    if (layer < 0 || layer >= numLayers()) throw Error("KVCache::writeAt: layer " + std::to_string(layer) + " out of range");
    k_[layer].index_copy_(2, index, k);
    v_[layer].index_copy_(2, index, v);
    return {k_[layer], v_[layer]};
}

void KVCache::advance(int64_t n) {
    if (size() + n > capacity_) throw Error("KVCache::advance: " + std::to_string(size() + n) + " tokens exceed the capacity " + std::to_string(capacity_));
    for (auto& f : fill_) f += n;
}

std::vector<const void*> KVCache::bufferAddresses() const {
    std::vector<const void*> out;
    for (const at::Tensor& t : k_) out.push_back(t.data_ptr());
    for (const at::Tensor& t : v_) out.push_back(t.data_ptr());
    return out;
}

at::Tensor KVCache::keys(int layer) const { return k_.at(layer).narrow(2, 0, fill_.at(layer)); }
at::Tensor KVCache::values(int layer) const { return v_.at(layer).narrow(2, 0, fill_.at(layer)); }

at::Tensor KVCache::positions(int64_t start, int64_t n) const {
    const int64_t rows = promptPositions.defined() ? promptPositions.size(0) : 1;
    at::Tensor out = at::arange(start, start + n, at::kLong).add_(positionOffset).unsqueeze(0).repeat({rows, 1});
    if (promptPositions.defined()) {
        const int64_t fromPrompt = std::clamp<int64_t>(promptPositions.size(1) - start, 0, n);
        if (fromPrompt > 0) out.narrow(1, 0, fromPrompt).copy_(promptPositions.narrow(1, start, fromPrompt));
    }
    return out;
}

KVCache KVCache::clone() const {
    KVCache c = *this;   // copies the bookkeeping; the tensors are shared until replaced below
    for (size_t l = 0; l < k_.size(); ++l) {
        c.k_[l] = k_[l].clone();
        c.v_[l] = v_[l].clone();
    }
    return c;
}

void KVCache::truncate(int64_t n) {
    if (n < 0 || n > size()) throw Error("KVCache::truncate: " + std::to_string(n) + " is outside 0.." + std::to_string(size()));
    for (auto& f : fill_) f = n;
    if (static_cast<int64_t>(tokens_.size()) > n) tokens_.resize(n);
    if (visualSpan.valid() && visualSpan.end() > n) visualSpan = VisualSpan{};
}

void KVCache::reserve(int64_t capacity) {
    if (capacity <= capacity_) return;
    for (size_t l = 0; l < k_.size(); ++l) {
        auto grow = [&](at::Tensor& buf) {
            auto sizes = buf.sizes().vec();
            sizes[2] = capacity;
            at::Tensor bigger = at::empty(sizes, buf.options());
            bigger.narrow(2, 0, fill_[l]).copy_(buf.narrow(2, 0, fill_[l]));
            bigger.narrow(2, fill_[l], capacity - fill_[l]).zero_();   // past the held tokens: see the constructor
            buf = bigger;
        };
        grow(k_[l]);
        grow(v_[l]);
    }
    capacity_ = capacity;
}

KVCache KVCache::stackRows(const std::vector<const KVCache*>& rows, int64_t capacity) {
    if (rows.empty()) throw Error("KVCache::stackRows: no rows");
    const KVCache& first = *rows.front();
    for (const KVCache* r : rows)
        if (r->size() != first.size() || r->numLayers() != first.numLayers() || r->batch() != 1)
            throw Error("KVCache::stackRows: rows must be single-row caches of equal length and depth");
    // One concatenation per buffer of each row's tokens and as much of its room as asked for and
    // all rows have; only when they have too little does reserve() move it into bigger buffers.
    int64_t room = first.capacity_;
    for (const KVCache* r : rows) room = std::min(room, r->capacity_);
    if (capacity > 0) room = std::max(first.size(), std::min(room, capacity));
    KVCache c = first;   // the bookkeeping (fill, tokens, span, positions); the buffers are replaced
    c.batch_ = static_cast<int64_t>(rows.size());
    c.capacity_ = room;
    for (size_t l = 0; l < first.k_.size(); ++l) {
        std::vector<at::Tensor> ks, vs;
        for (const KVCache* r : rows) {
            ks.push_back(r->k_[l].narrow(2, 0, room));
            vs.push_back(r->v_[l].narrow(2, 0, room));
        }
        c.k_[l] = at::cat(ks, 0);
        c.v_[l] = at::cat(vs, 0);
    }
    c.reserve(capacity);
    return c;
}

void KVCache::keepRows(const std::vector<int64_t>& rows) {
    if (rows.empty()) throw Error("KVCache::keepRows: no rows");
    for (int64_t r : rows)
        if (r < 0 || r >= batch_) throw Error("KVCache::keepRows: row outside the batch");
    const int64_t n = static_cast<int64_t>(rows.size());
    bool consecutive = true;
    for (int64_t i = 1; i < n; ++i) consecutive = consecutive && rows[size_t(i)] == rows[0] + i;
    if (consecutive) {
        // A run of rows (the pair's one stream left, the atlas's last rows): a view, no copy. A
        // copy would be allocated while the whole batch is still held (by the steered row's
        // view, or the caller), raising the peak just as the batch shrinks.
        for (size_t l = 0; l < k_.size(); ++l) {
            k_[l] = k_[l].narrow(0, rows[0], n);
            v_[l] = v_[l].narrow(0, rows[0], n);
        }
    } else {
        const at::Tensor index = at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(k_.front().device());
        for (size_t l = 0; l < k_.size(); ++l) {
            k_[l] = k_[l].index_select(0, index);
            v_[l] = v_[l].index_select(0, index);
        }
    }
    batch_ = n;
}

KVCache KVCache::rowView(int64_t b) {
    if (b < 0 || b >= batch_) throw Error("KVCache::rowView: row outside the batch");
    KVCache c = *this;
    c.batch_ = 1;
    for (size_t l = 0; l < k_.size(); ++l) {
        c.k_[l] = k_[l].narrow(0, b, 1);
        c.v_[l] = v_[l].narrow(0, b, 1);
    }
    return c;
}

KVCache KVCache::rowView(int64_t b, const KVCache& source) {
    if (source.size() != size() || source.numLayers() != numLayers())
        throw Error("KVCache::rowView: the row's source cache holds another number of tokens or layers");
    KVCache c = rowView(b);
    c.tokens_ = source.tokens_;
    c.visualSpan = source.visualSpan;
    c.positionOffset = source.positionOffset;
    c.promptPositions = source.promptPositions;
    return c;
}

} // namespace kvsteer
