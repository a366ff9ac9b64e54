// `sqlock status` tells the truth (issue 31): held, free and waiting as the lock really is, for
// the strategy under test, in text, JSON and Prometheus; and a status loop never changes the
// outcome of a `run --wait 0` beside it (status takes no lock of its own).
#include "backend_fixture.hpp"
#include "core/database_impl.hpp"

#include <atomic>
#include <csignal>
#include <doctest/doctest.h>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

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

/// Runs the CLI, returns (exit status, stdout).
std::pair<int, std::string> cli(const std::vector<std::string>& args) {
    static std::atomic<int> counter{0};
    const auto out = test::backend().scratch_dir + "/truth-out-" + std::to_string(::getpid()) +
                     "-" + std::to_string(++counter);
    std::vector<std::string> argv{test::cli_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t p = test::spawn(argv, {"SQLOCK_URL=" + test::backend().url}, out, out + ".err");
    const int status = test::wait_exit(p);
    return {status, test::read_file(out)};
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
    auto s = db().impl()->checkout();
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

// Every backend x strategy but SQLite's select_for_update, whose lock lives in a lock file
// and keeps no row that status could read (tests/CMakeLists.txt; issue 31, open).
TEST_SUITE("status_truth") {
    TEST_CASE("status truth: held, then free, in text, JSON and Prometheus") {
        show_row_lock_holders();
        const auto name = unique_name("truth-held");
        const auto holding = test::backend().scratch_dir + "/" + name + ".holding";
        const pid_t holder = spawn_holder(name, {}, holding);
        REQUIRE(test::eventually([&] { return std::filesystem::exists(holding); }, 30s));
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

TEST_SUITE("common") {
    TEST_CASE("a status loop beside 4 run --wait 0 changes none of their outcomes") {
        show_row_lock_holders();
        const auto name = unique_name("truth-loop");
        const auto holding = test::backend().scratch_dir + "/" + name + ".holding";
        const pid_t holder = spawn_holder(name, {}, holding);
        REQUIRE(test::eventually([&] { return std::filesystem::exists(holding); }, 30s));
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
            CHECK(cli({"run", name, "--strategy", strategy_name(), "--wait", "0", "--", "true"})
                      .first == 0);
        done = true;
        scraper.join();
    }
}
