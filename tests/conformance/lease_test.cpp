// The lease strategies (unique_key, optimistic_version): expiry and takeover, reaping, lost
// locks, fencing; plus unique_key's statement budget.
#include "backend_fixture.hpp"
#include "database/database_impl.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <signal.h>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
using sqlock::mutex;
using test::db;
using test::opts;
using test::row_of;
using test::unique_name;

namespace {

/// After a release: unique_key deletes the row, optimistic_version leaves it free.
bool free_or_gone(const std::string& name) {
    const auto row = row_of(name);
    return !row || row->owner.empty();
}

/// A lease held by someone else is taken over only after the waiter saw it unchanged for the
/// holder's TTL on its own clock (no clock decides it alone), so the tests of what happens
/// after a takeover give the first holder a short TTL and let the second one wait for it.
constexpr auto short_ttl = 300ms;

/// A reap that waits for never-released leases to prove abandoned (their TTL).
sqlock::reap_options settled() {
    sqlock::reap_options o;
    o.settle = 10s;
    return o;
}

/// Hands the held lease row of `name` to `owner` (with `token`, if given), as an acquire of
/// that owner whose reply was lost would have left it (test-only SQL: trusted literals).
void give_row_to(const std::string& name, const std::string& owner,
                 std::optional<std::int64_t> token = std::nullopt) {
    REQUIRE(name.find('\'') == std::string::npos);
    REQUIRE(owner.find('\'') == std::string::npos);
    const auto q = db().backend() == sqlock::backend_kind::mysql ? "`" : "\"";
    const auto table = q + db().table_prefix() + "locks" + q;
    test::exec_sql(db(), "UPDATE " + table + " SET owner = '" + owner + "'" +
                             (token ? ", token = " + std::to_string(*token) : "") +
                             " WHERE name = '" + name + "'");
}

} // namespace

