// The kernels' front door: which ISA runs (the CPU, KVSTEER_ISA, forceIsa), how the work is split
// over the thread pool (ThreadPool.h), and the panel kernel's blocks. The arithmetic itself
// is in the per-ISA files (KernelsPortable.cpp, KernelsAvx2.cpp, KernelsAvx512.cpp), reached
// through the table in KernelTable.h. Compiled with no special flags, like the rest of the project.
#include "kernels/Kernels.h"
#include "kernels/KernelTable.h"
#include "kernels/PanelLoops.h"

#include "ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kvsteer::kernels {

using detail::KernelTable;

// ---------------------------------------------------------------------------------------------
// Which ISA

namespace {

#if defined(__x86_64__)
// F16C from CPUID leaf 1 (ECX bit 29): clang before 15 rejects "f16c" in __builtin_cpu_supports,
// and the fuzz build (scripts/fuzz.sh) compiles this file with clang 14.
bool cpuHasF16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

Isa detectIsa() {
#if defined(__x86_64__)
    __builtin_cpu_init();
    // Only what the code uses. The AVX-512 file is also compiled with AVX2/FMA/F16C available to
    // the compiler, so its level requires those too (every AVX-512 CPU has them).
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpuHasF16c();
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl");
    if (avx512) return Isa::Avx512;
    if (avx2) return Isa::Avx2;
#endif
    return Isa::Portable;
}

// Isa is ordered best first, so "capped to bestIsa()" is the later of the two.
Isa capToCpu(Isa isa) {
    return static_cast<int>(isa) < static_cast<int>(bestIsa()) ? bestIsa() : isa;
}

// KVSTEER_ISA, read once. Unset -> bestIsa(); an unknown value is reported and ignored.
Isa isaFromEnvironment() {
    const char* value = std::getenv("KVSTEER_ISA");
    if (value == nullptr || *value == '\0') return bestIsa();
    Isa isa;
    if (!detail::parseIsaName(value, &isa)) {
        std::fprintf(stderr, "kvsteer: ignoring KVSTEER_ISA=%s (expected avx512, avx2 or portable)\n", value);
        return bestIsa();
    }
    return capToCpu(isa);
}

// forceIsa()'s choice, or -1 while nothing was forced (the environment then decides).
std::atomic<int> forcedIsa{-1};

const KernelTable& activeTable() {
    switch (activeIsa()) {
    case Isa::Avx512: return *detail::avx512Table();
    case Isa::Avx2: return *detail::avx2Table();
    case Isa::Portable: break;
    }
    return *detail::portableTable();
}

} // namespace

bool detail::parseIsaName(const char* name, Isa* out) {
    if (name == nullptr) return false;
    // ASCII lower case by hand: std::tolower depends on the C locale.
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    for (Isa isa : {Isa::Avx512, Isa::Avx2, Isa::Portable}) {
        const char* expected = isaName(isa);
        size_t i = 0;
        while (name[i] != '\0' && lower(name[i]) == expected[i]) ++i;
        if (name[i] == '\0' && expected[i] == '\0') {
            *out = isa;
            return true;
        }
    }
    return false;
}

Isa bestIsa() {
    static const Isa best = detectIsa();
    return best;
}

Isa activeIsa() {
    const int forced = forcedIsa.load(std::memory_order_relaxed);
    if (forced >= 0) return static_cast<Isa>(forced);
    static const Isa fromEnvironment = isaFromEnvironment();
    return fromEnvironment;
}

void forceIsa(Isa isa) { forcedIsa.store(static_cast<int>(capToCpu(isa)), std::memory_order_relaxed); }

const char* isaName(Isa isa) {
    switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    case Isa::Portable: return "portable";
    }
    return "unknown";
}

// ---------------------------------------------------------------------------------------------
// Conversions

float halfToFloat(uint16_t h) { return detail::halfToFloatScalar(h); }
float bfloat16ToFloat(uint16_t b) { return detail::bfloat16ToFloatScalar(b); }
void widenRow(const void* src, WeightType t, int64_t n, float* dst) { activeTable().widenRow(src, t, n, dst); }

int64_t argmax(const float* v, int64_t n) { return activeTable().argmax(v, n); }

void softmax(float* p, int64_t n) { activeTable().softmax(p, n); }

void weightedSum(const float* p, const float* v, int64_t vStride, int64_t n, int64_t hd, float* out) {
    activeTable().weightedSum(p, v, vStride, n, hd, out);
}

// ---------------------------------------------------------------------------------------------
// Splitting the work

