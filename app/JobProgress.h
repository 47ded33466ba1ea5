#pragma once
// What eval and study share while they run: SIGINT / SIGTERM ask the run to stop after the current
// batch (the files stay whole, the same command continues), and a one-line progress on a terminal.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace kvsteer {

inline std::atomic<bool>& stopFlag() {
    static std::atomic<bool> flag{false};
    return flag;
}
extern "C" inline void requestStopFromSignal(int) { stopFlag() = true; }
inline void installStopHandlers() {
    std::signal(SIGINT, requestStopFromSignal);
    std::signal(SIGTERM, requestStopFromSignal);
}

// "12 / 300 items, 1.8 items/s, ETA 2m40s" on one terminal line.
class Progress {
public:
    Progress(size_t total, size_t done, std::string unit = "items") : total_(total), done_(done), start_(done), unit_(std::move(unit)), tty_(::isatty(2)) {}
    void item() {
        ++done_;
        if (!tty_) return;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
        const double rate = s > 0 ? double(done_ - start_) / s : 0;
        const double eta = rate > 0 ? double(total_ - done_) / rate : 0;
        std::fprintf(stderr, "\r%zu / %zu %s, %.2f %s/s, ETA %dm%02ds   ", done_, total_, unit_.c_str(), rate, unit_.c_str(), int(eta) / 60, int(eta) % 60);
        if (done_ == total_) std::fprintf(stderr, "\n");
    }

private:
    size_t total_, done_, start_;
    std::string unit_;
    bool tty_;
    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

} // namespace kvsteer
