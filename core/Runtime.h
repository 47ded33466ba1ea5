#pragma once
// Process-wide runtime settings: who owns the cores, and how freed memory is kept.
//
// One pool owns them: kvsteer's own (ThreadPool.h), which runs the kernels and the nn ops' loops.
// ATen's intra-op pool (OpenMP in Debian's libtorch) is held at one thread: its workers spin for
// milliseconds after every ATen op, on the cores the pool's threads need next. ATen's ops are a
// few % of a prompt (perf, Qwen3-VL-2B's text prefill: 3 %). ATen's own matmuls (the demo
// trainer, a recipe's PCA) go to OpenBLAS in Debian's libtorch, which has a pool of its own;
// measured here, letting it and another pool use every core makes them fight (OpenBLAS spins in
// sched_yield while the other waits) and halves the speed. So OpenBLAS is held at one thread
// whenever it is present, except while setBlasThreads gives it the cores.
#include <c10/core/Device.h>

namespace kvsteer {

void setThreads(int threads);   // 0 = all hardware threads; also pins ATen's pool and OpenBLAS to
                                // one thread and keeps freed buffers in the heap for reuse (Runtime.cpp)
int currentThreads();           // threads of the pool that holds the cores
// For code whose matmuls are ATen's own (the demo trainer): the cores go to OpenBLAS instead and
// the pool's threads sleep. Loading a model switches back.
void setBlasThreads(int threads);
bool deviceAvailable(const c10::Device& device);
// Returns once the work queued on `device` so far has run (a GPU runs ahead of the host; a time
// taken without this measures the launches). Nothing to wait for on CPU.
void waitForDevice(const c10::Device& device);

} // namespace kvsteer
