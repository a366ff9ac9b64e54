// Steps of the database server's clock, made for real: tools/testdb.sh runs the throwaway
// servers with a shifted wall clock (TESTDB_FAKETIME_FILE; PostgreSQL through
// tools/testdb_clock.c, MariaDB through libfaketime) whose offset file env.sh names as
// SQLOCK_TEST_POSTGRES_CLOCK_FILE / SQLOCK_TEST_MYSQL_CLOCK_FILE (one per server, so the other
// server's tests may run meanwhile). SQLite has no server: its clock is this process's own.
#include "backend_fixture.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

using namespace std::chrono_literals;
using sqlock::mutex;
using test::db;
using test::opts;
using test::unique_name;

namespace {

/// Steps the wall clock of the server under test by writing its offset file; back to +0 when
/// it ends.
class server_clock {
public:
    server_clock() {
        const char* var = test::backend().kind == sqlock::backend_kind::postgresql
                              ? "SQLOCK_TEST_POSTGRES_CLOCK_FILE"
                              : "SQLOCK_TEST_MYSQL_CLOCK_FILE";
        const char* path = std::getenv(var);
        if (path == nullptr || *path == '\0')
            FAIL(var << " is not set: start the servers with "
                        "TESTDB_FAKETIME_FILE=<file> tools/testdb.sh start DIR (tools/test-all.sh "
                        "does)");
        m_path = path;
    }
    ~server_clock() {
        try {
            set(0s);
        } catch (...) {
        }
    }
    server_clock(const server_clock&) = delete;
    server_clock& operator=(const server_clock&) = delete;

