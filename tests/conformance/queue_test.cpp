// unique_key on PostgreSQL: waiters queue in the server (a session-level advisory lock per
// name, taken on a pinned "seat" session), so a release hands the lock to the next waiter
// in arrival order. The queue only orders waiters: these tests also show that it never keeps
// a lock from being taken (a stuck queue head, a waiter that gives up) and that losing a seat
// loses nothing. MariaDB and SQLite waiters poll instead (README): this suite runs on
// PostgreSQL only (tests/CMakeLists.txt).
#include "backend_fixture.hpp"
#include "core/database_impl.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <future>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using sqlock::mutex;
using test::db;
using test::opts;
using test::unique_name;

namespace {

bool server_queues() {
    return test::backend().kind == sqlock::backend_kind::postgresql;
}

/// The queue lock key of `name` as sql/postgres/uk_queue_enter.sql computes it.
std::string queue_key(const std::string& name) {
    return "hashtext('" + db().table_prefix() + "release/" + name + "')";
}

/// The queue lock of `name` in pg_locks.
std::string queue_lock_condition(const std::string& name) {
    return "locktype = 'advisory' AND classid = 1936483696 AND objid = " + queue_key(name) +
           "::oid AND objsubid = 2";
}

/// Sessions holding or waiting for `name`'s queue lock.
int queue_entries(const std::string& name) {
    auto s = db().impl()->checkout();
    const auto r = s->query("SELECT count(*) FROM pg_locks WHERE " + queue_lock_condition(name));
    return std::stoi(r.rows.at(0).at(0).value_or("0"));
}

/// The server session that holds `name`'s queue lock (0 if none).
std::int64_t queue_holder(const std::string& name) {
    auto s = db().impl()->checkout();
    const auto r =
        s->query("SELECT pid FROM pg_locks WHERE " + queue_lock_condition(name) + " AND granted");
    return r.rows.empty() ? 0 : std::stoll(r.rows[0].at(0).value_or("0"));
}

} // namespace