namespace {

int64_t divUp(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t multiple) { return divUp(a, multiple) * multiple; }

// Rows of W are handed out in multiples of this (a cache-friendly, SIMD-friendly unit).
constexpr int64_t kRowQuantum = 16;
// Below these sizes a matmul runs on the calling thread, where one thread needs only some 20 us
// and waking the pool would cost a good part of that: the skinny kernel streams about 10 GB/s of
// weights per thread, the panel kernel computes about 100 GFLOP/s per thread.
constexpr int64_t kMinParallelWeights = 1 << 18;   // skinny: weight elements read
constexpr int64_t kMinParallelMacs = 1 << 20;      // panel: multiply-adds

// Runs runBlock(b) for b in [0, blocks), spread over the pool when `parallel`: each thread takes
// the next block not yet taken, so a thread slowed by a neighbour does fewer (a static split left
// one thread waiting at the end of the panels). Each block is computed whole by one thread, so
// which thread takes it never changes its bits.
template <class Fn>
void forEachTakenBlock(int64_t blocks, bool parallel, const Fn& runBlock) {
    if (parallel) return forEachTaken(blocks, runBlock);
    for (int64_t b = 0; b < blocks; ++b) runBlock(b);
}

// Runs fn(n0, n1) over [0, rows) in blocks of blockRows rows (forEachTakenBlock).
template <class Fn>
void forEachRowBlock(int64_t rows, int64_t blockRows, bool parallel, const Fn& fn) {
    forEachTakenBlock(divUp(rows, blockRows), parallel, [&](int64_t b) { fn(b * blockRows, std::min(rows, (b + 1) * blockRows)); });
}

// The table's skinny kernel for any m: x in blocks of kSkinnyMaxRows rows, W rows [n0, n1).
void skinnyBlock(const KernelTable& table, const float* x, int64_t m, int64_t xStride, const WeightView& w,
                 int64_t n0, int64_t n1, float* y, int64_t yStride) {
    for (int64_t r = 0; r < m; r += kSkinnyMaxRows)
        table.skinny(x + r * xStride, std::min(kSkinnyMaxRows, m - r), xStride, w, n0, n1, y + r * yStride, yStride);
}

// Nothing to do, or nothing to sum (cols == 0 gives zeros). True when the caller can return.
bool handleEmpty(int64_t m, const WeightView& w, float* y, int64_t yStride) {
    if (m <= 0 || w.rows <= 0) return true;
    if (w.cols > 0) return false;
    for (int64_t r = 0; r < m; ++r) std::fill(y + r * yStride, y + r * yStride + w.rows, 0.0f);
    return true;
}

} // namespace

void skinnyMatmul(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride) {
    skinnyMatmulStacked(x, m, xStride, &w, 1, y, yStride);
}

namespace {

// Rows of a stack of weights handed out as blocks: block b of part p covers rows
// [b * blockRows, ...) of that part. Each part is cut into one block per thread, so that a thread
// streams one long run of each matrix (the skinny tiles read it as two streams far apart,
// KernelTable.h); many small blocks put those streams too close (docs/benchmarks.md, "How the
// kernels' constants were chosen"). A late thread still takes fewer rows: the other one goes on to
// the next part's block.
int64_t skinnyBlockRows(const WeightView& w) {
    const int64_t threads = poolThreads();
    return roundUp(divUp(w.rows, threads), kRowQuantum);
}

} // namespace

namespace {

// Runs fn(p, n0, n1) over every block of rows [n0, n1) of every part p, spread over the pool
// (forEachTakenBlock). Empty parts have no blocks.
template <class Fn>
void forEachSkinnyBlock(const WeightView* parts, int count, const Fn& fn) {
    std::vector<int64_t> firstBlock{0}, blockRows;   // block b of part p: b - firstBlock[p]
    int64_t weights = 0;
    for (int p = 0; p < count; ++p) {
        blockRows.push_back(skinnyBlockRows(parts[p]));
        const bool empty = parts[p].rows <= 0 || parts[p].cols <= 0;
        firstBlock.push_back(firstBlock[p] + (empty ? 0 : divUp(parts[p].rows, blockRows[p])));
        weights += parts[p].rows * parts[p].cols;
    }
    const int64_t blocks = firstBlock[count];
    auto runBlock = [&](int64_t b) {
        int p = 0;
        while (b >= firstBlock[p + 1]) ++p;
        const int64_t n0 = (b - firstBlock[p]) * blockRows[p];
        fn(p, n0, std::min(parts[p].rows, n0 + blockRows[p]));
    };
    forEachTakenBlock(blocks, weights >= kMinParallelWeights, runBlock);
}

} // namespace

