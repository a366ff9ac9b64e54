// select_for_update specifics: the lock is a transaction on a pinned session (PostgreSQL,
// MariaDB) or a write transaction on a per-name lock file (SQLite).
#include "backend_fixture.hpp"
#include "database/database_impl.hpp"

#include <condition_variable>
#include <doctest/doctest.h>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <signal.h>
#include <sstream>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <vector>
#ifdef SQLOCK_TEST_SQLITE
#include <sqlite3.h>
#endif

using namespace std::chrono_literals;
using sqlock::mutex;
using test::db;
using test::error_of;
using test::opts;
using test::unique_name;

namespace {

bool is_sqlite() {
    return test::backend().kind == sqlock::backend_kind::sqlite;
}

} // namespace

TEST_SUITE("select_for_update") {

    TEST_CASE("what is locked: the name's row (servers) or the name's own lock file (SQLite)") {
        const auto name = unique_name("what");
        mutex a(db(), name, opts());
        a.lock();
        if (is_sqlite()) {
            CHECK(std::filesystem::exists(sqlock::detail::impl_of(db()).lock_file_for(name)));
            CHECK(a.server_session_id() == 0);
        } else {
            const auto row = test::row_of(name); // pre-created, never expires, no holder in it
            REQUIRE(row);
            CHECK(row->strategy == "select_for_update");
            CHECK(row->expires_in > 24h);
            CHECK(a.server_session_id() > 0);
        }
        a.unlock();
    }

    TEST_CASE("holding one name never blocks another") {
        mutex a(db(), unique_name("one"), opts());
        mutex b(db(), unique_name("other"), opts());
        a.lock();
        const auto start = std::chrono::steady_clock::now();
        CHECK(b.try_lock());
        CHECK(std::chrono::steady_clock::now() - start < 1s);
        b.unlock();
        a.unlock();
    }

    TEST_CASE("holding many names never blocks creating and locking the names between them") {
        // Under REPEATABLE READ, InnoDB turns a held row lock into a gap lock when the lock
        // table's page splits at that row: new names sorting just before it could not be
        // created until it was released. Lock sessions run READ COMMITTED, which never
        // inherits such gap locks. Names "P-0", "P-1", "P-10".. interleave, so the inserts of
        // "P-<i>b" below split pages among held rows.
        const auto prefix = unique_name("split");
        const auto name = [&](int i, std::string_view suffix) {
            return prefix + "-" + std::to_string(i) + std::string(suffix);
        };
        constexpr int held_count = 120;
        for (int i = 0; i < held_count; ++i) { // rows first: then the holds are on old rows
            mutex m(db(), name(i, ""), opts());
            m.lock();
            m.unlock();
        }
        std::vector<std::unique_ptr<mutex>> held;
        for (int i = 0; i < held_count; ++i) {
            held.push_back(std::make_unique<mutex>(db(), name(i, ""), opts()));
            REQUIRE(held.back()->try_lock());
        }
        for (int i = 0; i < held_count; ++i) {
            mutex beside(db(), name(i, "b"), opts());
            const auto start = std::chrono::steady_clock::now();
            INFO("name " << name(i, "b"));
            REQUIRE(beside.try_lock_for(5s));
            CHECK(std::chrono::steady_clock::now() - start < 2s);
            beside.unlock();
        }
        for (auto& m : held)
            m->unlock();
    }

    TEST_CASE("killing the holder's session: another owner gets the lock, the holder learns it") {
        if (is_sqlite()) {
            // No server session to kill: the lock is a file lock of this process.
            mutex a(db(), unique_name("nokill"), opts());
            a.lock();
            CHECK(a.server_session_id() == 0);
            a.unlock();
            return;
        }
        const auto name = unique_name("killed");
        mutex a(db(), name, opts());
        mutex b(db(), name, opts());
        a.lock();
        const auto first = a.token();
        test::kill_session(db(), a.server_session_id());
        REQUIRE(b.try_lock_for(10s));
        CHECK(b.token() > first); // the killed holder's transaction rolled back: still increasing
        const auto e = error_of([&] { a.lock(); }); // re-entry proves the session: it is gone
        CHECK(e.code() == sqlock::errc::lock_lost);
        CHECK_FALSE(a.owns_lock());
        a.unlock(); // nothing held any more: no throw
        b.unlock();
        CHECK(b.last_error().empty());
    }

    TEST_CASE("unlock after the session was killed reports the loss and does not throw") {
        const auto name = unique_name("killed-unlock");
        mutex a(db(), name, opts());
        a.lock();
        if (is_sqlite()) {
            // No server session to kill (the OS frees the lock file when the process dies),
            // and the mutex says so rather than naming one.
            CHECK(a.server_session_id() == 0);
            a.unlock();
            CHECK(a.last_error().empty());
            return;
        }
        test::kill_session(db(), a.server_session_id());
        a.unlock();
        CHECK_FALSE(a.owns_lock());
        CHECK(a.last_error().find("lost") != std::string::npos);
        mutex b(db(), name, opts());
        CHECK(b.try_lock_for(5s));
        b.unlock();
    }

    TEST_CASE("a holder paused past its TTL: the server frees the lock; the holder is told first") {
        const auto name = unique_name("sigstop");
        const auto dir = test::backend().scratch_dir + "/" + name;
        std::filesystem::create_directories(dir);
        const pid_t holder = test::spawn({test::contender_path(), "hold", test::backend().url, name,
                                          "1000", "select_for_update", dir});
        // Pause it only once it has acted under the lock: the check below needs one such act.
        REQUIRE(test::eventually([&] { return !test::read_file(dir + "/acted").empty(); }, 10s));
        kill(holder, SIGSTOP);

        mutex waiter(db(), name, opts());
        const bool got = waiter.try_lock_for(is_sqlite() ? 2500ms : 10s);
        const auto got_at = std::chrono::steady_clock::now().time_since_epoch();
        if (is_sqlite()) {
            // Documented limit: no server, so nothing ends a paused holder's file lock.
            CHECK_FALSE(got);
        } else {
            CHECK(got); // idle_in_transaction_session_timeout / idle_transaction_timeout fired
        }
        kill(holder, SIGCONT);
        CHECK(test::wait_exit(holder) == 0);
        CHECK(std::filesystem::exists(dir + "/lost")); // after SIGCONT owns_lock() said false

        // Everything the holder did under the lock happened before the waiter got it.
        std::istringstream acted(test::read_file(dir + "/acted"));
        std::int64_t ns = 0;
        std::int64_t last = 0;
        while (acted >> ns)
            last = ns;
        CHECK(last > 0);
        if (got) {
            CHECK(last < std::chrono::duration_cast<std::chrono::nanoseconds>(got_at).count());
            waiter.unlock();
        }
    }

} // TEST_SUITE

