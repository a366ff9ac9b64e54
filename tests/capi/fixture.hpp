// The C API's conformance suite: the backend and strategy under test (SQLOCK_TEST_BACKEND,
// SQLOCK_TEST_STRATEGY and the server URLs, as for tests/conformance) and small helpers. The
// tests are C++ (doctest) but call nothing of sqlock but the C API of <sqlock/sqlock.h>.
#pragma once

#include <chrono>
#include <condition_variable>
#include <doctest/doctest.h>
#include <mutex>
#include <sqlock/sqlock.h>
#include <string>
#include <sys/types.h>
#include <vector>

namespace capi_test {

/// What this run tests: the backend's name ("sqlite", "postgresql", "mysql"), its URL (with
/// password: only for sqlock_db_open and child processes), the strategy, a scratch directory.
struct target {
    std::string backend;
    std::string url;
    int strategy = SQLOCK_UNIQUE_KEY;
    std::string strategy_name;
    std::string scratch;
};

/// The backend under test. A missing server URL is a failure, never a skip.
const target& under_test();

/// True for the lease strategies (unique_key, optimistic_version).
bool lease_strategy();

/// A migrated database shared by the tests of this process.
sqlock_db* db();

/// Lock options for the strategy under test.
sqlock_lock_options opts(std::int64_t ttl_ms = 30000);

/// A lock name no other test uses: "<base>-<random>".
std::string unique_name(const std::string& base);

/// Owns one error object (frees it), and prints it for failure messages.
class error_slot {
public:
    error_slot() = default;
    error_slot(const error_slot&) = delete;
    error_slot& operator=(const error_slot&) = delete;
    ~error_slot() { sqlock_error_free(m_error); }
    /// For the call: frees what an earlier call left.
    sqlock_error** out() {
        sqlock_error_free(m_error);
        m_error = nullptr;
        return &m_error;
    }
    sqlock_error* get() const { return m_error; }
    int code() const { return sqlock_error_code(m_error); }
    std::string message() const { return m_error ? sqlock_error_message(m_error) : "(none)"; }

private:
    sqlock_error* m_error = nullptr;
};

/// A mutex handle closed at scope exit.
struct mutex_handle {
    sqlock_mutex* m = nullptr;
    mutex_handle(const std::string& name, const sqlock_lock_options& o);
    ~mutex_handle() { sqlock_mutex_close(m); }
    mutex_handle(const mutex_handle&) = delete;
    mutex_handle& operator=(const mutex_handle&) = delete;
};

/// Waits until `condition` holds, polling every few ms, at most `timeout`.
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

/// Records the lost and at-risk callbacks of a lock (callback_user points to one).
struct signal_probe {
    std::mutex m;
    std::condition_variable cv;
    int lost_calls = 0;
    int at_risk_calls = 0;
    sqlock_lost_event lost{}; // its strings are gone after the call: see the copies
    std::string lost_name, lost_message;
    std::vector<sqlock_at_risk_event> risks;
    bool lost_after_risk = false; ///< the first at-risk call came before the lost one
    std::chrono::steady_clock::time_point lost_at;

    static void on_lost(const sqlock_lost_event* event, void* user);
    static void on_at_risk(const sqlock_at_risk_event* event, void* user);
    /// Sets o's callbacks to this probe.
    void attach(sqlock_lock_options& o);
    bool wait_lost(std::chrono::milliseconds timeout);
};

/// Paths of the helper programs and the CLI (tests/capi/paths.cpp).
const char* cli_path();
const char* c_contender_path();
const char* cpp_contender_path();

/// Spawns argv (argv[0] a path) with `extra_env`; its stdout/stderr to the files given.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {},
            const std::string& stdout_file = {}, const std::string& stderr_file = {});
/// Waits for the child; its exit status (128+N when killed by signal N).
int wait_exit(pid_t pid);
/// The contents of a file ("" when missing).
std::string read_file(const std::string& path);

} // namespace capi_test
