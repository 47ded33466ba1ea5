#pragma once
// Process-wide runtime settings of libtorch.
//
// Debian's libtorch runs on ONE thread unless told, and its matmuls go to OpenBLAS, which has a
// thread pool of its own. Measured here: letting ATen's OpenMP pool and OpenBLAS's pool both use
// every core makes them fight (OpenBLAS spins in sched_yield while OpenMP workers wait), halving
// decode speed. So with OpenBLAS present the cores go to OpenBLAS and ATen's own pool gets one
// thread; with any other BLAS (MKL in pip's libtorch) ATen's setting governs both.
#include <c10/core/Device.h>

namespace kvsteer {

void setThreads(int threads);   // 0 = all hardware threads
int currentThreads();           // threads doing the matmuls
bool deviceAvailable(const c10::Device& device);

} // namespace kvsteer
