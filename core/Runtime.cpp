#include "Runtime.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <dlfcn.h>
#include <thread>

namespace kvsteer {

namespace {

// OpenBLAS's thread control, looked up at run time: libtorch links whatever libblas.so.3 points
// to, so OpenBLAS may or may not be there.
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();

SetThreadsFn openblasSetThreads() { return reinterpret_cast<SetThreadsFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")); }
GetThreadsFn openblasGetThreads() { return reinterpret_cast<GetThreadsFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads")); }

} // namespace

void setThreads(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (SetThreadsFn set = openblasSetThreads()) set(1);
    at::set_num_threads(threads);
}

void setBlasThreads(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (SetThreadsFn set = openblasSetThreads()) {
        set(threads);
        at::set_num_threads(1);
    } else {
        at::set_num_threads(threads);
    }
}

// Whichever pool holds the cores: ATen's after setThreads, OpenBLAS's after setBlasThreads.
int currentThreads() {
    const GetThreadsFn blas = openblasGetThreads();
    return std::max(at::get_num_threads(), blas ? blas() : 1);
}

bool deviceAvailable(const c10::Device& device) {
    if (device.is_cpu()) return true;
    if (device.is_cuda()) return at::hasCUDA();
    return false;
}

} // namespace kvsteer
