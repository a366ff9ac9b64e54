// SQLite: lock() calls queue in a side file beside the lock files (src/core/fair_queue.hpp),
// so a releaser that asks again at once goes behind a waiter of another process. Two database
// handles stand in for two processes: each has its own in-process gate and its own open file
// descriptions, which is all the queue sees of a process.
#include "backend_fixture.hpp"

#include <atomic>
#include <chrono>
#include <doctest/doctest.h>
#include <thread>

using namespace std::chrono_literals;
using sqlock::mutex;
using test::opts;
using test::unique_name;

TEST_SUITE("common") {

    TEST_CASE("SQLite: a releaser asking again at once cannot starve a waiter elsewhere") {
        if (test::backend().kind != sqlock::backend_kind::sqlite)
            return; // the server backends queue (or not) in the server: queue_test.cpp
        const auto name = unique_name("fair");
        auto releaser_handle = sqlock::connect(test::backend().url);
        auto waiter_handle = sqlock::connect(test::backend().url);
        std::atomic<int> grants{0};
        std::atomic<bool> waiter_done{false};
        std::jthread releaser([&] {
            mutex m(releaser_handle, name, opts());
            const auto end = std::chrono::steady_clock::now() + 10s;
            while (!waiter_done && std::chrono::steady_clock::now() < end) {
                if (!m.try_lock_for(10s))
                    return;
                ++grants;
                m.unlock(); // and straight back to lock(): no pause
            }
        });
        REQUIRE(test::eventually([&] { return grants.load() >= 20; }, 10s));
        mutex waiter(waiter_handle, name, opts());
        const auto asked = std::chrono::steady_clock::now();
        const bool granted = waiter.try_lock_for(5s);
        const auto waited = std::chrono::steady_clock::now() - asked;
        waiter_done = true;
        REQUIRE(granted);
        waiter.unlock();
        CHECK(waited < 1s); // before the queue: never granted while the releaser ran
    }
}
