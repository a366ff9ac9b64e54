// The backend under test, chosen by SQLOCK_TEST_BACKEND (sqlite | postgresql | mysql), and
// helpers shared by the conformance tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <doctest/doctest.h>
#include <functional>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <sqlock/sqlock.hpp>
#include <string>
#include <sys/types.h>
#include <vector>

namespace test {

struct backend_under_test {
    sqlock::backend_kind kind;
    std::string url;         ///< with password: only ever passed to connect / child processes
    std::string scratch_dir; ///< per-backend directory for files (SQLite db, logs)
};

/// Where the programs the tests start live, and the source tree (tests/conformance/paths.cpp:
/// the only file compiled with these absolute paths, so a build in another folder reuses the
/// compiler cache for every other file).
const char* cli_path();       ///< the `sqlock` CLI of this build
const char* contender_path(); ///< tests/support/contender.cpp
const char* elector_path();   ///< tests/support/elector.cpp
const char* source_dir();     ///< the project's source directory

/// The backend for this run. A missing server URL is a test FAILURE, never a skip.
const backend_under_test& backend();

/// The strategy under test (SQLOCK_TEST_STRATEGY; default unique_key).
sqlock::strategy strategy();

/// Mutex options for the strategy under test.
sqlock::mutex_options opts(std::chrono::milliseconds ttl = std::chrono::seconds(30));

/// A migrated database with the default table prefix, shared by the tests of this process.
sqlock::database& db();

/// Connect options for lock tables of the test's own (prefix "<base><pid>_"), for tests that
/// count, reset or break what is in them without touching the other tests' tables.
sqlock::connect_options own_tables(const std::string& base);

/// A migrated database with lock tables of its own (own_tables(base)).
sqlock::database fresh_database(const std::string& base);

/// A lock name no other test uses: "<base>-<random>".
std::string unique_name(const std::string& base);

/// The lock row of `name`, if there is one.
std::optional<sqlock::lock_info> row_of(const std::string& name);

/// Checks that `take` then `give` (an uncontended acquire and release of a primitive on db(),
/// warmed up: its rows exist) send exactly the statements an uncontended lock() and unlock()
/// of a warmed-up mutex with opts() send: the fewest of each over `rounds` rounds. Keep other
/// activity on db() out meanwhile: statements of every thread count.
void check_costs_like_a_mutex(const std::function<void()>& take, const std::function<void()>& give,
                              int rounds = 3);

/// Moves the lease of `name` `by` into the past on the database clock (instead of sleeping).
void backdate(sqlock::database& database, const std::string& name, std::chrono::seconds by);

/// Ends the server session with id `session_id` (pg_terminate_backend / KILL).
void kill_session(sqlock::database& database, std::int64_t session_id);

/// The server's TCP port, from the backend URL (scheme://user:password@host:port/db).
int server_port();

/// The inodes of the sockets among process `pid`'s open file descriptors.
std::set<std::string> socket_inodes(pid_t pid);

/// The local ports of the TCP connections process `pid` has open (established) to the server
/// under test.
std::vector<int> server_client_ports(pid_t pid);

/// The server's session ids (PostgreSQL backend pid, MariaDB connection id) of process `pid`'s
/// connections to the server under test.
std::vector<std::int64_t> server_sessions_of(pid_t pid);

/// A 127.0.0.1 TCP port where nothing listens (bound, then closed).
int dead_port();
/// Runs SQL directly on one of the database's sessions (DDL or DML without parameters).
void exec_sql(sqlock::database& database, const std::string& sql);

/// Spawns argv[0] (a path) with `extra_env` added; returns the pid. The child gets its own
/// process group so a test can kill it together with its children.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {},
            const std::string& stdout_file = {}, const std::string& stderr_file = {});
/// Waits for the child; returns its exit status (128+N when killed by signal N).
int wait_exit(pid_t pid);

/// Polls `condition` every few milliseconds until it holds or `timeout` passes.
template <class F>
bool eventually(F condition, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        struct timespec ts {
            0, 5'000'000
        };
        nanosleep(&ts, nullptr);
    }
    return true;
}

std::string read_file(const std::string& path);

/// A CLI --json output, parsed strictly: malformed JSON (invalid UTF-8 included) and a key
/// repeated within one object (which nlohmann::json would silently collapse) throw. Ordered:
/// keys keep the order the CLI wrote them in.
nlohmann::ordered_json parse_json(const std::string& text);

/// The keys of a JSON object, in order.
std::vector<std::string> keys_of(const nlohmann::ordered_json& object);

/// The sqlock::error `f` throws (a test failure when it throws none).
template <class F>
sqlock::error error_of(F f) {
    try {
        f();
    } catch (const sqlock::error& e) {
        return e;
    }
    FAIL("expected a sqlock::error");
    return sqlock::error(sqlock::errc::backend, "unreachable");
}

/// Records a mutex's on_lost callback and lets a test await it.
struct lost_probe {
    std::mutex m;
    std::condition_variable cv;
    std::optional<sqlock::lock_lost_event> event;
    std::chrono::steady_clock::time_point at;

    std::function<void(const sqlock::lock_lost_event&)> callback() {
        return [this](const sqlock::lock_lost_event& e) {
            std::lock_guard lock(m);
            event = e;
            at = std::chrono::steady_clock::now();
            cv.notify_all();
        };
    }
    bool wait(std::chrono::milliseconds timeout) {
        std::unique_lock lock(m);
        return cv.wait_for(lock, timeout, [&] { return event.has_value(); });
    }
};

/// The processes whose parent is `parent` (and whose command name is `command`, if given).
std::vector<pid_t> children_of(pid_t parent, const std::string& command = {});

/// Stops (SIGSTOP) the database server process for the backend under test, and all its
/// children (PostgreSQL runs one backend process per connection); SIGCONT on destruction. The
/// PID comes from tools/testdb.sh; a missing PID fails the test.
class paused_server {
public:
    paused_server();
    ~paused_server();
    paused_server(const paused_server&) = delete;
    paused_server& operator=(const paused_server&) = delete;

private:
    std::vector<pid_t> m_pids;
};

} // namespace test
