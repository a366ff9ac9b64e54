// Lock semantics every strategy keeps on every backend (DESIGN.md §3).
#include "backend_fixture.hpp"
#include "database/database_impl.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using sqlock::mutex;
using test::db;
using test::opts;
using test::row_of;
using test::unique_name;

TEST_SUITE("common") {

    TEST_CASE("lock, try_lock and unlock exclude another owner") {
        const auto name = unique_name("basic");
        mutex a(db(), name, opts());
        mutex b(db(), name, opts());
        CHECK_FALSE(a.owns_lock());
        a.lock();
        CHECK(a.owns_lock());
        CHECK(a.hold_count() == 1);
        CHECK(a.token() > 0);
        CHECK_FALSE(b.try_lock());
        CHECK_FALSE(b.owns_lock());
        a.unlock();
        CHECK_FALSE(a.owns_lock());
        CHECK(b.try_lock());
        CHECK(b.token() > 0);
        b.unlock();
        CHECK(a.last_error().empty());
        CHECK(b.last_error().empty());
    }

    TEST_CASE("re-entrant locking counts holds; the matching unlocks release") {
        const auto name = unique_name("reentrant-common");
        mutex a(db(), name, opts());
        mutex other(db(), name, opts());
        a.lock();
        const auto token = a.token();
        CHECK(a.try_lock());
        CHECK(a.try_lock_for(100ms));
        CHECK(a.hold_count() == 3);
        CHECK(a.token() == token); // re-entry is the same grant
        a.unlock();
        a.unlock();
        CHECK(a.owns_lock());
        CHECK(a.hold_count() == 1);
        CHECK_FALSE(other.try_lock());
        a.unlock();
        CHECK_FALSE(a.owns_lock());
        CHECK(other.try_lock());
        other.unlock();
        CHECK(a.last_error().empty());
    }

    TEST_CASE("tokens strictly increase across grants") {
        const auto name = unique_name("tokens-common");
        mutex a(db(), name, opts());
        mutex b(db(), name, opts());
        std::int64_t last = 0;
        for (int i = 0; i < 6; ++i) {
            auto& m = (i % 2) ? a : b;
            m.lock();
            CHECK(m.token() > last);
            last = m.token();
            m.unlock();
        }
    }

    TEST_CASE("std::unique_lock, std::scoped_lock and std::lock_guard work") {
        const auto n1 = unique_name("std-a");
        const auto n2 = unique_name("std-b");
        mutex a(db(), n1, opts());
        mutex b(db(), n2, opts());
        {
            std::unique_lock lk(a, 2s);
            REQUIRE(lk.owns_lock());
            CHECK(a.token() > 0);
        }
        CHECK_FALSE(a.owns_lock());
        {
            std::scoped_lock both(a, b);
            CHECK(a.owns_lock());
            CHECK(b.owns_lock());
        }
        CHECK_FALSE(a.owns_lock());
        CHECK_FALSE(b.owns_lock());
        {
            std::lock_guard g(b);
            CHECK(b.owns_lock());
        }
        std::unique_lock deferred(a, std::defer_lock);
        CHECK(deferred.try_lock());
    }

    TEST_CASE("try_lock_for on a held lock returns false close to its timeout") {
        const auto name = unique_name("timed");
        mutex holder(db(), name, opts());
        mutex waiter(db(), name, opts());
        holder.lock();
        const auto start = std::chrono::steady_clock::now();
        CHECK_FALSE(waiter.try_lock_for(200ms));
        const auto took = std::chrono::steady_clock::now() - start;
        CHECK(took >= 200ms);
        CHECK(took < 200ms + 150ms);
        const auto start2 = std::chrono::steady_clock::now();
        CHECK_FALSE(waiter.try_lock_until(std::chrono::system_clock::now() + 100ms));
        CHECK(std::chrono::steady_clock::now() - start2 < 100ms + 150ms);
        holder.unlock();
    }

    TEST_CASE("lock() returns soon after the holder releases") {
        const auto name = unique_name("handoff");
        mutex holder(db(), name, opts());
        holder.lock();
        std::atomic<bool> waiting{false};
        std::atomic<std::int64_t> acquired_at_ns{0};
        const auto attempts_before = sqlock::detail::impl_of(db()).acquire_attempts();
        std::thread t([&] {
            mutex waiter(db(), name, opts());
            waiting = true;
            waiter.lock();
            acquired_at_ns = std::chrono::steady_clock::now().time_since_epoch().count();
            waiter.unlock();
        });
        // Let the waiter try (and, when it polls, back off a few times) before releasing. No
        // REQUIRE before join(): the thread must be joined whatever happens.
        const auto attempts = test::strategy() == sqlock::strategy::unique_key ? 4u : 1u;
        CHECK(test::eventually(
            [&] {
                return sqlock::detail::impl_of(db()).acquire_attempts() >=
                       attempts_before + attempts;
            },
            5s));
        CHECK(acquired_at_ns.load() == 0); // still waiting while held
        const auto released = std::chrono::steady_clock::now();
        holder.unlock();
        t.join();
        const auto gap =
            std::chrono::nanoseconds(acquired_at_ns.load()) - released.time_since_epoch();
        // Polling backoff is capped at retry_max (200 ms): the waiter retries within that.
        CHECK(gap < 200ms * 2 + 100ms);
    }

    TEST_CASE("threads with their own mutex objects never overlap") {
        const auto name = unique_name("threads");
        int counter = 0;
        std::atomic<int> inside{0};
        std::atomic<bool> overlap{false};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&] {
                mutex m(db(), name, opts());
                for (int i = 0; i < 15; ++i) {
                    std::lock_guard g(m);
                    if (inside.fetch_add(1) != 0)
                        overlap = true;
                    ++counter; // protected only by the distributed lock
                    inside.fetch_sub(1);
                }
            });
        }
        for (auto& t : threads)
            t.join();
        CHECK_FALSE(overlap.load());
        CHECK(counter == 60);
    }

    TEST_CASE("one mutex object shared by threads: the holder thread owns it, others wait") {
        const auto name = unique_name("shared-object");
        mutex m(db(), name, opts());
        m.lock();
        bool other_got_it = true;
        std::thread t([&] { other_got_it = m.try_lock(); });
        t.join();
        CHECK_FALSE(other_got_it);
        CHECK(m.hold_count() == 1);
        m.unlock();
    }

    TEST_CASE("names compare byte for byte") {
        const auto base = unique_name("Job");
        std::string lower = base;
        lower[0] = 'j';
        mutex a(db(), base, opts());
        mutex b(db(), lower, opts());
        mutex c(db(), lower + " ", opts());
        mutex d(db(), base + "\xc3\xa9", opts()); // é
        CHECK(a.try_lock());
        CHECK(b.try_lock());
        CHECK(c.try_lock());
        CHECK(d.try_lock());
        for (auto* m : {&a, &b, &c, &d})
            m->unlock();
    }

} // TEST_SUITE
