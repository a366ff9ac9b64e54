// Operations: reaping, status, force-release, schema versions, and the CLI's JSON outputs.
#include "backend_fixture.hpp"
#include "database/database_impl.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <doctest/doctest.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

using namespace std::chrono_literals;
using sqlock::mutex;
using test::db;
using test::unique_name;

namespace {

std::string url_env() {
    return "SQLOCK_URL=" + test::backend().url;
}

/// Runs the CLI, returns (exit status, stdout).
std::pair<int, std::string> cli(const std::vector<std::string>& args, std::string* err = nullptr) {
    static int counter = 0;
    const auto out = test::backend().scratch_dir + "/cli-out-" + std::to_string(++counter);
    std::vector<std::string> argv{test::cli_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t p = test::spawn(argv, {url_env()}, out, out + ".err");
    const int status = test::wait_exit(p);
    if (err)
        *err = test::read_file(out + ".err");
    return {status, test::read_file(out)};
}

} // namespace

TEST_SUITE("backend") {

    TEST_CASE("reap: grace, batches, dry run; live leases survive") {
        auto fresh = test::fresh_database("reap");
        std::vector<std::unique_ptr<mutex>> held;
        std::vector<std::string> names;
        for (int i = 0; i < 5; ++i) {
            names.push_back("r" + std::to_string(i));
            // Short leases: a never-released lease is deleted only once the reaper saw it
            // unchanged for its TTL. (1 s, renewed each 333 ms: a 300 ms lease's renewal came
            // late on a loaded host, and the reaper rightly took the live one too.)
            sqlock::mutex_options o;
            o.ttl = 1s;
            if (i == 4)
                o.renew = true; // live
            held.push_back(std::make_unique<mutex>(fresh, names.back(), o));
            held.back()->lock();
        }
        for (int i = 0; i < 3; ++i)
            test::backdate(fresh, names[static_cast<std::size_t>(i)], 60s); // long expired
        test::backdate(fresh, names[3], 1s);                                // just expired

        sqlock::reap_options dry;
        dry.dry_run = true;
        CHECK(fresh.reap(dry).expired == 4);
        dry.older_than = 30s;
        CHECK(fresh.reap(dry).expired == 3);
        CHECK(fresh.list().size() == 5); // a dry run deletes nothing

        sqlock::reap_options graceful;
        graceful.older_than = 30s;
        graceful.batch = 2;
        graceful.settle = 10s;
        const auto r = fresh.reap(graceful);
        CHECK(r.deleted == 3);
        CHECK(r.deferred == 0);
        CHECK(r.batches >= 3); // candidates in pages of 2: never one long statement
        const auto left = fresh.list();
        REQUIRE(left.size() == 2);
        CHECK(left[0].name == names[3]); // within the grace: kept
        CHECK(left[1].name == names[4]); // live: kept
        sqlock::reap_options now;
        now.settle = 10s;
        CHECK(fresh.reap(now).deleted == 1);
        CHECK(fresh.list().size() == 1); // the renewed lease survives
        CHECK(held[4]->owns_lock());
        CHECK_THROWS_AS(fresh.reap(0), sqlock::error);
    }

    TEST_CASE("SQLite: a reap with nothing to delete does not wait for the write lock") {
        if (test::backend().kind != sqlock::backend_kind::sqlite)
            return;
        // Every DELETE takes SQLite's one write lock, even one that deletes nothing: a reaper
        // passing often kept renewals waiting. A pass reads first.
        auto fresh = test::fresh_database("reap_idle");
        mutex live(fresh, "live", test::opts(10s));
        live.lock(); // a row that is not reapable
        auto blocker = sqlock::detail::impl_of(fresh).checkout();
        blocker->begin(); // BEGIN IMMEDIATE: the write lock is taken
        sqlock::reap_options pass;
        pass.prune_history = true;
        const auto started = std::chrono::steady_clock::now();
        sqlock::reap_result r;
        CHECK_NOTHROW(r = fresh.reap(pass)); // waited for the writer, then timed out, before
        const auto took = std::chrono::steady_clock::now() - started;
        blocker->rollback();
        CHECK(took < 1s);
        CHECK(r.deleted == 0);
        CHECK(r.history_deleted == 0);
        CHECK(live.owns_lock());
        live.unlock();
    }

    TEST_CASE("sqlock reap and status --json: documented fields, parsed") {
        const auto name = unique_name("json-status");
        mutex holder(db(), name);
        holder.lock();
        const auto [status, out] = cli({"status", "--json", "--name", name});
        REQUIRE(status == 0);
        const auto doc = test::parse_json(out);
        REQUIRE(doc.is_array());
        REQUIRE(doc.size() == 1);
        const auto& row = doc.at(0);
        REQUIRE(row.is_object());
        const std::vector<std::string> fields = {
            "name",       "primitive",     "role",       "owner",   "host",        "pid",
            "strategy",   "token",         "hold_count", "held",    "acquired_at", "held_for_ms",
            "expires_at", "expires_in_ms", "expired",    "waiting", "waiters"};
        CHECK(row.size() == fields.size());
        for (const auto& f : fields)
            CHECK_MESSAGE(row.count(f) == 1, f);
        CHECK(test::keys_of(row) == fields); // in the documented order
        // Documented types: *_ms, pid, token and hold_count are integers; held, expired bools.
        for (const char* f : {"pid", "token", "hold_count", "held_for_ms", "expires_in_ms"})
            CHECK_MESSAGE(row.at(f).is_number_integer(), f);
        for (const char* f : {"name", "primitive", "role", "owner", "host", "strategy",
                              "acquired_at", "expires_at"})
            CHECK_MESSAGE(row.at(f).is_string(), f);
        CHECK(row.at("primitive") == "mutex"); // a plain mutex: no role
        CHECK(row.at("role") == "");
        CHECK(row.at("name").get<std::string>() == name);
        CHECK(row.at("owner").get<std::string>() == holder.owner_id());
        CHECK(row.at("pid").get<std::int64_t>() == getpid());
        CHECK(row.at("token").get<std::int64_t>() == holder.token());
        CHECK(row.at("held").get<bool>());
        CHECK_FALSE(row.at("expired").get<bool>());
        CHECK(row.at("expires_in_ms").get<std::int64_t>() > 20000);
        // The documented format on every backend (SQLite keeps milliseconds: ".fff000").
        const std::regex utc_time(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6})");
        for (const char* f : {"acquired_at", "expires_at"})
            CHECK_MESSAGE(std::regex_match(row.at(f).get<std::string>(), utc_time),
                          f << " = " << row.at(f).get<std::string>());
        const auto found = db().find(name); // find_lock.sql: the same columns, its own SQL
        REQUIRE(found.has_value());
        CHECK_MESSAGE(std::regex_match(found->acquired_at, utc_time), found->acquired_at);
        CHECK_MESSAGE(std::regex_match(found->expires_at, utc_time), found->expires_at);

        test::backdate(db(), name, 5s);
        const auto [st2, expired_out] = cli({"list", "--json", "--expired", "--name", name});
        CHECK(st2 == 0);
        CHECK(test::parse_json(expired_out).size() == 1);

        const auto [st3, reap_out] = cli({"reap", "--dry-run", "--json"});
        REQUIRE(st3 == 0);
        const auto reap = test::parse_json(reap_out);
        REQUIRE(reap.is_object());
        for (const char* f :
             {"deleted", "expired", "deferred", "batches", "older_than_ms", "batch", "elapsed_ms",
              "history_deleted", "history_expired", "keep_history_ms"})
            CHECK_MESSAGE(reap.at(f).is_number_integer(), f);
        CHECK(reap.size() == 11);
        CHECK(reap.at("dry_run").get<bool>());
        CHECK(reap.at("expired").get<std::int64_t>() >= 1);
        CHECK(reap.at("deleted").get<std::int64_t>() == 0);

        // A crashed holder's short lease is reaped once the run saw it unchanged for its TTL;
        // the 30 s lease that only looks expired (a clock step) is deferred, not deleted.
        const auto crashed = unique_name("json-crashed");
        sqlock::mutex_options short_lease;
        short_lease.ttl = 300ms;
        mutex gone(db(), crashed, short_lease);
        gone.lock();
        test::backdate(db(), crashed, 5s);
        const auto [st4, reap2] = cli({"reap", "--json", "--batch", "500", "--settle", "5s"});
        REQUIRE(st4 == 0);
        const auto reaped = test::parse_json(reap2);
        CHECK(reaped.at("deleted").get<std::int64_t>() >= 1);
        CHECK(reaped.at("deferred").get<std::int64_t>() >= 1);
        CHECK(reaped.at("batch").get<std::int64_t>() == 500);
        CHECK_FALSE(db().find(crashed).has_value());
        CHECK(db().find(name).has_value());
        CHECK(holder.owns_lock());
        gone.unlock(); // lost (reaped): no throw
        holder.unlock();
        CHECK(holder.last_loss() == sqlock::loss_reason::none);
        CHECK(cli({"reap", "--batch", "0"}).first == 64);
    }

