#pragma once
// The threads that run kvsteer's split loops: the kernels' blocks of rows, the nn ops' rows, the
// attention's heads. The caller works too; the other threads take pieces as they come free.
//
// Why a pool of our own, not ATen's (OpenMP): how the threads wait decides the speed on a shared
// machine. libgomp's threads spin for about 3 ms after every loop, so beside one busy process a
// spinning thread takes the core its partner needs, and 2 threads ran 1.6x (Qwen3-VL-2B's
// decode) to 2.2x (the demo's eval) slower than 1 (docs/benchmarks.md, "Threads on a shared
// machine"). Told not to spin at all, they cost 16 % of a quiet machine's decode speed, because
// waking a sleeping thread on a VM is slow. This pool spins while that pays, and runs loops on the
// caller alone while the kernel says its threads wait for cores (ThreadPool.cpp).
//
// Which thread takes which piece never changes a bit: every caller computes each output whole
// inside one piece, the same way on any thread (test_determinism).
#include <cstdint>
#include <type_traits>

namespace kvsteer {

// A reference to a callable without std::function's allocation (the loops run a few hundred
// times per decode step). It must not outlive the callable: pass it down, never store it.
template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
public:
    template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
    FunctionRef(const F& f)   // NOLINT: implicit, so that a lambda can be passed as is
        : object_(&f), call_([](const void* o, Args... a) -> R { return (*static_cast<const F*>(o))(a...); }) {}
    R operator()(Args... a) const { return call_(object_, a...); }

private:
    const void* object_;
    R (*call_)(const void*, Args...);
};

// How many threads split a loop: the caller and threads - 1 workers (1: everything runs on the
// caller). setThreads (Runtime.h) calls this; the default is every hardware thread.
void setPoolThreads(int threads);
int poolThreads();

// Runs task(i) once for every i in [0, count). Each thread takes the next i not yet taken, so a
// thread that the machine holds back takes fewer, and one that has not woken yet takes none.
// Runs on the caller alone when the pool has one thread, when called from inside a task (the
// loops nest: an attention head's matmul), or while another thread's loop holds the pool.
// An exception thrown by a task stops the loop and is rethrown here.
void forEachTaken(int64_t count, FunctionRef<void(int64_t)> task);

// fn(first, end) over consecutive pieces of [begin, end), each at least `grain` long (the last
// may be shorter): at::parallel_for's contract. A range shorter than two grains runs on the
// caller in one piece: waking a thread would cost more than it saves.
void parallelFor(int64_t begin, int64_t end, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

} // namespace kvsteer
