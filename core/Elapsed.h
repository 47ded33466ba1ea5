#pragma once
// Milliseconds since a point on the steady clock: how every timing the program reports is taken.
#include <chrono>

namespace kvsteer {

inline double msSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

} // namespace kvsteer
