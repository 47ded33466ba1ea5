#pragma once
// Process-wide runtime settings of libtorch. Debian's libtorch runs on ONE thread unless told.
#include <c10/core/Device.h>

namespace kvsteer {

void setThreads(int threads);   // 0 = all hardware threads
int currentThreads();
bool deviceAvailable(const c10::Device& device);

} // namespace kvsteer