    TEST_CASE("--json outputs: a name with a quote, a backslash, a newline and non-ASCII") {
        const auto base = unique_name("json-escape");
        const auto name = base + " \"q\" back\\slash\nline\ttab caf\u00e9 \u20ac \U0001F512";
        mutex holder(db(), name);
        holder.lock();
        const auto [status, out] = cli({"status", "--json", "--name", base + "*"});
        REQUIRE(status == 0);
        CHECK(std::count(out.begin(), out.end(), '\n') == 3); // "[", the row, "]": \n is escaped
        CHECK(out.find("\\\"q\\\" back\\\\slash\\nline\\ttab caf\u00e9") != std::string::npos);
        const auto doc = test::parse_json(out);
        REQUIRE(doc.size() == 1);
        CHECK(doc.at(0).at("name").get<std::string>() == name);

        std::string err;
        const auto [st2, released] =
            cli({"release", name, "--force", "--actor", "op \"\u00e9\"\n", "--json"}, &err);
        REQUIRE(st2 == 0);
        const auto r = test::parse_json(released);
        CHECK(r.at("name").get<std::string>() == name);
        CHECK(r.at("actor").get<std::string>() == "op \"\u00e9\"\n");
        CHECK(r.at("previous_owner").get<std::string>() == holder.owner_id());
        holder.unlock(); // lost (released by force): no throw
    }

