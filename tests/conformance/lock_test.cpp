// Lock semantics every strategy keeps on every backend (DESIGN.md §3).
#include "backend_fixture.hpp"
#include "core/database_impl.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using sqlock::mutex;
using test::db;
using test::row_of;
using test::unique_name;

namespace {

sqlock::mutex_options opts(std::chrono::milliseconds ttl = 30s) {
    sqlock::mutex_options o;
    o.strategy = sqlock::strategy::unique_key;
    o.ttl = ttl;
    return o;
}

} // namespace

TEST_CASE("lock, try_lock and unlock exclude another owner") {
    const auto name = unique_name("basic");
    mutex a(db(), name, opts());
    mutex b(db(), name, opts());
    CHECK_FALSE(a.owns_lock());
    a.lock();
    CHECK(a.owns_lock());
    CHECK(a.hold_count() == 1);
    CHECK_FALSE(b.try_lock());
    CHECK_FALSE(b.owns_lock());
    const auto row = row_of(name);
    REQUIRE(row);
    CHECK(row->owner == a.owner_id());
    CHECK(row->token == a.token());
    CHECK(row->strategy == "unique_key");
    CHECK(row->expires_in > 20s);
    a.unlock();
    CHECK_FALSE(a.owns_lock());
    CHECK_FALSE(row_of(name)); // released: the row is gone
    CHECK(b.try_lock());
    b.unlock();
    CHECK(a.last_error().empty());
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

TEST_CASE("tokens strictly increase across grants, also after the row is deleted") {
    const auto name = unique_name("tokens");
    mutex a(db(), name, opts());
    mutex b(db(), name, opts());
    std::int64_t last = 0;
    for (int i = 0; i < 5; ++i) {
        auto& m = (i % 2) ? a : b;
        m.lock();
        CHECK(m.token() > last);
        last = m.token();
        m.unlock(); // deletes the row
        CHECK_FALSE(row_of(name));
    }
    // Row re-created by a takeover after expiry and after reaping: still increasing.
    a.lock();
    const auto t1 = a.token();
    test::backdate(db(), name, 10s);
    CHECK(b.try_lock());
    CHECK(b.token() > t1);
    test::backdate(db(), name, 10s);
    CHECK(db().reap() >= 1);
    CHECK_FALSE(row_of(name));
    a.unlock(); // lost: must not throw
    CHECK(a.try_lock());
    CHECK(a.token() > t1);
    a.unlock();
}

TEST_CASE("re-entrant lock counts holds in the row") {
    const auto name = unique_name("reentrant");
    mutex a(db(), name, opts());
    mutex other(db(), name, opts());
    a.lock();
    const auto token = a.token();
    CHECK(a.try_lock());
    CHECK(a.try_lock_for(100ms));
    CHECK(a.hold_count() == 3);
    CHECK(a.token() == token); // re-entry is the same grant
    REQUIRE(row_of(name));
    CHECK(row_of(name)->hold_count == 3);
    a.unlock();
    a.unlock();
    CHECK(a.owns_lock());
    CHECK(row_of(name)->hold_count == 1);
    CHECK_FALSE(other.try_lock());
    a.unlock();
    CHECK_FALSE(a.owns_lock());
    CHECK(other.try_lock());
    other.unlock();
}

TEST_CASE("a non-owner cannot release; a lost lock is reported, never resurrected") {
    const auto name = unique_name("lost");
    mutex a(db(), name, opts());
    mutex b(db(), name, opts());
    a.lock();
    const auto a_token = a.token();
    test::backdate(db(), name, 5s); // a's lease ran out
    REQUIRE(b.try_lock());          // ... and b took it over
    CHECK(b.token() > a_token);

    // a's re-entrant lock must fail: its grant is gone.
    try {
        a.try_lock();
        FAIL("re-entry of a lost lock succeeded");
    } catch (const sqlock::error& e) {
        CHECK(e.code() == sqlock::errc::lock_lost);
        CHECK(std::string(e.what()).find(name) != std::string::npos);
    }
    CHECK_FALSE(a.owns_lock());
    a.unlock(); // not held any more: no throw, recorded
    CHECK_FALSE(a.last_error().empty());

    // b still holds it, untouched by a.
    const auto row = row_of(name);
    REQUIRE(row);
    CHECK(row->owner == b.owner_id());
    b.unlock();
}

TEST_CASE("unlock after the lease was taken over reports lost and does not throw") {
    const auto name = unique_name("lost-unlock");
    mutex a(db(), name, opts());
    mutex b(db(), name, opts());
    a.lock();
    test::backdate(db(), name, 5s);
    REQUIRE(b.try_lock());
    static_assert(noexcept(a.unlock()));
    a.unlock();
    CHECK_FALSE(a.owns_lock());
    CHECK(a.last_error().find("lost") != std::string::npos);
    REQUIRE(row_of(name));
    CHECK(row_of(name)->owner == b.owner_id()); // b's lease survived a's release attempt
    b.unlock();
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
    std::thread t([&] {
        mutex waiter(db(), name, opts());
        waiting = true;
        waiter.lock();
        acquired_at_ns = std::chrono::steady_clock::now().time_since_epoch().count();
        waiter.unlock();
    });
    REQUIRE(test::eventually([&] { return waiting.load(); }, 5s));
    // Let the waiter retry a few times, so its backoff has grown, before releasing.
    const auto attempts_before = db().impl()->statements_sent();
    REQUIRE(test::eventually(
        [&] { return db().impl()->statements_sent() >= attempts_before + 4; }, 5s));
    CHECK(acquired_at_ns.load() == 0); // still waiting while held
    const auto released = std::chrono::steady_clock::now();
    holder.unlock();
    t.join();
    const auto gap = std::chrono::nanoseconds(acquired_at_ns.load()) - released.time_since_epoch();
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

TEST_CASE("a crashed holder's lease frees itself at expiry, with no reaper") {
    const auto name = unique_name("expiry");
    mutex a(db(), name, opts(1s));
    mutex b(db(), name, opts());
    a.lock();
    // Simulate the crash by forgetting a (no release); wait on the condition, not a sleep.
    const auto start = std::chrono::steady_clock::now();
    CHECK(b.try_lock_for(5s));
    CHECK(std::chrono::steady_clock::now() - start >= 500ms);
    b.unlock();
}

TEST_CASE("re-entry after the row was reaped fails and leaves no live lease behind") {
    const auto name = unique_name("reaped-reentry");
    mutex a(db(), name, opts());
    mutex b(db(), name, opts());
    a.lock();
    test::backdate(db(), name, 5s);
    REQUIRE(db().reap() >= 1);
    CHECK_FALSE(row_of(name));
    try {
        a.lock();
        FAIL("re-entry resurrected a reaped lock");
    } catch (const sqlock::error& e) {
        CHECK(e.code() == sqlock::errc::lock_lost);
    }
    CHECK_FALSE(a.owns_lock());
    CHECK(b.try_lock()); // nothing of a's blocks b
    b.unlock();
}

TEST_CASE("statement budget: uncontended acquire, re-entry and release are one statement each") {
    const auto name = unique_name("budget");
    mutex a(db(), name, opts());
    const auto& impl = *db().impl();
    auto sent = [&] {
        return impl.statements_sent();
    };
    // Warm the pooled connection's prepared statements first (a per-connection, one-time cost).
    a.lock();
    a.unlock();

    auto before = sent();
    a.lock();
    CHECK(sent() - before == 1);
    before = sent();
    a.lock(); // re-entry
    CHECK(sent() - before == 1);
    before = sent();
    a.unlock(); // decrement
    CHECK(sent() - before == 1);
    before = sent();
    a.unlock(); // delete
    CHECK(sent() - before == 1);
}
