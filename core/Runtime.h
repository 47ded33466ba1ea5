#pragma once
// Process-wide runtime settings: who owns the cores, and how freed memory is kept.
//
// One pool owns them: ATen's intra-op pool (OpenMP in Debian's libtorch). kvsteer's kernels split
// their work with at::parallel_for and call no BLAS. ATen's own matmuls (the demo trainer, a
// recipe's PCA) go to OpenBLAS in Debian's libtorch, which has a pool of its own; measured here, letting
// both pools use every core makes them fight (OpenBLAS spins in sched_yield while OpenMP workers
// wait) and halves the speed. So OpenBLAS is held at one thread whenever it is present.
#include <c10/core/Device.h>

namespace kvsteer {

void setThreads(int threads);   // 0 = all hardware threads; also pins OpenBLAS to one thread and
                                // keeps freed buffers in the heap for reuse (see Runtime.cpp)
int currentThreads();           // threads of the pool that holds the cores
// For code whose matmuls are ATen's own (the demo trainer): the cores go to OpenBLAS instead and
// ATen's pool gets one thread. loading a model switches back.
void setBlasThreads(int threads);
bool deviceAvailable(const c10::Device& device);
// Returns once the work queued on `device` so far has run (a GPU runs ahead of the host; a time
// taken without this measures the launches). Nothing to wait for on CPU.
void waitForDevice(const c10::Device& device);

} // namespace kvsteer
