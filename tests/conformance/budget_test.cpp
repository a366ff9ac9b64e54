// The connection budget (DESIGN §12, README "Connections"): a `sqlock run` process uses at most
// one server connection while it waits for a lock and while it holds it, for every strategy.
// Counted from the client side, per process: the TCP sockets a process has open to the server's
// port, so other tests' connections do not disturb the count.
#include "backend_fixture.hpp"
#include "database/database_impl.hpp"

#include <chrono>
#include <cstdio>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <sqlock/sqlock.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

using namespace std::chrono_literals;
using test::unique_name;

namespace {

/// How many TCP connections `pid` has open to the server under test.
int server_connections(pid_t pid) {
    return static_cast<int>(test::server_client_ports(pid).size());
}

/// What the server says each connection of `pid` is doing (session, command or state, the
/// statement): logged when a budget is exceeded, to tell which statement opened the extra one.
std::string describe_connections(pid_t pid) {
    std::string out;
    try {
        auto s = sqlock::detail::impl_of(test::db()).checkout();
        for (const int port : test::server_client_ports(pid)) {
            const auto p = std::to_string(port);
            const auto r = s->query(
                test::backend().kind == sqlock::backend_kind::postgresql
                    ? "SELECT pid, state, left(query, 120) FROM pg_stat_activity WHERE "
                      "client_port = " +
                          p
                    : "SELECT id, command, left(info, 120) FROM information_schema.processlist "
                      "WHERE host LIKE '%:" +
                          p + "'");
            out += "\n  port " + p + ":";
            for (const auto& row : r.rows)
                for (const auto& cell : row)
                    out += " [" + cell.value_or("NULL") + "]";
        }
    } catch (const std::exception& e) {
        out += "\n  (could not ask the server: " + std::string(e.what()) + ")";
    }
    return out;
}

/// What each thread of `pid` is doing now: its system call number (42: connect, 7: poll, 45:
/// recvfrom on x86-64; "running" when on a CPU) and kernel wait channel. Read at once when a
/// budget is exceeded, before the server is asked: an extra connection may be gone by then.
std::string describe_threads(pid_t pid) {
    std::string out;
    const auto task = "/proc/" + std::to_string(pid) + "/task";
    std::error_code ec;
    for (const auto& t : std::filesystem::directory_iterator(task, ec)) {
        std::string syscall, wchan;
        std::getline(std::ifstream(t.path() / "syscall"), syscall);
        std::getline(std::ifstream(t.path() / "wchan"), wchan);
        out += "\n  thread " + t.path().filename().string() + ": syscall " +
               syscall.substr(0, syscall.find(' ')) + ", wchan " + wchan;
    }
    return out;
}

/// The most connections `pid` had at any of the samples taken over `span` (every 20 ms);
/// `seen` gets what they were doing at the first sample with the most.
int peak_connections(pid_t pid, std::chrono::milliseconds span, std::string* seen = nullptr) {
    int peak = 0;
    const auto end = std::chrono::steady_clock::now() + span;
    while (std::chrono::steady_clock::now() < end) {
        const int now = server_connections(pid);
        if (now > peak && seen) {
            *seen = describe_threads(pid);
            *seen += describe_connections(pid);
        }
        peak = std::max(peak, now);
        std::this_thread::sleep_for(20ms);
    }
    return peak;
}

/// `sqlock run NAME ... -- sh -c 'write $$ to STARTED; until DONE exists: sleep'`: a job that
/// holds the lock until the test lets it finish.
pid_t run_job(const std::string& name, const std::string& started, const std::string& done,
              const std::string& ttl) {
    const std::string job = "echo $$ > '" + started + ".tmp'; mv '" + started + ".tmp' '" +
                            started + "'; while [ ! -e '" + done + "' ]; do sleep 0.02; done";
    return test::spawn({test::cli_path(), "run", name, "--strategy",
                        std::string(sqlock::to_string(test::strategy())), "--ttl", ttl, "--wait",
                        "60s", "--", "/bin/sh", "-c", job},
                       {"SQLOCK_URL=" + test::backend().url});
}

} // namespace

TEST_SUITE("connection_budget") {

    TEST_CASE("a sqlock run process keeps one server connection while it waits and holds") {
        REQUIRE(test::backend().kind != sqlock::backend_kind::sqlite);
        const auto name = unique_name("budget");
        const auto dir = test::backend().scratch_dir + "/" + name;
        std::filesystem::create_directories(dir);
        const pid_t holder = run_job(name, dir + "/held", dir + "/holder-done", "30s");
        REQUIRE(test::eventually([&] { return std::filesystem::exists(dir + "/held"); }, 15s));
        // TTL 2 s: the waiter, once it holds, renews every ~0.7 s while it is sampled.
        const pid_t waiter = run_job(name, dir + "/got", dir + "/waiter-done", "2s");
        REQUIRE(test::eventually([&] { return server_connections(waiter) > 0; }, 15s));

        // Waiting: attempts, the server-side queue (unique_key on PostgreSQL: 1 s steps) and
        // release notifications all share one connection. Sampled over several steps.
        std::string seen;
        CHECK_MESSAGE(peak_connections(waiter, 2500ms, &seen) == 1,
                      "the waiter's connections:" << seen);
        CHECK_FALSE(std::filesystem::exists(dir + "/got"));
        CHECK(peak_connections(holder, 200ms) == 1);

        std::ofstream(dir + "/holder-done").put('\n');
        CHECK(test::wait_exit(holder) == 0);
        REQUIRE(test::eventually([&] { return std::filesystem::exists(dir + "/got"); }, 15s));
        // Holding, across renewals (and for a hold that came through the queue, its seat).
        CHECK(peak_connections(waiter, 2000ms) == 1);
        // The command run under the lock inherits none of them (a job that outlived sqlock
        // would otherwise keep its connection, and a select_for_update lock, open).
        const pid_t job = std::stoi(test::read_file(dir + "/got"));
        CHECK(test::socket_inodes(job).empty());
        std::ofstream(dir + "/waiter-done").put('\n');
        CHECK(test::wait_exit(waiter) == 0);
    }

    TEST_CASE("a session that served a lock goes back to the pool without its lock timeout") {
        REQUIRE(test::backend().kind != sqlock::backend_kind::sqlite);
        // PostgreSQL pools its lock sessions and queue seats: the lock wait set for an acquire
        // must not follow them into other statements (where a row-lock wait of a few ms would
        // then fail).
        auto database = sqlock::connect(test::backend().url);
        const auto name = unique_name("lock-timeout");
        sqlock::mutex holder(database, name, test::opts());
        sqlock::mutex waiter(database, name, test::opts());
        holder.lock();
        std::thread contender([&] { CHECK_FALSE(waiter.try_lock_for(300ms)); });
        contender.join();
        holder.unlock();
        std::thread winner([&] {
            REQUIRE(waiter.try_lock_for(5s));
            waiter.unlock();
        });
        winner.join();
        auto s = sqlock::detail::impl_of(database).checkout(); // the most recently pooled session
        if (test::backend().kind == sqlock::backend_kind::postgresql) {
            CHECK(s->query("SHOW lock_timeout").rows.at(0).at(0).value_or("") == "0");
        } else {
            const auto r = s->query("SELECT @@SESSION.innodb_lock_wait_timeout = "
                                    "@@GLOBAL.innodb_lock_wait_timeout");
            CHECK(r.rows.at(0).at(0).value_or("") == "1");
        }
    }

} // TEST_SUITE
