#include "ThreadPool.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace kvsteer {

namespace {

using Clock = std::chrono::steady_clock;

// How a thread waits (for a loop to start, or for the others to finish theirs): it spins for up
// to kSpin, then sleeps. Waking a sleeping thread costs tens of microseconds on a VM, and a
// decode step starts a few hundred loops, so on a quiet machine spinning is what keeps decode fast.
// Beside a busy process, though, a spinning thread takes the core that the thread doing the work
// needs, and a thread that the machine holds back holds up the loop's end. The kernel tells each
// thread how long it has waited for a core while ready to run (/proc/thread-self/schedstat). On
// a quiet machine that is a fraction of a percent of its time, even while other programs wake
// briefly; beside one busy process on 2 cores, about a third. A pool thread whose recent share
// passes kSharedShare marks the machine as shared, and for kQuietAgain after that loops run on the
// caller alone, as --threads 1 would (measured in docs/benchmarks.md).
constexpr auto kSpin = std::chrono::microseconds(2000);
constexpr auto kQuietAgain = std::chrono::milliseconds(500);
constexpr double kSharedShare = 0.1;
constexpr double kShareWindowS = 0.2;                         // the share's time constant
constexpr auto kLookEvery = std::chrono::milliseconds(1);     // a look is a system call

// How much of its time this thread has lately waited for a core while ready to run: the second
// number of /proc/thread-self/schedstat (its total wait, in ns), read through a descriptor kept
// open for the thread's life, as a share decayed with kShareWindowS.
class RunQueueShare {
public:
    RunQueueShare() : fd_(open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}
    ~RunQueueShare() {
        if (fd_ >= 0) close(fd_);
    }
    RunQueueShare(const RunQueueShare&) = delete;
    RunQueueShare& operator=(const RunQueueShare&) = delete;

    // True when the share passes kSharedShare (one look per kLookEvery at most).
    bool high(Clock::time_point now) {
        if (now - lastLook_ < kLookEvery) return share_ > kSharedShare;
        const int64_t waitNs = totalWaitNs();
        if (waitNs < 0) return false;
        if (lastWaitNs_ >= 0) {
            const double elapsedS = std::chrono::duration<double>(now - lastLook_).count();
            const double keep = std::exp(-elapsedS / kShareWindowS);
            share_ = keep * share_ + (1 - keep) * std::min(1.0, double(waitNs - lastWaitNs_) * 1e-9 / elapsedS);
        }
        lastLook_ = now;
        lastWaitNs_ = waitNs;
        return share_ > kSharedShare;
    }

    // After a sleep: the wait to be woken (a VM's idle core takes a while to wake) is not the
    // machine being busy, so the next look starts from here, and the time asleep counts as
    // time without waiting (the share decays over it).
    void startOver(Clock::time_point now) {
        share_ *= std::exp(-std::chrono::duration<double>(now - lastLook_).count() / kShareWindowS);
        lastLook_ = now;
        lastWaitNs_ = totalWaitNs();
    }

private:
    int64_t totalWaitNs() const {
        if (fd_ < 0) return -1;
        char text[128];
        const ssize_t n = pread(fd_, text, sizeof text - 1, 0);
        if (n <= 0) return -1;
        text[n] = '\0';
        unsigned long long onCpu = 0, waited = 0;
        return std::sscanf(text, "%llu %llu", &onCpu, &waited) == 2 ? static_cast<int64_t>(waited) : -1;
    }

    int fd_;
    Clock::time_point lastLook_;
    int64_t lastWaitNs_ = -1;
    double share_ = 0;
};

thread_local RunQueueShare runQueueShare;

// Set while a thread runs a task: a loop started from inside one runs on that thread alone.
thread_local bool insideTask = false;

void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

class Pool {
public:
    explicit Pool(int threads) { start(threads); }

    int threads() const { return static_cast<int>(workers_.size()) + 1; }

    void resize(int threads) {
        std::lock_guard<std::mutex> owner(submit_);
        stop();
        start(threads);
    }