void skinnyMatmulStacked(const float* x, int64_t m, int64_t xStride, const WeightView* parts, int count, float* y,
                         int64_t yStride) {
    // Output columns: part p fills [columnOf[p], columnOf[p] + parts[p].rows).
    std::vector<int64_t> columnOf{0};
    bool anything = false;
    for (int p = 0; p < count; ++p) {
        anything = !handleEmpty(m, parts[p], y + columnOf[p], yStride) || anything;
        columnOf.push_back(columnOf[p] + parts[p].rows);
    }
    if (!anything) return;
    const KernelTable& table = activeTable();
    forEachSkinnyBlock(parts, count, [&](int p, int64_t n0, int64_t n1) {
        skinnyBlock(table, x, m, xStride, parts[p], n0, n1, y + columnOf[p], yStride);
    });
}

uint64_t readWeights(const WeightView* parts, int count) {
    const KernelTable& table = activeTable();
    std::atomic<uint64_t> checksum{0};
    forEachSkinnyBlock(parts, count, [&](int p, int64_t n0, int64_t n1) {
        const WeightView& w = parts[p];
        const int64_t elementBytes = w.type == WeightType::F32 ? 4 : 2;
        const char* first = static_cast<const char*>(w.data) + n0 * w.rowStride * elementBytes;
        checksum.fetch_xor(table.xorRows(first, w.cols * elementBytes, w.rowStride * elementBytes, n1 - n0),
                           std::memory_order_relaxed);
    });
    return checksum.load();
}

// ---------------------------------------------------------------------------------------------
// The panel kernel

namespace {

// Rows per thread's share of W for a matrix with `cols` columns: rows * cols floats' worth, about
// 2 MB (the panel's size when it was widened to float32, kept as the unit of work); a multiple
// of 16, at least 16. PanelLoops.h blocks the share further for the caches.
int64_t panelRows(int64_t cols) {
    constexpr int64_t kPanelBytes = 2 << 20;
    const int64_t rows = kPanelBytes / (cols * static_cast<int64_t>(sizeof(float)));
    return std::max(kRowQuantum, rows / kRowQuantum * kRowQuantum);
}

// x rows per call of the table's panel loops: bounds their scratch (1 MB with AVX-512) for a
// prompt of any length.
constexpr int64_t kPanelXBlock = 240;

// y = x · rowsᵀ on one thread: `rows` views W's rows n0..n1 (in W's dtype), y points at column n0.
void panelRowsOnThread(const KernelTable& table, const float* x, int64_t m, int64_t xStride, const WeightView& rows, float* y,
                       int64_t yStride) {
    thread_local std::vector<float> spill;
    const int64_t block = std::min(m, kPanelXBlock);
    if (spill.size() < static_cast<size_t>(detail::panelSpillFloats(block))) spill.resize(static_cast<size_t>(detail::panelSpillFloats(block)));
    for (int64_t r = 0; r < m; r += kPanelXBlock)
        table.panel(x + r * xStride, std::min(kPanelXBlock, m - r), xStride, rows, y + r * yStride, yStride, spill.data());
}

} // namespace

void panelMatmul(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride) {
    if (handleEmpty(m, w, y, yStride)) return;
    const KernelTable& table = activeTable();
    const int64_t threads = poolThreads();
    // Panels no taller than an even share of the rows, so a short matrix still uses every thread.
    // Each output is computed whole by one thread, so how the rows are shared changes no bit.
    const int64_t rowsPerPanel = std::min(panelRows(w.cols), roundUp(divUp(w.rows, threads), kRowQuantum));
    const bool parallel = m * w.rows * w.cols >= kMinParallelMacs;
    const int64_t elementBytes = w.type == WeightType::F32 ? 4 : 2;
    // The tiles read W in its own dtype and widen each vector in registers, as the skinny tiles do
    // (widening is exact, so the sums see the same floats): no widened copy of W is made.
    forEachRowBlock(w.rows, rowsPerPanel, parallel, [&](int64_t n0, int64_t n1) {
        WeightView rows = w;
        rows.data = static_cast<const char*>(w.data) + n0 * w.rowStride * elementBytes;
        rows.rows = n1 - n0;
        panelRowsOnThread(table, x, m, xStride, rows, y + n0, yStride);
    });
}

void matmul(const float* x, int64_t m, int64_t xStride, const WeightView& w, float* y, int64_t yStride) {
    matmulStacked(x, m, xStride, &w, 1, y, yStride);
}

void matmulStacked(const float* x, int64_t m, int64_t xStride, const WeightView* parts, int count, float* y, int64_t yStride) {
    if (m <= kSkinnyMaxRows) return skinnyMatmulStacked(x, m, xStride, parts, count, y, yStride);
    for (int p = 0; p < count; ++p) {   // compute-bound: one pool pass per part costs nothing here
        panelMatmul(x, m, xStride, parts[p], y, yStride);
        y += parts[p].rows;
    }
}

} // namespace kvsteer::kernels