    /// The servers' clocks read the real time plus `offset` from now on (an atomic replace:
    /// the servers re-read the file on every clock call).
    void set(std::chrono::seconds offset) {
        const auto tmp = m_path + ".new";
        {
            std::ofstream out(tmp, std::ios::trunc);
            out << (offset.count() >= 0 ? "+" : "") << offset.count() << "\n";
            if (!out)
                throw std::runtime_error("cannot write " + tmp);
        }
        if (std::rename(tmp.c_str(), m_path.c_str()) != 0)
            throw std::runtime_error("cannot replace " + m_path);
    }

private:
    std::string m_path;
};

struct step_log {
    std::mutex m;
    std::vector<std::chrono::milliseconds> steps;
    std::function<void(std::chrono::milliseconds)> callback() {
        return [this](std::chrono::milliseconds s) {
            std::lock_guard lock(m);
            steps.push_back(s);
        };
    }
    std::size_t count() {
        std::lock_guard lock(m);
        return steps.size();
    }
    std::chrono::milliseconds last() {
        std::lock_guard lock(m);
        return steps.empty() ? 0ms : steps.back();
    }
};

/// Runs the CLI against the backend under test; returns its stdout (a test failure unless it
/// exits 0).
std::string sqlock_cli(const std::vector<std::string>& args) {
    static int counter = 0;
    const auto out = test::backend().scratch_dir + "/clock-cli-" + std::to_string(++counter);
    std::vector<std::string> argv{test::cli_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t p = test::spawn(argv, {"SQLOCK_URL=" + test::backend().url}, out, out + ".err");
    CHECK(test::wait_exit(p) == 0);
    return test::read_file(out);
}

bool near(std::chrono::milliseconds got, std::chrono::milliseconds want) {
    return got > want - 1s && got < want + 1s;
}

} // namespace

TEST_SUITE("lease_server_clock") { // unique_key, optimistic_version on PostgreSQL, MariaDB

    TEST_CASE("a step of the server's clock is noticed by a holder, reported with its sign, "
              "recorded for sqlock status, and costs the holder nothing") {
        server_clock clock;
        step_log log;
        auto options = test::own_tables("clk");
        options.on_clock_step = log.callback();
        auto database = sqlock::connect(test::backend().url, options);
        database.migrate();
        auto o = opts(1500ms);
        o.renew = true; // the lease keeper's renewals see the server's clock every 0.5 s
        mutex holder(database, unique_name("clock-seen"), o);
        holder.lock();

        clock.set(20s);
        REQUIRE(test::eventually([&] { return log.count() >= 1; }, 5s));
        CHECK(near(log.last(), 20s));
        CHECK(holder.owns_lock());

        clock.set(0s);
        REQUIRE(test::eventually([&] { return log.count() >= 2; }, 5s));
        CHECK(near(log.last(), -20s));
        CHECK(holder.owns_lock());
        CHECK(database.clock_steps_noticed() == 2);

        holder.unlock();
        CHECK(holder.last_loss() == sqlock::loss_reason::none);
        CHECK(holder.last_error().empty());

        // The first step went to the clock_steps table (at most one row per 10 s per handle).
        const auto recorded = database.clock_steps();
        REQUIRE_FALSE(recorded.empty());
        const auto& oldest = recorded.back();
        CHECK(near(oldest.step, 20s));
        CHECK(oldest.observer.find(':') != std::string::npos);
        CHECK_FALSE(oldest.seen_at.empty());

        // ... and so to operators: `sqlock status` and its Prometheus output.
        const auto status = sqlock_cli({"--table-prefix", options.table_prefix, "status"});
        CHECK(status.find("clock: the database's clock stepped") != std::string::npos);
        const auto metrics =
            sqlock_cli({"--table-prefix", options.table_prefix, "status", "--prometheus"});
        CHECK(metrics.find("\nsqlock_clock_steps_recent " + std::to_string(recorded.size()) +
                           "\n") != std::string::npos);
        CHECK(metrics.find("\nsqlock_clock_step_last_seconds ") != std::string::npos);
    }

    TEST_CASE("a clock that only runs is never reported as stepping") {
        step_log log;
        auto options = test::own_tables("clkq");
        options.on_clock_step = log.callback();
        auto database = sqlock::connect(test::backend().url, options);
        database.migrate();
        // (A 2 s lease: a 600 ms one's renewal came late on a loaded host, and the waiter
        // rightly took it over.)
        auto o = opts(2s);
        o.renew = true;
        mutex holder(database, unique_name("clock-quiet"), o);
        holder.lock();
        mutex waiter(database, holder.name(), opts());
        CHECK_FALSE(waiter.try_lock_for(3s)); // renewals and polls, ~10 replies
        holder.unlock();
        CHECK(log.count() == 0);
        CHECK(database.clock_steps_noticed() == 0);
        CHECK(database.clock_steps().empty());
    }

    TEST_CASE("clock_step_threshold must be positive") {
        auto options = test::own_tables("clkbad");
        options.clock_step_threshold = 0ms;
        const auto e = test::error_of([&] { sqlock::connect(test::backend().url, options); });
        CHECK(e.code() == sqlock::errc::invalid_argument);
    }

    TEST_CASE("a forward step of the server's clock past a lease's expiry does not let a "
              "waiter take it while its holder's TTL runs; the abandoned lease is taken after") {
        server_clock clock;
        const auto name = unique_name("clock-forward");
        mutex a(db(), name, opts(3s)); // not renewed: only its TTL protects it
        mutex b(db(), name, opts());
        a.lock();
        const auto a_token = a.token();
        const auto granted = std::chrono::steady_clock::now();
        clock.set(60s); // a's lease looks expired by 57 s on the server's clock
        CHECK_FALSE(b.try_lock_for(1s));
        CHECK(a.owns_lock());
        // a is abandoned: b takes over once it has seen the lease unchanged for a's TTL, and
        // by then a knows it no longer holds.
        REQUIRE(b.try_lock_for(10s));
        CHECK(std::chrono::steady_clock::now() - granted >= 3s);
        CHECK_FALSE(a.owns_lock());
        CHECK(b.token() > a_token);
        b.unlock();
        clock.set(0s);
    }

    TEST_CASE("a backward step of the server's clock does not make a released lease look held, "
              "nor a renewed one lost") {
        server_clock clock;
        const auto name = unique_name("clock-back");
        auto o = opts(1500ms);
        o.renew = true;
        mutex a(db(), name, o);
        mutex b(db(), name, opts());
        a.lock();
        clock.set(-60s);
        CHECK_FALSE(b.try_lock_for(2s)); // renewed across the step: still a's
        CHECK(a.owns_lock());
        a.unlock();
        CHECK(a.last_loss() == sqlock::loss_reason::none);
        CHECK(b.try_lock_for(2s)); // released rows are free whatever the clock says
        b.unlock();
        clock.set(0s);
    }

} // TEST_SUITE lease_server_clock