    void run(int64_t count, FunctionRef<void(int64_t)> task) {
        std::unique_lock<std::mutex> owner(submit_, std::try_to_lock);
        if (!owner || workers_.empty() || insideTask || count <= 1 || shared(Clock::now())) {
            runOnCaller(count, task);
            return;
        }
        task_ = &task;
        count_ = count;
        next_.store(0, std::memory_order_relaxed);
        error_ = nullptr;
        inside_.store(0);              // open: publishes the fields above to the workers that enter
        generation_.fetch_add(1);
        wakeIfSleeping(workAvailable_, sleepingWorkers_);
        takePieces();
        inside_.fetch_or(kClosed);     // no worker enters from now on; wait for those inside
        waitUntil([this] { return (inside_.load() & ~kClosed) == 0; }, allLeft_, sleepingCallers_);
        task_ = nullptr;
        if (error_) std::rethrow_exception(error_);
    }

private:
    static constexpr int kClosed = 1 << 30;   // inside_: the workers in the current loop, and this bit

    static void runOnCaller(int64_t count, FunctionRef<void(int64_t)> task) {
        const bool outer = insideTask;
        insideTask = true;
        try {
            for (int64_t i = 0; i < count; ++i) task(i);
        } catch (...) {
            insideTask = outer;
            throw;
        }
        insideTask = outer;
    }

    void start(int threads) {
        stopping_ = false;
        // A new thread joins loops started after this line, even those started before it runs.
        const uint64_t seen = generation_.load();
        // ATen sets itself up on a thread at its first use there, and that sets ATen's global
        // thread count again, which remakes a pool of ATen's. So each new thread does it now,
        // while this caller waits: no loop is running (another thread's ATen op cannot meet it)
        // and the process cannot be ending (its exit handlers would free that pool under it).
        // The count and its condition are the pool's, not this function's: a thread may still be
        // inside notify_one() when the caller has seen the count and returned.
        std::unique_lock<std::mutex> lock(startedMutex_);
        started_ = 0;
        for (int t = 1; t < threads; ++t)
            workers_.emplace_back([this, seen] {
                holdAtenToOneThread();
                {
                    std::lock_guard<std::mutex> counted(startedMutex_);
                    ++started_;
                }
                threadStarted_.notify_one();
                work(seen);
            });
        threadStarted_.wait(lock, [&] { return started_ == threads - 1; });
    }

    void stop() {
        stopping_ = true;
        wakeIfSleeping(workAvailable_, sleepingWorkers_);
        for (std::thread& w : workers_) w.join();
        workers_.clear();
    }

    void work(uint64_t seen) {
        for (;;) {
            waitUntil([&] { return generation_.load() != seen || stopping_.load(); }, workAvailable_, sleepingWorkers_);
            if (stopping_.load()) return;
            seen = generation_.load();
            if (!enter()) continue;    // that loop had already ended
            takePieces();
            leave();
        }
    }

    // An ATen op inside a task (an attention block's softmax) runs on this thread: ATen's own
    // pool would otherwise start a team of threads from here.
    static void holdAtenToOneThread() {
        (void)at::get_num_threads();   // ATen sets its per-thread count once, on first use
#if defined(_OPENMP)
        omp_set_num_threads(1);
#endif
    }

    // Joins the current loop unless it is closed; a closed count is never changed here.
    bool enter() {
        int inside = inside_.load();
        while (!(inside & kClosed))
            if (inside_.compare_exchange_weak(inside, inside + 1)) return true;
        return false;
    }

    void leave() {
        if (inside_.fetch_sub(1) - 1 == kClosed) wakeIfSleeping(allLeft_, sleepingCallers_);
    }

    void takePieces() {
        const bool outer = insideTask;
        insideTask = true;
        for (int64_t i = next_.fetch_add(1, std::memory_order_relaxed); i < count_; i = next_.fetch_add(1, std::memory_order_relaxed)) {
            try {
                (*task_)(i);
            } catch (...) {
                std::lock_guard<std::mutex> lock(errorMutex_);
                if (!error_) error_ = std::current_exception();
                next_.store(count_, std::memory_order_relaxed);   // the others stop taking pieces
            }
        }
        insideTask = outer;
    }