    TEST_CASE("sqlock status --prometheus") {
        const auto name = unique_name("prom");
        mutex holder(db(), name);
        holder.lock();
        const auto [status, out] = cli({"status", "--prometheus"});
        CHECK(status == 0);
        CHECK(out.find("# TYPE sqlock_locks_held gauge") != std::string::npos);
        CHECK(out.find("sqlock_locks_held{strategy=\"unique_key\"} ") != std::string::npos);
        CHECK(out.find("\nsqlock_locks_expired ") != std::string::npos);
        CHECK(out.find("\nsqlock_oldest_lock_age_seconds ") != std::string::npos);
        CHECK(out.find("sqlock_locks_held{strategy=\"unique_key\"} 0\n") == std::string::npos);
        holder.unlock();
    }

    TEST_CASE("a timed-out sqlock run says who holds the lock") {
        const auto name = unique_name("who");
        mutex holder(db(), name);
        holder.lock();
        std::string err;
        const auto [status, out] = cli({"run", name, "--wait", "100ms", "--", "/bin/true"}, &err);
        CHECK(status == 75);
        CHECK(err.find(holder.owner_id()) != std::string::npos);
        CHECK(err.find("token " + std::to_string(holder.token())) != std::string::npos);
        holder.unlock();
    }

    TEST_CASE("schema versions: migrate --status, too new at connect, too old at first lock") {
        const auto co = test::own_tables("schema");
        auto fresh = sqlock::connect(test::backend().url, co);
        for (const auto& m : fresh.migration_status())
            CHECK_FALSE(m.applied);
        fresh.migrate();
        const auto states = fresh.migration_status();
        CHECK(states.size() ==
              static_cast<std::size_t>(sqlock::database::expected_schema_version(fresh.backend())));
        for (const auto& m : states)
            CHECK(m.applied);

        // Migrations "undone" down to below the oldest schema this library can use (it locks
        // on the one before its own: upgrade_test.cpp): it refuses until migrated again.
        auto s = sqlock::detail::impl_of(fresh).checkout();
        s->query("DELETE FROM " + co.table_prefix + "migrations WHERE version >= " +
                 std::to_string(sqlock::database::oldest_usable_schema_version(fresh.backend())));
        auto again = sqlock::connect(test::backend().url, co);
        mutex m(again, "x");
        try {
            m.try_lock();
            FAIL("locked with an old schema");
        } catch (const sqlock::error& e) {
            CHECK(e.code() == sqlock::errc::schema_mismatch);
            CHECK(std::string(e.what()).find("sqlock migrate") != std::string::npos);
        }
        again.migrate();
        CHECK(m.try_lock());
        m.unlock();

        // A newer schema than this library: refused at connect.
        s->query("INSERT INTO " + co.table_prefix +
                 "migrations (version, name) VALUES (99, 'future')");
        try {
            sqlock::connect(test::backend().url, co);
            FAIL("connected to a newer schema");
        } catch (const sqlock::error& e) {
            CHECK(e.code() == sqlock::errc::schema_mismatch);
            CHECK(std::string(e.what()).find("upgrade sqlock") != std::string::npos);
        }
    }

} // TEST_SUITE backend

