// The pool that runs the split loops (core/ThreadPool.h), with real threads: every index once,
// pieces that tile the range, nested loops on the calling thread, an exception carried back,
// two callers at once, a held-back thread's share taken by the others, and thousands of short
// loops back to back (the waits that spin and then sleep must never miss a wake-up).
#include "Runtime.h"
#include "ThreadPool.h"

#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace kvsteer;

class TestThreadPool : public QObject {
    Q_OBJECT

private slots:
    void everyIndexOnce() {
        for (int threads : {1, 2, 3, 5}) {
            setPoolThreads(threads);
            QCOMPARE(poolThreads(), threads);
            for (int64_t count : {0, 1, 2, 3, 7, 64, 1000}) {
                std::vector<std::atomic<int>> seen(static_cast<size_t>(count));
                forEachTaken(count, [&](int64_t i) { seen[static_cast<size_t>(i)].fetch_add(1); });
                for (int64_t i = 0; i < count; ++i)
                    QVERIFY2(seen[static_cast<size_t>(i)].load() == 1, qPrintable(QString("%1 threads, count %2, index %3").arg(threads).arg(count).arg(i)));
            }
        }
        setPoolThreads(2);
    }

    void piecesTileTheRange() {
        setPoolThreads(3);
        for (int64_t grain : {1, 5, 100}) {
            for (int64_t n : {0, 1, 9, 10, 11, 250, 4096}) {
                std::mutex lock;
                std::vector<std::pair<int64_t, int64_t>> pieces;
                parallelFor(7, 7 + n, grain, [&](int64_t first, int64_t end) {
                    std::lock_guard<std::mutex> hold(lock);
                    pieces.emplace_back(first, end);
                });
                std::sort(pieces.begin(), pieces.end());
                int64_t at = 7;
                for (size_t p = 0; p < pieces.size(); ++p) {
                    QCOMPARE(pieces[p].first, at);
                    QVERIFY(pieces[p].second > pieces[p].first);
                    if (p + 1 < pieces.size()) QVERIFY2(pieces[p].second - pieces[p].first >= grain, "a piece shorter than the grain");
                    at = pieces[p].second;
                }
                QCOMPARE(at, 7 + n);
                if (n < 2 * grain) QVERIFY(pieces.size() <= 1);   // too short to split: one call
            }
        }
        setPoolThreads(2);
    }

    void nestedLoopsRunOnTheirThread() {
        setPoolThreads(2);
        std::atomic<int> wrongThread{0}, inner{0};
        forEachTaken(8, [&](int64_t) {
            const std::thread::id me = std::this_thread::get_id();
            forEachTaken(16, [&](int64_t) {
                inner.fetch_add(1);
                if (std::this_thread::get_id() != me) wrongThread.fetch_add(1);
            });
        });
        QCOMPARE(inner.load(), 8 * 16);
        QCOMPARE(wrongThread.load(), 0);
    }

    void anExceptionComesBack() {
        setPoolThreads(2);
        for (int64_t thrower : {0, 5, 63}) {
            bool caught = false;
            try {
                forEachTaken(64, [&](int64_t i) {
                    if (i == thrower) throw std::runtime_error("piece failed");
                });
            } catch (const std::runtime_error& e) {
                caught = QString(e.what()) == "piece failed";
            }
            QVERIFY(caught);
        }
        std::atomic<int> after{0};   // and the pool still works
        forEachTaken(100, [&](int64_t) { after.fetch_add(1); });
        QCOMPARE(after.load(), 100);
    }

    void aHeldBackThreadsShareIsTaken() {
        // Whoever takes piece 0 waits until every other piece is done: only a pool whose threads
        // take pieces as they come free can finish (a fixed split would wait for ever). The wait
        // gives up after 20 s so that a broken pool fails instead of hanging.
        setPoolThreads(2);
        constexpr int64_t kCount = 40;
        std::atomic<int64_t> done{0};
        bool finished = true;
        forEachTaken(kCount, [&](int64_t i) {
            if (i == 0) {
                const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
                while (done.load() < kCount - 1)
                    if (std::chrono::steady_clock::now() > deadline) {
                        finished = false;
                        break;
                    }
            }
            done.fetch_add(1);
        });
        QVERIFY2(finished, "the other thread did not take the held-back thread's pieces");
        QCOMPARE(done.load(), kCount);
    }

    void twoCallersAtOnce() {
        setPoolThreads(2);
        std::atomic<int64_t> sumA{0}, sumB{0};
        auto loops = [](std::atomic<int64_t>& sum) {
            for (int r = 0; r < 500; ++r) forEachTaken(50, [&](int64_t i) { sum.fetch_add(i); });
        };
        std::thread other([&] { loops(sumB); });
        loops(sumA);
        other.join();
        QCOMPARE(sumA.load(), int64_t(500) * (49 * 50 / 2));
        QCOMPARE(sumB.load(), int64_t(500) * (49 * 50 / 2));
    }

    void shortLoopsBackToBack() {
        // Gaps of 0 and of a few milliseconds between loops: the workers both catch loops while
        // spinning and are woken from sleep.
        setPoolThreads(3);
        int64_t total = 0;
        std::atomic<int64_t> sum{0};
        for (int r = 0; r < 20000; ++r) {
            forEachTaken(4, [&](int64_t i) { sum.fetch_add(i + 1); });
            total += 10;
            if (r % 2000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        QCOMPARE(sum.load(), total);
        setPoolThreads(2);
    }

    void setThreadsOwnsThePool() {
        setThreads(3);
        QCOMPARE(poolThreads(), 3);
        QCOMPARE(currentThreads(), 3);
        setThreads(2);
        QCOMPARE(poolThreads(), 2);
    }
};

QTEST_GUILESS_MAIN(TestThreadPool)
#include "test_thread_pool.moc"