TEST_SUITE("select_for_update") {

    TEST_CASE("operators see who holds a select_for_update lock where the server tells") {
        const auto name = unique_name("visible");
        mutex a(db(), name, opts());
        a.lock();
        const auto row = test::row_of(name);
        switch (test::backend().kind) {
        case sqlock::backend_kind::postgresql:
            // From the holder session's application_name (the owner id, cut at 63 bytes).
            REQUIRE(row);
            CHECK(a.owner_id().starts_with(row->owner));
            CHECK(row->pid == static_cast<std::int64_t>(getpid()));
            break;
        case sqlock::backend_kind::mysql:
            // MariaDB names the session that holds an uncontended row lock only in its InnoDB
            // lock monitor (on in tools/testdb.sh's server; documented): its connection id.
            REQUIRE(row);
            CHECK(row->owner == "connection " + std::to_string(a.server_session_id()));
            CHECK(row->held());
            break;
        case sqlock::backend_kind::sqlite:
            // The lock is the lock file's; the name's row lists it, the file names the holder.
            REQUIRE(row);
            CHECK(row->held());
            CHECK(row->pid == static_cast<std::int64_t>(getpid()));
            break;
        }
        a.unlock();
        if (test::backend().kind == sqlock::backend_kind::postgresql) {
            REQUIRE(test::row_of(name));
            CHECK(test::row_of(name)->owner.empty()); // released: no holder
        }
    }

} // TEST_SUITE