TEST_SUITE("lease") {

    TEST_CASE("force release moves the token forward: the old holder is told and fenced off") {
        const auto name = unique_name("forced");
        auto options = test::opts(900ms);
        options.renew = true;
        std::mutex m;
        std::condition_variable cv;
        bool lost = false;
        options.on_lost = [&](const sqlock::lock_lost_event&) {
            std::lock_guard lock(m);
            lost = true;
            cv.notify_all();
        };
        mutex holder(db(), name, options);
        holder.lock();
        const auto old_token = holder.token();

        std::string err;
        const auto [status, out] =
            cli({"release", name, "--force", "--actor", "test-operator", "--json"}, &err);
        REQUIRE(status == 0);
        const auto r = test::parse_json(out);
        CHECK(r.at("released").get<bool>());
        CHECK(r.at("previous_owner").get<std::string>() == holder.owner_id());
        CHECK(r.at("previous_token").get<std::int64_t>() == old_token);
        CHECK(r.at("new_token").get<std::int64_t>() > old_token);
        CHECK(r.at("actor").get<std::string>() == "test-operator");

        {
            std::unique_lock lock(m);
            CHECK(cv.wait_for(lock, 3s, [&] { return lost; })); // the next renewal is refused
        }
        auto user = sqlock::detail::impl_of(db()).checkout();
        const auto fenced =
            user->query("SELECT 1 WHERE " +
                        db().fencing_condition("'" + name + "'", std::to_string(old_token)));
        CHECK(fenced.rows.empty());
        const auto audit = user->query("SELECT actor, old_token FROM " + db().table_prefix() +
                                       "audit WHERE name = '" + name + "'");
        REQUIRE(audit.rows.size() == 1);
        CHECK(audit.rows[0].at(0) == "test-operator");
        holder.unlock();
        CHECK(holder.last_loss() != sqlock::loss_reason::none);

        mutex next(db(), name, test::opts());
        CHECK(next.try_lock()); // the row is free
        CHECK(next.token() > r.at("new_token").get<std::int64_t>() - 1);
        next.unlock();
        CHECK(cli({"release", unique_name("never"), "--force"}).first == 1);
        CHECK(cli({"release", name}).first == 64); // no --force: refused
    }

    TEST_CASE("a reaper racing renewals for 10 s never deletes a live lease") {
        std::vector<std::unique_ptr<mutex>> holders;
        std::atomic<int> lost{0};
        std::mutex messages_mutex;
        std::string messages;
        // Leases of 2 s renewed every 2/3 s, against two reapers running every millisecond: six
        // holders for 10 s make some 90 renewals race the reapers' passes. (With 1 s leases,
        // SQLite's renewals under ASan on a loaded host came after the leases' local ends.)
        auto options = test::opts(2s);
        options.renew = true;
        options.on_lost = [&](const sqlock::lock_lost_event& e) {
            std::lock_guard guard(messages_mutex);
            messages += e.message + "\n";
            ++lost;
        };
        for (int i = 0; i < 6; ++i) {
            holders.push_back(std::make_unique<mutex>(db(), unique_name("raced"), options));
            holders.back()->lock();
        }
        {
            sqlock::reap_options eager; // no grace: delete the moment a lease has expired
            eager.batch = 10;
            // On SQLite a pass that finds rows to delete takes the database's one write lock,
            // and SQLite's busy wait is not fair: two reapers passing every millisecond (when
            // every pass deleted) kept the renewals out for over a second under ASan on a
            // loaded host. There they pass every 20 ms, still dozens per renewal period.
            const bool sqlite = test::backend().kind == sqlock::backend_kind::sqlite;
            const auto every = sqlite ? 20ms : 1ms;
            sqlock::reaper first(db(), every, eager);
            sqlock::reaper second(db(), every, eager); // two reapers, as from two hosts
            const auto end = std::chrono::steady_clock::now() + 10s;
            while (std::chrono::steady_clock::now() < end && lost == 0) {
                for (const auto& h : holders)
                    CHECK(test::row_of(h->name()).has_value());
                std::this_thread::sleep_for(100ms); // sampling, not synchronising
            }
            CHECK(first.passes() > (sqlite ? 50u : 100u));
            CHECK(first.last_error().empty());
        }
        {
            std::lock_guard guard(messages_mutex);
            CHECK_MESSAGE(lost.load() == 0, messages);
        }
        for (const auto& h : holders) {
            CHECK(h->owns_lock());
            h->unlock();
            CHECK(h->last_error().empty());
        }
    }

} // TEST_SUITE lease
