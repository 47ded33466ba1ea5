#include "Runtime.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <thread>

namespace kvsteer {

void setThreads(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(threads);
}

int currentThreads() { return at::get_num_threads(); }

bool deviceAvailable(const c10::Device& device) {
    if (device.is_cpu()) return true;
    if (device.is_cuda()) return at::hasCUDA();
    return false;
}

} // namespace kvsteer