TEST_SUITE("lease") {

    TEST_CASE("the lease row shows the holder while held and none after release") {
        const auto name = unique_name("basic-row");
        mutex a(db(), name, opts());
        a.lock();
        const auto row = row_of(name);
        REQUIRE(row);
        CHECK(row->owner == a.owner_id());
        CHECK(row->token == a.token());
        CHECK(row->strategy == sqlock::to_string(test::strategy()));
        CHECK(row->expires_in > 20s);
        a.unlock();
        CHECK(free_or_gone(name));
    }

    TEST_CASE("tokens strictly increase across grants, also after the row is deleted") {
        const auto name = unique_name("tokens");
        mutex a(db(), name, opts(short_ttl));
        mutex b(db(), name, opts(short_ttl));
        // Row re-created by a takeover after expiry and after reaping: still increasing.
        a.lock();
        const auto t1 = a.token();
        REQUIRE(b.try_lock_for(10s)); // a's lease dropped once b saw it unchanged for its TTL
        const auto t2 = b.token();
        CHECK(t2 > t1);
        test::backdate(db(), name, 10s);
        CHECK(db().reap(settled()).deleted >= 1);
        CHECK_FALSE(row_of(name)); // deleted...
        a.unlock();                // (lost: must not throw)
        CHECK(a.try_lock());       // ...and re-created by a new grant
        CHECK(a.token() > t2);
        a.unlock();
        b.unlock();
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
        mutex a(db(), name, opts(short_ttl));
        mutex b(db(), name, opts());
        a.lock();
        const auto a_token = a.token();
        REQUIRE(b.try_lock_for(10s)); // a's lease ran out and b took it over
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

    TEST_CASE("a grant whose reply was lost is adopted by the next attempt with a fresh lease") {
        // A failover can lose an acquire's reply after its commit replicated, and the read-back
        // fail too (the new primary not up yet): the next attempt of the same mutex finds the
        // row owned by itself, with a token newer than its last grant. Reproduced by handing a
        // held row to the mutex's owner id and backdating it, as that grant would have left it.
        const auto name = unique_name("lost-reply");
        const auto ttl = 20s;
        mutex m(db(), name, opts(ttl));
        mutex other(db(), name, opts(ttl));
        {
            mutex grantor(db(), name, opts(ttl));
            grantor.lock();
            give_row_to(name, m.owner_id());
            grantor.unlock(); // lost: the row is not its own any more
        }
        test::backdate(db(), name, 15s); // the lost grant's lease is old, nearly spent
        const auto lost = row_of(name);
        REQUIRE(lost);
        CHECK_FALSE(other.try_lock()); // anyone else: held, however old it looks

        const auto asked = std::chrono::steady_clock::now();
        REQUIRE(m.try_lock_for(ttl / 4)); // not a wait for the lease to run out
        CHECK(std::chrono::steady_clock::now() - asked < 2s);
        CHECK(m.token() == lost->token);
        CHECK(m.owns_lock());
        const auto adopted = row_of(name);
        REQUIRE(adopted);
        CHECK(adopted->owner == m.owner_id());
        CHECK(adopted->token == lost->token);
        CHECK(adopted->expires_in > ttl - 3s); // renewed at once, not the old lease
        CHECK_FALSE(other.try_lock());
        m.unlock();
        CHECK(m.last_error().empty());
        CHECK(free_or_gone(name));
        REQUIRE(other.try_lock());
        CHECK(other.token() > lost->token);
        other.unlock();
    }

    TEST_CASE("a row of ours no newer than the mutex's last grant is not adopted") {
        // An earlier grant whose release did not get through is not this lock()'s outcome: it
        // is left to expire like anyone's (re-adopting it would hand a token out twice).
        const auto name = unique_name("old-own-row");
        mutex m(db(), name, opts(20s));
        m.lock();
        const auto old_token = m.token();
        m.unlock();
        mutex grantor(db(), name, opts(20s));
        grantor.lock();
        give_row_to(name, m.owner_id(), old_token);
        CHECK_FALSE(m.try_lock());
        CHECK_FALSE(m.owns_lock());
        grantor.unlock(); // lost: reported, no throw
    }

    TEST_CASE("unlock after the lease was taken over reports lost and does not throw") {
        const auto name = unique_name("lost-unlock");
        mutex a(db(), name, opts(short_ttl));
        mutex b(db(), name, opts());
        a.lock();
        REQUIRE(b.try_lock_for(10s));
        static_assert(noexcept(a.unlock()));
        a.unlock();
        CHECK_FALSE(a.owns_lock());
        CHECK(a.last_error().find("lost") != std::string::npos);
        REQUIRE(row_of(name));
        CHECK(row_of(name)->owner == b.owner_id()); // b's lease survived a's release attempt
        b.unlock();
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

    TEST_CASE("a lease that looks expired by the database clock is not taken while unchanged "
              "for less than its TTL") {
        // What a forward step of the database server's clock does to a live lease: backdating
        // its row. The waiter must not take it, the holder's lease stays good, and its renewal
        // and re-entry still work (no server clock refuses them).
        const auto name = unique_name("stepped");
        mutex a(db(), name, opts(3s));
        mutex b(db(), name, opts());
        a.lock();
        test::backdate(db(), name, 60s);
        const auto start = std::chrono::steady_clock::now();
        CHECK_FALSE(b.try_lock_for(1s)); // watched for 1 s of a's 3 s: not yet
        CHECK(std::chrono::steady_clock::now() - start >= 1s);
        CHECK(a.owns_lock());
        CHECK(a.try_lock()); // re-entry extends the lease (and moves it on for any watcher)
        CHECK(a.hold_count() == 2);
        a.unlock();
        a.unlock();
        CHECK(a.last_error().empty());
        CHECK(a.last_loss() == sqlock::loss_reason::none);
    }

    TEST_CASE("a renewed lease is never taken over, however long a waiter watches it") {
        const auto name = unique_name("renewed");
        auto o = opts(1s); // renewed every 1/3 s: room for a slow commit on a loaded host
        o.renew = true;
        mutex a(db(), name, o);
        mutex b(db(), name, opts());
        a.lock();
        test::backdate(db(), name, 60s); // a clock step, once: the renewals move the lease on
        CHECK_FALSE(b.try_lock_for(3s));
        CHECK(a.owns_lock());
        a.unlock();
        CHECK(a.last_loss() == sqlock::loss_reason::none);
        CHECK(b.try_lock());
        b.unlock();
    }

    TEST_CASE("an abandoned lease is taken over after the waiter saw it unchanged for its TTL") {
        const auto name = unique_name("abandoned");
        mutex a(db(), name, opts(short_ttl));
        mutex b(db(), name, opts());
        a.lock(); // then "crashes": never released, never renewed
        const auto a_token = a.token();
        const auto start = std::chrono::steady_clock::now();
        REQUIRE(b.try_lock_for(10s));
        CHECK(std::chrono::steady_clock::now() - start >= short_ttl);
        CHECK(b.token() > a_token);
        CHECK_FALSE(a.owns_lock()); // its local lease ended before b's grant
        b.unlock();
    }

    TEST_CASE("the reaper deletes a never-released lease only once it saw it unchanged for its "
              "TTL") {
        auto fresh = test::fresh_database("settle");
        mutex live(fresh, "live", opts(30s));
        mutex dead(fresh, "dead", opts(short_ttl));
        live.lock();
        dead.lock();
        test::backdate(fresh, "live", 60s); // both look long expired by the database clock
        test::backdate(fresh, "dead", 60s);
        sqlock::reap_options quick;
        quick.settle = 1s;
        const auto r = fresh.reap(quick);
        CHECK(r.deleted == 1);  // "dead": unchanged for its 300 ms TTL within the second
        CHECK(r.deferred == 1); // "live": its 30 s TTL has not passed
        REQUIRE(fresh.list().size() == 1);
        CHECK(fresh.list()[0].name == "live");
        CHECK(live.owns_lock());
        live.unlock();
        CHECK(live.last_loss() == sqlock::loss_reason::none);
        dead.unlock(); // lost: reaped
    }

    TEST_CASE("re-entry after the row was reaped fails and leaves no live lease behind") {
        const auto name = unique_name("reaped-reentry");
        mutex a(db(), name, opts(short_ttl));
        mutex b(db(), name, opts());
        a.lock();
        test::backdate(db(), name, 5s);
        REQUIRE(db().reap(settled()).deleted >= 1);
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

} // TEST_SUITE lease

TEST_SUITE("lease_sqlite") {

    TEST_CASE("SQLite: a release is not synced, and the connection's next commits are durable") {
        REQUIRE(test::backend().kind == sqlock::backend_kind::sqlite);
        sqlock::connect_options one;
        one.pool_size = 1; // the release and the check below share the one pooled connection
        auto d = sqlock::connect(test::backend().url, one);
        mutex m(d, unique_name("nosync"), opts());
        m.lock();
        m.unlock();
        CHECK(m.last_error().empty());
        auto s = sqlock::detail::impl_of(d).checkout();
        CHECK(s->query("PRAGMA synchronous").rows.at(0).at(0) == "2"); // FULL again
    }

    TEST_CASE("SQLite: a release refused as busy is tried again, not left to expire") {
        // A crowd of writers (a fleet on one file) can hold the write lock past the busy
        // timeout; the release then did not run, and a lease left behind would keep the next
        // holder waiting for a TTL.
        REQUIRE(test::backend().kind == sqlock::backend_kind::sqlite);
        sqlock::connect_options quick;
        quick.connect_timeout = 300ms; // SQLite's busy timeout
        auto d = sqlock::connect(test::backend().url, quick);
        const auto name = unique_name("busy-release");
        mutex m(d, name, opts());
        m.lock();
        auto blocker = sqlock::detail::impl_of(db()).checkout();
        blocker->begin(); // BEGIN IMMEDIATE: every other writer waits
        const auto sent = sqlock::detail::impl_of(d).statements_sent();
        std::jthread lift([&] {
            // Lifted once a second release was sent, i.e. the first was refused as busy (the
            // write lock outlasted its busy timeout); without a retry it never comes.
            test::eventually(
                [&] { return sqlock::detail::impl_of(d).statements_sent() >= sent + 2; }, 3s);
            blocker->rollback();
        });
        m.unlock();
        lift.join();
        CHECK(m.last_error().empty());
        const auto row = test::row_of(name); // released (optimistic_version keeps a free row)
        CHECK((!row || row->owner.empty()));
    }

} // TEST_SUITE

TEST_SUITE("unique_key") {

    TEST_CASE(
        "statement budget: uncontended acquire, re-entry and release are one statement each") {
        const auto name = unique_name("budget");
        mutex a(db(), name, opts());
        const auto& impl = sqlock::detail::impl_of(db());
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

} // TEST_SUITE

TEST_SUITE("lease") {

    TEST_CASE("fencing: the first holder's write in its own transaction fails once taken over") {
        auto& d = db();
        const auto name = unique_name("fenced");
        const bool mysql = d.backend() == sqlock::backend_kind::mysql;
        auto user =
            sqlock::detail::impl_of(d).checkout(); // stands for the application's own connection
        user->query(std::string("CREATE TABLE IF NOT EXISTS fenced_data (id BIGINT PRIMARY KEY, "
                                "v BIGINT NOT NULL)") +
                    (mysql ? " ENGINE = InnoDB" : ""));
        const auto id = std::to_string(std::hash<std::string>{}(name) % 1'000'000'000);
        user->query("INSERT INTO fenced_data (id, v) VALUES (" + id + ", 0)");
        auto fenced_write = [&](std::int64_t token) {
            user->begin();
            const auto r =
                user->query("UPDATE fenced_data SET v = v + 1 WHERE id = " + id + " AND " +
                            d.fencing_condition("'" + name + "'", std::to_string(token)));
            user->commit();
            return r.affected_rows;
        };

        mutex first(d, name, opts(short_ttl));
        mutex second(d, name, opts());
        first.lock();
        const auto t1 = first.token();
        CHECK(fenced_write(t1) == 1); // held: the write goes through
        // Looking expired by the database's clock (what a forward step of it does) is not being
        // taken over: the holder's fenced writes still go through (schema 7).
        test::backdate(d, name, 60s);
        CHECK(fenced_write(t1) == 1);

        // The first holder "pauses" past its TTL, and the second takes over.
        REQUIRE(second.try_lock_for(10s));
        const auto t2 = second.token();
        CHECK(t2 > t1);

        CHECK(fenced_write(t1) == 0); // the stale holder's write is rejected
        CHECK(fenced_write(t2) == 1); // the new holder's goes through
        first.unlock();               // its release reports the loss, without throwing
        CHECK(first.last_error().find("lost") != std::string::npos);
        second.unlock();
        CHECK(fenced_write(t2) == 0); // released: nobody holds t2 any more
        CHECK(user->query("SELECT v FROM fenced_data WHERE id = " + id).rows.at(0).at(0) == "3");
    }

} // TEST_SUITE

TEST_SUITE("optimistic_version") {

    TEST_CASE("processes creating the same missing row at once: one holder, no errors") {
        const auto name = unique_name("race");
        const auto dir = test::backend().scratch_dir + "/" + name;
        std::filesystem::create_directories(dir);
        const auto start = dir + "/start";
        std::vector<pid_t> racers;
        for (int i = 0; i < 6; ++i) {
            racers.push_back(test::spawn({test::contender_path(), "race", test::backend().url, name,
                                          "optimistic_version", start},
                                         {}, dir + "/out" + std::to_string(i)));
        }
        // All racers connected and waiting (under ASan on a loaded host a racer that started
        // late tried after the winner had let go, and won too): go.
        REQUIRE(test::eventually(
            [&] {
                int ready = 0;
                for (const auto& e : std::filesystem::directory_iterator(dir))
                    ready += e.path().filename().string().starts_with("start.ready.") ? 1 : 0;
                return ready == 6;
            },
            60s));
        std::ofstream(start).put('\n');
        int won = 0;
        for (std::size_t i = 0; i < racers.size(); ++i) {
            CHECK(test::wait_exit(racers[i]) == 0); // no error surfaced to any racer
            won += test::read_file(dir + "/out" + std::to_string(i)).starts_with("won") ? 1 : 0;
        }
        CHECK(won == 1);
    }

} // TEST_SUITE

TEST_SUITE("lease_postgresql") { // MariaDB and SQLite waiters poll (documented)

    TEST_CASE(
        "PostgreSQL: a release wakes a waiting process at once (LISTEN/NOTIFY, not polling)") {
        REQUIRE(test::backend().kind == sqlock::backend_kind::postgresql);
        const auto name = unique_name("notify");
        const auto dir = test::backend().scratch_dir + "/" + name;
        std::filesystem::create_directories(dir);
        mutex holder(db(), name, opts());
        holder.lock();
        // The waiter polls only every 5 s: a fast handoff can only come from the notification.
        const pid_t waiter =
            test::spawn({test::contender_path(), "hold", test::backend().url, name, "30000",
                         std::string(sqlock::to_string(test::strategy())), dir},
                        {"SQLOCK_CONTENDER_RETRY_MS=5000"});
        auto user = sqlock::detail::impl_of(db()).checkout();
        REQUIRE(test::eventually(
            [&] {
                const auto r = user->query("SELECT count(*) FROM pg_stat_activity WHERE query = "
                                           "'LISTEN \"" +
                                           db().table_prefix() + "release\"'");
                return !r.rows.empty() && r.rows[0].at(0).value_or("0") != "0";
            },
            10s));
        const auto released = std::chrono::steady_clock::now();
        holder.unlock();
        REQUIRE(test::eventually([&] { return std::filesystem::exists(dir + "/acted"); }, 4s));
        std::istringstream acted(test::read_file(dir + "/acted"));
        std::int64_t first = 0;
        acted >> first;
        const auto gap = std::chrono::nanoseconds(first) - released.time_since_epoch();
        CHECK(gap < 1s); // polling alone would take at least 5 s
        kill(waiter, SIGTERM);
        test::wait_exit(waiter);
    }

} // TEST_SUITE