TEST_SUITE("select_for_update") {

    TEST_CASE("PostgreSQL: a killed session is noticed promptly, without renewal") {
        if (test::backend().kind != sqlock::backend_kind::postgresql)
            return; // MariaDB: noticed by the next renewal or operation; SQLite: no session
        const auto name = unique_name("monitor");
        auto options = opts(30s); // no renewal, a long lease: only the monitor can notice
        std::mutex m;
        std::condition_variable cv;
        std::optional<sqlock::lock_lost_event> lost;
        options.on_lost = [&](const sqlock::lock_lost_event& e) {
            std::lock_guard lock(m);
            lost = e;
            cv.notify_all();
        };
        mutex a(db(), name, options);
        a.lock();
        const auto killed = std::chrono::steady_clock::now();
        test::kill_session(db(), a.server_session_id());
        std::unique_lock lock(m);
        REQUIRE(cv.wait_for(lock, 5s, [&] { return lost.has_value(); }));
        CHECK(std::chrono::steady_clock::now() - killed < 1s);
        CHECK(lost->reason == sqlock::loss_reason::lost);
        lock.unlock();
        CHECK_FALSE(a.owns_lock());
        a.unlock();
    }

} // TEST_SUITE

TEST_SUITE("select_for_update") {

    TEST_CASE("force release of a select_for_update lock: PostgreSQL ends the holder's session") {
        const auto name = unique_name("forced-fu");
        mutex a(db(), name, opts());
        a.lock();
        if (test::backend().kind != sqlock::backend_kind::postgresql) {
            // MariaDB cannot say which session holds it; SQLite's lock is the holder process's
            // file lock, which only ending that process releases: both refuse clearly, and
            // nothing changes.
            CHECK(error_of([&] { db().force_release(name, "test"); }).code() ==
                  sqlock::errc::unsupported);
            CHECK(a.owns_lock());
            a.unlock();
            if (test::backend().kind == sqlock::backend_kind::sqlite) // free now: nothing to do
                CHECK_FALSE(db().force_release(name, "test").released);
            return;
        }
        const auto r = db().force_release(name, "test-operator");
        CHECK(r.released);
        CHECK(r.sessions_ended == 1);
        mutex b(db(), name, opts());
        CHECK(b.try_lock_for(5s));
        b.unlock();
        a.unlock(); // its session is gone: recorded, no throw
        CHECK(a.last_loss() != sqlock::loss_reason::none);
    }

} // TEST_SUITE

namespace {

/// One integer from `sql` (a single-row, single-column query) on a pooled session of `database`.
std::int64_t query_int(sqlock::database& database, const std::string& sql) {
    auto s = sqlock::detail::impl_of(database).checkout();
    const auto r = s->query(sql);
    REQUIRE(r.rows.size() == 1);
    return sqlock::detail::column_int(r.rows.front().at(0));
}

} // namespace

TEST_SUITE("select_for_update") {

    TEST_CASE("a crash that sets the token sequence back never repeats a token (DESIGN §8)") {
        // What a crash does, without one: the marker of a recovered server incarnation is gone
        // (PostgreSQL crash recovery empties unlogged tables, a MariaDB restart empties MEMORY
        // tables) and the sequence restarts below tokens already handed out (its last advance
        // was never flushed). Own table prefix: the shared sequence must not go back under the
        // other suites' feet.
        const auto co = test::own_tables("fucrash");
        auto first = sqlock::connect(test::backend().url, co);
        first.migrate();
        const auto name = unique_name("crash");
        std::int64_t before = 0;
        for (int i = 0; i < 3; ++i) {
            mutex m(first, name, opts());
            m.lock();
            CHECK(m.token() > before);
            before = m.token();
            m.unlock();
        }
        const auto& p = co.table_prefix;
        switch (test::backend().kind) {
        case sqlock::backend_kind::postgresql:
            // Every token handed out is covered by the durable high-water mark.
            CHECK(query_int(first, "SELECT value FROM " + p + "token_hwm") >= before);
            test::exec_sql(first, "TRUNCATE " + p + "token_incarnation");
            test::exec_sql(first, "SELECT setval('" + p + "token_seq', 1)");
            break;
        case sqlock::backend_kind::mysql:
            CHECK(query_int(first, "SELECT value FROM " + p + "token_hwm") >= before);
            test::exec_sql(first, "DELETE FROM " + p + "token_incarnation");
            test::exec_sql(first, "ALTER SEQUENCE " + p + "token_seq RESTART WITH 1");
            break;
        case sqlock::backend_kind::sqlite:
            // No mark, no marker: the token is committed (synchronous = FULL) before lock()
            // returns, so the counter already covers it.
            CHECK(query_int(first, "SELECT value FROM " + p + "token_counter") >= before);
            return;
        }
        // The handle that handed out the tokens, and a new process's handle (no mark cached).
        mutex same(first, name, opts());
        same.lock();
        CHECK(same.token() > before);
        const auto after_recovery = same.token();
        same.unlock();
        auto second = sqlock::connect(test::backend().url, co);
        mutex fresh(second, name, opts());
        fresh.lock();
        const auto from_fresh_handle = fresh.token();
        CHECK(from_fresh_handle > after_recovery);
        CHECK(query_int(second, "SELECT value FROM " + p + "token_hwm") >= from_fresh_handle);
        fresh.unlock();
        // A recovered incarnation stays recovered: no further skip.
        mutex again(second, name, opts());
        again.lock();
        CHECK(again.token() > from_fresh_handle);
        CHECK(again.token() < from_fresh_handle + 1000);
        again.unlock();
    }

} // TEST_SUITE

