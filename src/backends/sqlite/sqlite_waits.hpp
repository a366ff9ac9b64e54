// Internal (SQLite backend): how a session waits for others: for SQLite's write lock held by
// another connection (the busy handler) and for this process's turn on a database file. Both
// wait through the wait hook (base/io_wait.hpp): on a thread they block it as before; on a
// fiber (an asynchronous acquire) they suspend the fiber and leave its thread to other work.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

struct sqlite3;

namespace sqlock::detail {

/// A connection's wait for SQLite's locks, in place of sqlite3_busy_timeout(): a statement
/// that meets another connection's lock tries again after growing pauses (1 ms up to 50 ms)
/// until its limit has passed, then fails with SQLITE_BUSY. Each pause goes through the wait
/// hook; a fiber whose waiter was stopped (a cancelled acquire) gives up at once instead.
/// Lives as long as the connection, at a fixed address (the handler's argument).
class busy_wait {
public:
    /// No limit: wait as long as it takes.
    static constexpr int forever = std::numeric_limits<int>::max();

    /// Installs itself as `db`'s busy handler, with a limit of `ms` (<= 0: fail at once).
    busy_wait(sqlite3* db, int ms) noexcept;
    busy_wait(const busy_wait&) = delete;
    busy_wait& operator=(const busy_wait&) = delete;

    /// The limit for the waits from now on (<= 0: fail at once; forever: no limit).
    void set(int ms) noexcept { m_limit_ms = ms; }
    /// The limit now.
    int limit() const noexcept { return m_limit_ms; }

private:
    /// SQLite's busy handler: nonzero to try again. `count`: the tries so far for this lock.
    static int on_busy(void* self, int count) noexcept;

    int m_limit_ms;
    std::chrono::steady_clock::time_point m_began; ///< when the current wait began
};

/// Statements of this process on one database file take turns here: SQLite has one writer,
/// and connections of one process that wait for it through the busy handler pause and retry
/// and can starve each other (seen with 4-8 threads: an unlock gave up after its busy
/// timeout). Other processes still meet at SQLite's own lock. Not a std::mutex: a turn taken
/// on a fiber may end on another thread of its executor, and a fiber waits for its turn by
/// pausing, never by blocking the thread whose other fiber may hold the turn.
class turn_gate {
public:
    /// The gate of the database file at `path`: one per file in the process.
    static std::shared_ptr<turn_gate> of(const std::string& path);

    explicit turn_gate(std::string path) : m_path(std::move(path)) {}

    /// Waits for the turn and takes it; turns are given in the order they were asked for. A
    /// thread blocks; a fiber waits for an eventfd of its own (made only when it must wait),
    /// and throws error(errc::timeout) when its waiter is stopped first (nothing ran yet), and
    /// error(errc::backend) when it cannot wait (no eventfd).
    void enter();
    /// Gives the turn to the first in line, if any. Any thread may; never throws.
    void leave() noexcept;

private:
    struct waiter {
        int fd = -1;          ///< a fiber's eventfd, written when its turn comes; -1: a thread
        bool granted = false; ///< the turn is its own (guarded by m_mutex)
    };
    void wait_on_fiber(std::unique_lock<std::mutex>& lock, waiter& me);

    std::mutex m_mutex;
    std::condition_variable m_granted; ///< threads in line look at their waiter::granted
    bool m_taken = false;
    std::deque<waiter*> m_line;
    const std::string m_path; ///< for the message of a stopped wait
};

/// A turn held on a gate (none: nothing held), given back when it ends.
class gate_turn {
public:
    gate_turn() noexcept = default;
    explicit gate_turn(turn_gate& gate) : m_gate(&gate) { gate.enter(); }
    gate_turn(const gate_turn&) = delete;
    gate_turn& operator=(const gate_turn&) = delete;
    gate_turn(gate_turn&& other) noexcept : m_gate(other.m_gate) { other.m_gate = nullptr; }
    gate_turn& operator=(gate_turn&&) = delete;
    ~gate_turn() {
        if (m_gate)
            m_gate->leave();
    }

private:
    turn_gate* m_gate = nullptr;
};

} // namespace sqlock::detail