    // Whether the machine was found shared lately; a look at this thread's count comes first.
    bool shared(Clock::time_point now) {
        if (runQueueShare.high(now)) sharedUntil_.store((now + kQuietAgain).time_since_epoch().count(), std::memory_order_relaxed);
        return now.time_since_epoch().count() < sharedUntil_.load(std::memory_order_relaxed);
    }

    // Spins until ready() or for kSpin, whichever is first; false when it gave up. On a shared
    // machine it does not spin.
    template <class Ready>
    bool spinUntil(const Ready& ready) {
        const Clock::time_point start = Clock::now();
        if (shared(start)) return ready();
        for (;;) {
            for (int i = 0; i < 64; ++i) {
                if (ready()) return true;
                pause();
            }
            if (Clock::now() - start > kSpin) return ready();
        }
    }

    // Spins (spinUntil), then sleeps on `wake` until ready(). The count of sleepers and the
    // waker's check of it are both sequentially consistent, as are ready()'s loads: a waker that
    // sees no sleeper made ready() true before this thread looked again.
    template <class Ready>
    void waitUntil(const Ready& ready, std::condition_variable& wake, std::atomic<int>& sleepers) {
        if (spinUntil(ready)) return;
        std::unique_lock<std::mutex> lock(sleepMutex_);
        sleepers.fetch_add(1);
        wake.wait(lock, ready);
        sleepers.fetch_sub(1);
        runQueueShare.startOver(Clock::now());
    }

    void wakeIfSleeping(std::condition_variable& wake, std::atomic<int>& sleepers) {
        if (sleepers.load() == 0) return;
        { std::lock_guard<std::mutex> lock(sleepMutex_); }   // a sleeper is now inside wait()
        wake.notify_all();
    }

    std::vector<std::thread> workers_;
    std::mutex submit_;                      // one loop at a time; another caller runs its own alone
    // The current loop.
    const FunctionRef<void(int64_t)>* task_ = nullptr;
    int64_t count_ = 0;
    std::atomic<int64_t> next_{0};
    std::atomic<int> inside_{kClosed};
    std::atomic<uint64_t> generation_{0};
    std::exception_ptr error_;
    std::mutex errorMutex_;
    std::atomic<bool> stopping_{false};
    // Waiting.
    std::atomic<int64_t> sharedUntil_{0};    // Clock ticks; until then every wait sleeps at once
    std::mutex sleepMutex_;
    std::condition_variable workAvailable_, allLeft_;
    std::atomic<int> sleepingWorkers_{0}, sleepingCallers_{0};
    // Starting threads (start()).
    std::mutex startedMutex_;
    std::condition_variable threadStarted_;
    int started_ = 0;
};

int hardwareThreads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// Made on first use and never destroyed: its threads sleep through the program's exit.
Pool& pool() {
    static Pool* const instance = new Pool(hardwareThreads());
    return *instance;
}

} // namespace

void setPoolThreads(int threads) {
    pool().resize(threads > 0 ? threads : hardwareThreads());
}

int poolThreads() { return pool().threads(); }

void forEachTaken(int64_t count, FunctionRef<void(int64_t)> task) {
    if (count > 0) pool().run(count, task);
}

void parallelFor(int64_t begin, int64_t end, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
    const int64_t n = end - begin;
    if (n <= 0) return;
    grain = std::max<int64_t>(1, grain);
    // Up to four pieces per thread, so that a thread the machine holds back leaves its share to
    // the others.
    const int64_t pieces = std::min(n / grain, int64_t(4) * poolThreads());   // each at least a grain
    if (pieces <= 1) {
        fn(begin, end);
        return;
    }
    const int64_t length = (n + pieces - 1) / pieces;
    forEachTaken((n + length - 1) / length, [&](int64_t p) { fn(begin + p * length, std::min(end, begin + (p + 1) * length)); });
}

} // namespace kvsteer
