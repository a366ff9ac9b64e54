// `sqlock status` tells the truth (issue 31): held, free and waiting as the lock really is, for
// the strategy under test, in text, JSON and Prometheus; and a status loop never changes the
// outcome of a `run --wait 0` beside it (status takes no lock of its own).
#include "backend_fixture.hpp"
#include "database/database_impl.hpp"

#include <atomic>
#include <csignal>
#include <doctest/doctest.h>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>
#include <vector>

using namespace std::chrono_literals;
using test::db;
using test::unique_name;

namespace {

const char* strategy_name() {
    switch (test::strategy()) {
    case sqlock::strategy::unique_key:
        return "unique_key";
    case sqlock::strategy::select_for_update:
        return "select_for_update";
    case sqlock::strategy::optimistic_version:
        return "optimistic_version";
    }
    return "unique_key";
}

/// What one CLI run printed, and how it ended.
struct cli_run {
    int status = -1;
    std::string out, err;
};

/// Runs the CLI with the test database's URL.
cli_run run_cli(const std::vector<std::string>& args) {
    static std::atomic<int> counter{0};
    const auto out = test::backend().scratch_dir + "/truth-out-" + std::to_string(::getpid()) +
                     "-" + std::to_string(++counter);
    std::vector<std::string> argv{test::cli_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t p = test::spawn(argv, {"SQLOCK_URL=" + test::backend().url}, out, out + ".err");
    const int status = test::wait_exit(p);
    return {status, test::read_file(out), test::read_file(out + ".err")};
}

/// Runs the CLI, returns (exit status, stdout).
std::pair<int, std::string> cli(const std::vector<std::string>& args) {
    auto r = run_cli(args);
    return {r.status, std::move(r.out)};
}

/// `sqlock run NAME --strategy S --wait 0 -- true` on a lock that should be free: its exit
/// status. A run refused because its own login outlasted --wait 0's connect budget (under a
/// sanitizer on a loaded host; its message says the server "did not answer new connections in
/// time") says nothing of the lock: it is run again, up to 5 times. Refused for a holder, it is
/// not.
int run_wait0(const std::string& name, const std::string& strategy) {
    for (int attempt = 0;; ++attempt) {
        const auto r = run_cli({"run", name, "--strategy", strategy, "--wait", "0", "--", "true"});
        const bool slow_login =
            r.status == 75 &&
            r.err.find("did not answer new connections in time") != std::string::npos;
        if (!slow_login || attempt == 4)
            return r.status;
    }
}

/// A `sqlock run NAME ... -- sleep 60` holding the lock until stopped; with `marker`, the job
/// creates that file first (it runs only once the lock is held).
pid_t spawn_holder(const std::string& name, std::vector<std::string> extra = {},
                   const std::string& marker = {}) {
    std::vector<std::string> argv{test::cli_path(), "run",   name, "--strategy",
                                  strategy_name(),  "--ttl", "30s"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (marker.empty()) {
        for (const char* a : {"--", "sleep", "60"})
            argv.emplace_back(a);
    } else {
        for (const char* a : {"--", "/bin/sh", "-c"})
            argv.emplace_back(a);
        argv.push_back("touch '" + marker + "'; exec sleep 60");
    }
    return test::spawn(argv, {"SQLOCK_URL=" + test::backend().url});
}

/// spawn_holder(name, extra) with a marker file, once its job runs (the lock is held); fails
/// the test when it does not within 30 s.
pid_t hold(const std::string& name, std::vector<std::string> extra = {}) {
    const auto marker = test::backend().scratch_dir + "/" + name + ".holding";
    const pid_t p = spawn_holder(name, std::move(extra), marker);
    REQUIRE(test::eventually([&] { return std::filesystem::exists(marker); }, 30s));
    return p;
}

void stop(pid_t p) {
    ::kill(-p, SIGTERM);
    test::wait_exit(p);
}

/// MariaDB shows select_for_update holders only through its lock monitor: tools/testdb.sh
/// starts the server with innodb_status_output_locks ON (a test must not change a global that
/// the tests after it see).
void show_row_lock_holders() {
    if (test::backend().kind != sqlock::backend_kind::mysql)
        return;
    auto s = sqlock::detail::impl_of(db()).checkout();
    const auto r = s->query("SELECT @@GLOBAL.innodb_status_output_locks");
    REQUIRE(r.rows.size() == 1);
    REQUIRE(sqlock::detail::column_int(r.rows.front().at(0)) == 1);
}

nlohmann::ordered_json status_row(const std::string& name) {
    const auto [status, out] = cli({"status", "--json", "--name", name});
    REQUIRE(status == 0);
    const auto doc = test::parse_json(out);
    REQUIRE(doc.is_array());
    return doc.empty() ? nlohmann::ordered_json() : doc.at(0);
}

} // namespace

/// The holder's and waiters' `sqlock run` processes, stopped in reverse order.
struct line_of_runs {
    std::vector<pid_t> pids;
    ~line_of_runs() {
        for (auto p = pids.rbegin(); p != pids.rend(); ++p)
            stop(*p);
    }
};

// Every backend x strategy (SQLite's select_for_update: the name's row, and its lock file).
TEST_SUITE("status_truth") {
    TEST_CASE("status truth: held, then free, in text, JSON and Prometheus") {
        show_row_lock_holders();
        const auto name = unique_name("truth-held");
        const pid_t holder = hold(name);
        CHECK(
            cli({"run", name, "--strategy", strategy_name(), "--wait", "0", "--", "true"}).first ==
            75);
        const auto row = status_row(name);
        CHECK(row.at("held") == true);
        CHECK(!row.at("owner").is_null());
        CHECK(row.at("expires_in_ms").is_null() ==
              (test::strategy() == sqlock::strategy::select_for_update));
        const auto [s1, text] = cli({"status", "--name", name});
        CHECK(s1 == 0);
        CHECK_MESSAGE(text.starts_with("1 held, 0 waiting, 0 free or expired"), text);
        const auto [s2, prom] = cli({"status", "--prometheus"});
        CHECK(s2 == 0);
        CHECK(prom.find("sqlock_locks_unknown 0") != std::string::npos);
        stop(holder);
        // Free: the row is gone (unique_key deletes it) or shows no holder.
        REQUIRE(test::eventually(
            [&] {
                const auto r = status_row(name);
                return r.is_null() || r.at("held") == false;
            },
            20s));
        if (const auto freed = status_row(name); !freed.is_null()) {
            CHECK(freed.at("owner").is_null());
            CHECK(freed.at("held_for_ms").is_null());
        }
        const auto [s3, text2] = cli({"status", "--name", name});
        CHECK(text2.starts_with("0 held, 0 waiting, "));
    }

    TEST_CASE("status truth: three runs queued behind a holder are three waiters, in line") {
        show_row_lock_holders();
        const auto name = unique_name("truth-line");
        line_of_runs runs;
        runs.pids.push_back(hold(name));
        for (int i = 0; i < 3; ++i)
            runs.pids.push_back(spawn_holder(name));
        // Each waiter shows once it has reached the server's (or the queue file's) line. A
        // PostgreSQL or MariaDB waiter leaves the server's queue for a moment between its wait
        // steps (1 s each), so every view is awaited, not read once.
        nlohmann::ordered_json row;
        REQUIRE(test::eventually(
            [&] {
                row = status_row(name);
                return !row.is_null() && row.at("waiters").is_array() &&
                       row.at("waiters").size() == 3;
            },
            30s));
        CHECK(row.at("held") == true);
        CHECK(row.at("waiting") == false);
        for (std::size_t i = 0; i < 3; ++i) {
            const auto& w = row.at("waiters").at(i);
            CHECK(w.at("position") == static_cast<int>(i + 1));
            CHECK(!w.at("who").get<std::string>().empty());
        }
        // The library's find(name) tells the same line as list() (status) does.
        std::size_t found_waiters = 0;
        CHECK_MESSAGE(test::eventually(
                          [&] {
                              const auto found = db().find(name);
                              found_waiters = found ? found->waiters.size() : 0;
                              return found_waiters == 3;
                          },
                          30s),
                      found_waiters);
        std::string text;
        CHECK_MESSAGE(test::eventually(
                          [&] {
                              text = cli({"status", "--name", name}).second;
                              return text.starts_with("1 held, 3 waiting, 0 free or expired") &&
                                     text.find("; 3 waiting: ") != std::string::npos;
                          },
                          30s),
                      text);
        // The whole database's count: at least these three (other tests share the server).
        std::string prom;
        CHECK_MESSAGE(test::eventually(
                          [&] {
                              prom = cli({"status", "--prometheus"}).second;
                              const auto at = prom.find("\nsqlock_locks_waiting ");
                              return at != std::string::npos &&
                                     std::stoi(prom.substr(at + 22)) >= 3;
                          },
                          30s),
                      prom);
    }

    TEST_CASE("status truth: a writer collecting reader slots waits; it holds once it has them") {
        show_row_lock_holders();
        const auto name = unique_name("truth-rw");
        const auto writing = test::backend().scratch_dir + "/" + name + ".writing";
        const pid_t reader = hold(name, {"--shared"});
        const pid_t writer = spawn_holder(name, {"--exclusive"}, writing);
        // The writer holds its gate and takes the free slots, then waits for the reader's
        // (awaited together: the gate is shown before the first free slot is taken).
        REQUIRE(test::eventually(
            [&] {
                const auto shown = cli({"status", "--name", name}).second;
                return shown.find("the writer waits for readers") != std::string::npos &&
                       shown.find("collected by the writer") != std::string::npos;
            },
            30s));
        auto [s1, text] = cli({"status", "--name", name});
        CHECK_MESSAGE(text.starts_with("1 held, "), text); // the reader, not the slots
        CHECK_MESSAGE(text.find("collected by the writer") != std::string::npos, text);
        stop(reader);
        REQUIRE(test::eventually([&] { return std::filesystem::exists(writing); }, 30s));
        std::tie(s1, text) = cli({"status", "--name", name});
        CHECK_MESSAGE(text.starts_with("1 held, 0 waiting"), text); // the writer alone
        stop(writer);
    }

    TEST_CASE("status truth: a semaphore's queue row is a waiter, not a holder") {
        show_row_lock_holders();
        const auto name = unique_name("truth-sem");
        const pid_t a = spawn_holder(name, {"--permits", "1"});
        REQUIRE(test::eventually(
            [&] {
                return cli({"status", "--name", name}).second.starts_with("1 held, 0 waiting");
            },
            20s));
        const pid_t b = spawn_holder(name, {"--permits", "1"}); // waits for the permit
        REQUIRE(test::eventually(
            [&] {
                const auto [s, text] = cli({"status", "--name", name});
                return text.starts_with("1 held, 1 waiting");
            },
            20s));
        stop(b);
        stop(a);
    }
}

// Leases only: a select_for_update lock ends with its session and never expires.
TEST_SUITE("status_truth_lease") {
    TEST_CASE("status truth: --expired lists a lease whose holder died, not a free row") {
        const auto dead = unique_name("truth-dead");
        const pid_t holder = hold(dead, {"--ttl", "1s"});
        // The OOM killer's way: the whole job at once, nothing released.
        ::kill(-holder, SIGKILL);
        test::wait_exit(holder);
        // A free row beside it (optimistic_version keeps its row after a release).
        const auto released = unique_name("truth-free");
        REQUIRE(cli({"run", released, "--strategy", strategy_name(), "--", "true"}).first == 0);
        REQUIRE(test::eventually(
            [&] {
                const auto [s, out] = cli({"status", "--expired", "--json", "--name", dead});
                return test::parse_json(out).size() == 1;
            },
            20s));
        const auto [s1, out] = cli({"status", "--expired", "--json", "--name", "truth-*"});
        CHECK(s1 == 0);
        const auto rows = test::parse_json(out);
        bool saw_dead = false;
        for (const auto& r : rows) {
            CHECK(r.at("name") != released);
            CHECK(r.at("expired") == true);
            CHECK(!r.at("owner").is_null());
            saw_dead = saw_dead || r.at("name") == dead;
        }
        CHECK(saw_dead);
        const auto [s2, prom] = cli({"status", "--prometheus"});
        CHECK(prom.find("sqlock_locks_expired 0") == std::string::npos);
    }
}

TEST_SUITE("common") {
    TEST_CASE("a status loop beside 4 run --wait 0 changes none of their outcomes") {
        show_row_lock_holders();
        const auto name = unique_name("truth-loop");
        const pid_t holder = hold(name);
        CHECK(
            cli({"run", name, "--strategy", strategy_name(), "--wait", "0", "--", "true"}).first ==
            75);
        std::atomic<bool> done{false};
        std::thread scraper([&] {
            while (!done) {
                cli({"status", "--json"});
                cli({"status", "--prometheus"});
            }
        });
        const auto contend = [&] {
            std::vector<pid_t> ps;
            for (int i = 0; i < 4; ++i)
                ps.push_back(test::spawn({test::cli_path(), "run", name, "--strategy",
                                          strategy_name(), "--wait", "0", "--", "true"},
                                         {"SQLOCK_URL=" + test::backend().url}));
            std::vector<int> outcomes;
            for (const auto p : ps)
                outcomes.push_back(test::wait_exit(p));
            return outcomes;
        };
        for (int round = 0; round < 3; ++round)
            for (const int o : contend())
                CHECK(o == 75); // held by the holder: every one must be refused
        stop(holder);
        // Free now: one at a time, every one gets it, with the status loop still running.
        for (int i = 0; i < 4; ++i)
            CHECK(run_wait0(name, strategy_name()) == 0);
        done = true;
        scraper.join();
    }
}
