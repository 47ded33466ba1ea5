#pragma once
// The demo trainer's progress lines: elapsed wall-clock seconds, and durations as h:mm:ss.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

namespace kvsteer::demo {

inline double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline std::string formatDuration(double seconds) {
    char buf[32];
    const int total = static_cast<int>(std::max(0.0, seconds));
    std::snprintf(buf, sizeof buf, "%d:%02d:%02d", total / 3600, (total / 60) % 60, total % 60);
    return buf;
}

} // namespace kvsteer::demo