TEST_SUITE("unique_key_postgresql") {

    TEST_CASE("PostgreSQL: waiters queue in the server and get the lock in arrival order") {
        REQUIRE(server_queues());
        const auto name = unique_name("fifo");
        mutex holder(db(), name, opts());
        holder.lock();
        // Each waiter has its own database handle, as separate processes would: threads of one
        // handle queue locally first (the turnstile) and reach the server one at a time.
        std::vector<sqlock::database> handles;
        for (int i = 0; i < 3; ++i)
            handles.push_back(sqlock::connect(test::backend().url));
        std::mutex order_mutex;
        std::vector<int> order;
        std::vector<std::int64_t> tokens;
        std::vector<std::jthread> waiters;
        for (int i = 0; i < 3; ++i) {
            waiters.emplace_back([&, i] {
                mutex w(handles[static_cast<std::size_t>(i)], name, opts());
                if (!w.try_lock_for(30s))
                    return;
                {
                    std::lock_guard lock(order_mutex);
                    order.push_back(i);
                    tokens.push_back(w.token());
                }
                w.unlock();
            });
            // The first waiter holds the queue lock (and waits for the lease), the others
            // wait for the queue lock behind it.
            REQUIRE(test::eventually([&] { return queue_entries(name) == i + 1; }, 10s));
        }
        holder.unlock();
        for (auto& t : waiters)
            t.join();
        CHECK(order == std::vector<int>{0, 1, 2});
        REQUIRE(tokens.size() == 3);
        CHECK(tokens[0] < tokens[1]);
        CHECK(tokens[1] < tokens[2]);
        CHECK(queue_entries(name) == 0); // the last release left the queue
        CHECK_FALSE(test::row_of(name));
    }

    TEST_CASE("PostgreSQL: a holder that asks again at once goes behind the waiting process") {
        REQUIRE(server_queues());
        const auto name = unique_name("requeue");
        auto first_handle = sqlock::connect(test::backend().url);
        auto second_handle = sqlock::connect(test::backend().url);
        mutex holder(db(), name, opts());
        holder.lock();
        std::mutex order_mutex;
        std::vector<std::string> order;
        auto record = [&](const char* who) {
            std::lock_guard lock(order_mutex);
            order.emplace_back(who);
        };
        std::promise<void> first_holds, second_queued;
        std::jthread first([&] {
            mutex m(first_handle, name, opts());
            if (!m.try_lock_for(30s)) // waits for `holder`, at the head of the queue
                return;
            record("first");
            first_holds.set_value();
            second_queued.get_future().wait_for(30s);
            m.unlock();
            if (!m.try_lock_for(30s)) // at once: the second process is already waiting
                return;
            record("first again");
            m.unlock();
        });
        REQUIRE(test::eventually([&] { return queue_entries(name) == 1; }, 10s));
        holder.unlock();
        REQUIRE(first_holds.get_future().wait_for(30s) == std::future_status::ready);
        std::jthread second([&] {
            mutex m(second_handle, name, opts());
            if (!m.try_lock_for(30s))
                return;
            record("second");
            m.unlock();
        });
        REQUIRE(test::eventually([&] { return queue_entries(name) == 2; }, 10s));
        second_queued.set_value();
        first.join();
        second.join();
        CHECK(order == std::vector<std::string>{"first", "second", "first again"});
    }

    TEST_CASE("PostgreSQL: a waiter that gives up leaves the server queue") {
        REQUIRE(server_queues());
        const auto name = unique_name("giveup");
        mutex holder(db(), name, opts());
        holder.lock();
        auto other = sqlock::connect(test::backend().url);
        mutex waiter(other, name, opts());
        CHECK_FALSE(waiter.try_lock_for(300ms));
        CHECK(queue_entries(name) == 0);
        holder.unlock();
        CHECK(waiter.try_lock());
        waiter.unlock();
    }

    TEST_CASE("PostgreSQL: a stuck queue head cannot keep an expired lease from being taken") {
        REQUIRE(server_queues());
        const auto name = unique_name("stuckhead");
        mutex holder(db(), name, opts(1s)); // then "crashes": never renewed, never released
        holder.lock();
        // A session that took the queue lock and then stopped (a paused process): it never
        // gives the queue up.
        auto stuck = db().impl()->checkout();
        stuck->query("SELECT pg_advisory_lock(1936483696, " + queue_key(name) + ")");
        auto other = sqlock::connect(test::backend().url);
        std::atomic<bool> got{false};
        std::chrono::steady_clock::time_point got_at{};
        std::jthread waiter([&] {
            mutex w(other, name, opts());
            got = w.try_lock_for(30s);
            got_at = std::chrono::steady_clock::now();
            if (got)
                w.unlock();
        });
        REQUIRE(test::eventually([&] { return queue_entries(name) == 2; }, 10s));
        const auto queued_at = std::chrono::steady_clock::now();
        waiter.join();
        CHECK(got.load());
        // Each wait in the queue lasts at most 1 s; then the waiter tries the lease directly,
        // and drops it once it has seen it unchanged for its 1 s TTL.
        CHECK(got_at - queued_at < 5s);
        holder.unlock(); // taken over meanwhile: reported, never thrown
        CHECK(holder.last_loss() == sqlock::loss_reason::lost);
        stuck->query("SELECT pg_advisory_unlock(1936483696, " + queue_key(name) + ")");
    }

    TEST_CASE("PostgreSQL: a queued holder whose seat session dies keeps its lease") {
        REQUIRE(server_queues());
        const auto name = unique_name("seatdies");
        mutex holder(db(), name, opts());
        holder.lock();
        auto other = sqlock::connect(test::backend().url);
        std::promise<void> granted, seat_killed;
        std::string unlock_error;
        bool owned_after_kill = false;
        std::jthread waiter([&] {
            mutex w(other, name, opts());
            if (!w.try_lock_for(30s)) // through the queue: its seat holds the queue lock
                return;
            granted.set_value();
            seat_killed.get_future().wait_for(30s);
            owned_after_kill = w.owns_lock();
            w.unlock();
            unlock_error = w.last_error();
        });
        REQUIRE(test::eventually([&] { return queue_entries(name) == 1; }, 10s));
        holder.unlock();
        REQUIRE(granted.get_future().wait_for(30s) == std::future_status::ready);
        const auto seat = queue_holder(name);
        REQUIRE(seat != 0);
        test::kill_session(db(), seat);
        REQUIRE(test::eventually([&] { return queue_entries(name) == 0; }, 10s));
        seat_killed.set_value();
        waiter.join();
        CHECK(owned_after_kill); // the lease row is the lock, not the seat
        CHECK(unlock_error.empty());
        CHECK_FALSE(test::row_of(name)); // released through the pool instead
        mutex next(db(), name, opts());
        CHECK(next.try_lock());
        next.unlock();
    }

    TEST_CASE("PostgreSQL: lock tables with different prefixes never share a queue") {
        REQUIRE(server_queues());
        const auto name = unique_name("prefixes");
        sqlock::connect_options other_prefix;
        other_prefix.table_prefix = "q" + unique_name("p").substr(2) + "_";
        auto b = sqlock::connect(test::backend().url, other_prefix);
        b.migrate();
        auto b_waiter_handle = sqlock::connect(test::backend().url, other_prefix);
        // Under the other prefix, a waiter sits at the head of that table's queue for `name`.
        mutex b_holder(b, name, opts());
        b_holder.lock();
        std::jthread b_waiter([&] {
            mutex w(b_waiter_handle, name, opts());
            if (w.try_lock_for(30s))
                w.unlock();
        });
        auto b_queue_entries = [&] {
            auto s = db().impl()->checkout();
            const auto r = s->query(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = "
                "1936483696 AND objid = hashtext('" +
                other_prefix.table_prefix + "release/" + name + "')::oid AND objsubid = 2");
            return std::stoi(r.rows.at(0).at(0).value_or("0"));
        };
        REQUIRE(test::eventually([&] { return b_queue_entries() == 1; }, 10s));
        // Under the default prefix the same name is contended too: its waiter must head its
        // own queue, not wait behind the other table's (each wait there lasts up to 1 s).
        mutex a_holder(db(), name, opts());
        a_holder.lock();
        auto a_waiter_handle = sqlock::connect(test::backend().url);
        std::atomic<bool> a_got{false};
        std::chrono::steady_clock::time_point a_got_at{};
        std::jthread a_waiter([&] {
            mutex w(a_waiter_handle, name, opts());
            a_got = w.try_lock_for(30s);
            a_got_at = std::chrono::steady_clock::now();
            if (a_got)
                w.unlock();
        });
        REQUIRE(test::eventually([&] { return queue_entries(name) == 1; }, 10s));
        const auto released = std::chrono::steady_clock::now();
        a_holder.unlock();
        a_waiter.join();
        CHECK(a_got.load());
        CHECK(a_got_at - released < 500ms);
        b_holder.unlock();
        b_waiter.join();
    }

    TEST_CASE("PostgreSQL: a waiter allowed one connection queues, listens and is granted on it") {
        REQUIRE(server_queues());
        // A role allowed one connection: the server refuses any second one, so the seat, the
        // LISTEN and the attempts must all share the one connect() opened.
        const auto role = "sqlock_one_" + unique_name("conn").substr(5);
        auto admin = db().impl()->checkout();
        admin->query("CREATE ROLE \"" + role + "\" LOGIN PASSWORD 'one' CONNECTION LIMIT 1");
        admin->query("GRANT ALL ON ALL TABLES IN SCHEMA public TO \"" + role + "\"");
        admin->query("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO \"" + role + "\"");
        const auto& url = test::backend().url; // postgresql://user:password@host:port/db
        const auto scheme_end = url.find("://") + 3;
        const auto limited_url =
            url.substr(0, scheme_end) + role + ":one" + url.substr(url.find('@', scheme_end));
        {
            const auto name = unique_name("noseat");
            mutex holder(db(), name, opts());
            holder.lock();
            sqlock::connect_options one;
            one.pool_size = 1;
            auto limited = sqlock::connect(limited_url, one);
            mutex waiter(limited, name, opts());
            // Held throughout: the wait ends as a plain "not granted", not a connection error,
            // and it never tried to open a second connection (each refused login costs the
            // server a backend start and an authentication).
            const auto connects = limited.impl()->connects_attempted();
            bool got = true;
            CHECK_NOTHROW(got = waiter.try_lock_for(800ms));
            CHECK_FALSE(got);
            CHECK(limited.impl()->connects_attempted() == connects);
            std::atomic<bool> granted{false};
            std::jthread t([&] {
                granted = waiter.try_lock_for(20s);
                if (granted)
                    waiter.unlock();
            });
            const auto attempts = limited.impl()->acquire_attempts();
            REQUIRE(test::eventually(
                [&] { return limited.impl()->acquire_attempts() >= attempts + 2; }, 10s));
            holder.unlock();
            t.join();
            CHECK(granted.load());
            CHECK(limited.impl()->connects_attempted() == connects); // held and released on it
        }
        admin->query("DROP OWNED BY \"" + role + "\"");
        admin->query("DROP ROLE \"" + role + "\"");
    }

} // TEST_SUITE