// SQLite only (tests/CMakeLists.txt): a lock file is SQLite's row lock.
TEST_SUITE("select_for_update_sqlite") {

    TEST_CASE("SQLite: one database file named by two paths (a symlink) shares its locks") {
        REQUIRE(test::backend().kind == sqlock::backend_kind::sqlite);
        namespace fs = std::filesystem;
        const fs::path real = fs::path(test::backend().scratch_dir) / "real-dir";
        const fs::path link = fs::path(test::backend().scratch_dir) / "linked-dir";
        fs::create_directories(real);
        fs::remove(link);
        fs::create_directory_symlink(real, link);
        auto direct = sqlock::connect("sqlite://" + (real / "shared.db").string());
        direct.migrate();
        auto through_link = sqlock::connect("sqlite://" + (link / "shared.db").string());
        const auto name = test::unique_name("two-paths");
        mutex a(direct, name, opts());
        mutex b(through_link, name, opts());
        REQUIRE(a.try_lock());
        CHECK_FALSE(b.try_lock()); // the same lock file, whichever path reached the database
        a.unlock();
        CHECK(b.try_lock());
        b.unlock();
    }

    TEST_CASE("SQLite: a release waits out another connection reading the lock file") {
#ifdef SQLOCK_TEST_SQLITE
        REQUIRE(is_sqlite()); // suite select_for_update_sqlite runs on SQLite only
        // The first COMMIT on a new lock file writes its first page, so it needs the file to
        // itself: a reader (another process's BEGIN IMMEDIATE waiting in its busy handler
        // holds the same shared lock) makes it wait. It must wait, not fail as "database is
        // locked" and report the lock lost, whatever the acquire allowed itself to wait
        // (try_lock(): nothing).
        const auto name = unique_name("commit-busy");
        mutex holder(db(), name, opts());
        REQUIRE(holder.try_lock());
        sqlite3* raw = nullptr;
        REQUIRE(sqlite3_open_v2(sqlock::detail::impl_of(db()).lock_file_for(name).c_str(), &raw,
                                SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
        std::unique_ptr<sqlite3, decltype(&sqlite3_close_v2)> reader(raw, &sqlite3_close_v2);
        REQUIRE(sqlite3_exec(reader.get(), "BEGIN; SELECT count(*) FROM sqlite_master;", nullptr,
                             nullptr, nullptr) == SQLITE_OK);
        std::jthread end_read([&] {
            std::this_thread::sleep_for(300ms); // the reader's transaction lasts this long
            sqlite3_exec(reader.get(), "COMMIT", nullptr, nullptr, nullptr);
        });
        holder.unlock();
        end_read.join();
        CHECK(holder.last_error() == "");
        CHECK(holder.last_loss() == sqlock::loss_reason::none);
        mutex after(db(), name, opts()); // and the lock file is free again
        CHECK(after.try_lock());
        after.unlock();
#else
        FAIL("built without SQLite, yet run on it");
#endif
    }

} // TEST_SUITE select_for_update_sqlite
