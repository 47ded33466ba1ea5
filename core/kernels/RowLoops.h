#pragma once
// Internal to the kernels: attention's row loops (the softmax of a row of scores, the weighted sum
// of value rows), written once over an ISA's vector type, as TileLoops.h does for the tiles. The
// scalar reference is KernelsPortable.cpp. Besides TileLoops.h's Vec, kLanes, zero, load, store
// and fma, an Isa gives here:
//   Mask, firstLanes(count)          the first `count` lanes (0..kLanes)
//   loadFirst(p, mask)               those lanes from p, 0 in the others (never read)
//   loadFirstOr(fill, p, mask)       those lanes from p, `fill` in the others
//   storeFirst(p, mask, v)           those lanes to p, nothing else written
//   keepFirst(mask, v)               v in those lanes, 0 in the others
//   set1, add, sub, mul, max         lane by lane (max(a, b) as the instruction: b where a lane is NaN)
//   sumLanes(v), maxLanes(v)         the lanes added (a fixed tree), the largest lane
//   exp(v)                           e^v per lane (kExpTaylor, KernelTable.h); 0 below kExpUnderflow
#include "kernels/KernelTable.h"

namespace kvsteer::kernels::detail {

// In place: p[s] = exp(p[s] - max) / sum for s < n.
template <class Isa>
static void softmaxRow(float* p, int64_t n) {
    using Vec = typename Isa::Vec;
    constexpr int kLanes = Isa::kLanes;
    const Vec lowest = Isa::set1(-__builtin_inff());
    Vec max = lowest;
    int64_t s = 0;
    for (; s + kLanes <= n; s += kLanes) max = Isa::max(Isa::load(p + s), max);   // a NaN lane keeps max
    if (s < n) max = Isa::max(Isa::loadFirstOr(lowest, p + s, Isa::firstLanes(n - s)), max);
    const Vec shift = Isa::set1(Isa::maxLanes(max));
    Vec sum = Isa::zero();
    for (s = 0; s + kLanes <= n; s += kLanes) {
        const Vec e = Isa::exp(Isa::sub(Isa::load(p + s), shift));
        Isa::store(p + s, e);
        sum = Isa::add(sum, e);
    }
    if (s < n) {
        const typename Isa::Mask tail = Isa::firstLanes(n - s);
        const Vec e = Isa::exp(Isa::sub(Isa::loadFirst(p + s, tail), shift));
        Isa::storeFirst(p + s, tail, e);
        sum = Isa::add(sum, Isa::keepFirst(tail, e));
    }
    const Vec inverse = Isa::set1(1.0f / Isa::sumLanes(sum));
    for (s = 0; s + kLanes <= n; s += kLanes) Isa::store(p + s, Isa::mul(Isa::load(p + s), inverse));
    if (s < n) {
        const typename Isa::Mask tail = Isa::firstLanes(n - s);
        Isa::storeFirst(p + s, tail, Isa::mul(Isa::loadFirst(p + s, tail), inverse));
    }
}

// out[c0 .. c0 + width) of the weighted sum, V registers of accumulators (width <= V * kLanes):
// every v row's slice is loaded once and added in while the accumulators stay in registers.
template <class Isa, int V>
static void weightedSlice(const float* p, const float* v, int64_t vStride, int64_t n, int64_t width, float* out) {
    using Vec = typename Isa::Vec;
    constexpr int kLanes = Isa::kLanes;
    const typename Isa::Mask last = Isa::firstLanes(width - (V - 1) * kLanes);
    Vec acc[V];
    for (int j = 0; j < V; ++j) acc[j] = Isa::zero();
    // One value row into the accumulators (acc += p[s] * row s).
    auto addRow = [&](Vec* into, int64_t s) {
        const Vec weight = Isa::set1(p[s]);
        const float* row = v + s * vStride;
        for (int j = 0; j < V - 1; ++j) into[j] = Isa::fma(weight, Isa::load(row + j * kLanes), into[j]);
        into[V - 1] = Isa::fma(weight, Isa::loadFirst(row + (V - 1) * kLanes, last), into[V - 1]);
    };
    int64_t s = 0;
    if (V <= 4) {   // few accumulators: a second set takes the odd rows, so two FMA chains overlap
        Vec odd[V];
        for (int j = 0; j < V; ++j) odd[j] = Isa::zero();
        for (; s + 2 <= n; s += 2) {
            addRow(acc, s);
            addRow(odd, s + 1);
        }
        for (int j = 0; j < V; ++j) acc[j] = Isa::add(acc[j], odd[j]);
    }
    for (; s < n; ++s) addRow(acc, s);
    for (int j = 0; j < V - 1; ++j) Isa::store(out + j * kLanes, acc[j]);
    Isa::storeFirst(out + (V - 1) * kLanes, last, acc[V - 1]);
}

// out[i] = sum over s < n of p[s] * v[s * vStride + i], for i < hd: slices of 8 accumulators
// (a 128-wide head in one pass with AVX-512, two with AVX2).
template <class Isa>
static void weightedSumRows(const float* p, const float* v, int64_t vStride, int64_t n, int64_t hd, float* out) {
    constexpr int64_t kLanes = Isa::kLanes;
    constexpr int64_t kSlice = 8 * kLanes;
    for (int64_t c0 = 0; c0 < hd; c0 += kSlice) {
        const int64_t width = hd - c0 < kSlice ? hd - c0 : kSlice;
        switch ((width + kLanes - 1) / kLanes) {   // compile-time V, so the accumulators stay in registers
        case 1: weightedSlice<Isa, 1>(p, v + c0, vStride, n, width, out + c0); break;
        case 2: weightedSlice<Isa, 2>(p, v + c0, vStride, n, width, out + c0); break;
        case 3: weightedSlice<Isa, 3>(p, v + c0, vStride, n, width, out + c0); break;
        case 4: weightedSlice<Isa, 4>(p, v + c0, vStride, n, width, out + c0); break;
        case 5: weightedSlice<Isa, 5>(p, v + c0, vStride, n, width, out + c0); break;
        case 6: weightedSlice<Isa, 6>(p, v + c0, vStride, n, width, out + c0); break;
        case 7: weightedSlice<Isa, 7>(p, v + c0, vStride, n, width, out + c0); break;
        default: weightedSlice<Isa, 8>(p, v + c0, vStride, n, width, out + c0); break;
        }
    }
}

} // namespace kvsteer::kernels::detail
