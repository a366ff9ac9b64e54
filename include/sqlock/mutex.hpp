/// @file
/// mutex.hpp: sqlock::mutex, a TimedLockable lock that lives in a database.
#pragma once

#include "sqlock/database.hpp"
#include "sqlock/error.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>

namespace sqlock {

namespace detail {
class mutex_impl;
class mutex_access;
/// A relative timeout as a deadline on the steady clock (the timed operations' core takes one).
template <class Rep, class Period>
std::chrono::steady_clock::time_point
steady_deadline(const std::chrono::duration<Rep, Period>& rel) {
    return std::chrono::steady_clock::now() +
           std::chrono::ceil<std::chrono::steady_clock::duration>(rel);
}
/// An absolute deadline on any clock as one on the steady clock.
template <class Clock, class Duration>
std::chrono::steady_clock::time_point
steady_deadline(const std::chrono::time_point<Clock, Duration>& abs) {
    if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>)
        return std::chrono::time_point_cast<std::chrono::steady_clock::duration>(abs);
    else
        return steady_deadline(abs - Clock::now());
}
} // namespace detail

/// How a lock is represented in the database (docs: guides/strategies.md).
enum class strategy {
    unique_key,         ///< a lease row under a primary key; expires after ttl
    select_for_update,  ///< a row lock held by an open transaction on a pinned connection
    optimistic_version, ///< compare-and-set on a version column, no lock between statements
};

/// "unique_key", "select_for_update" or "optimistic_version".
std::string_view to_string(strategy s) noexcept;
/// Parses the names above; throws errc::invalid_argument for anything else.
strategy parse_strategy(std::string_view text);

/// Longest lock name accepted, in bytes. Names are compared byte for byte on every backend.
inline constexpr std::size_t max_name_length = 255;

/// Why a held lock stopped being certainly ours.
enum class loss_reason {
    none,    ///< not lost
    lost,    ///< the database says it is gone, or its lease ran out: another owner may hold it
    unknown, ///< the database could not be reached to renew it before the lease's local end
};

/// "none", "lost" or "unknown".
std::string_view to_string(loss_reason reason) noexcept;

/// What an on_lost callback is told.
struct lock_lost_event {
    std::string name;                       ///< the lock name
    std::int64_t token = 0;                 ///< fencing token of the grant that was lost
    loss_reason reason = loss_reason::lost; ///< lost or unknown (never none)
    std::string message;                    ///< what happened, for logs
};

/// What an on_at_risk callback is told: a held lease may not last, or (at_risk false) is safe
/// again.
struct lock_at_risk_event {
    std::string name;       ///< the lock name
    std::int64_t token = 0; ///< fencing token of the grant
    /// True: the last renewal failed, or none was confirmed while half the TTL went by (with
    /// renewal off: half the TTL is left). False: a renewal got through again.
    bool at_risk = true;
    /// The lease's local end: unless a renewal gets through first, the lock is reported lost
    /// then. Always before anyone else can be granted it (see owns_lock()).
    std::chrono::steady_clock::time_point lease_end{};
    std::string message; ///< the last renewal's error, if any, for logs
};

/// Per-mutex settings.
struct mutex_options {
    /// How the lock is represented. Checked against the backend when the mutex is made
    /// (errc::unsupported).
    sqlock::strategy strategy = sqlock::strategy::unique_key;
    /// Lease length, measured on the database clock. Must be positive and at most 30 days.
    /// A holder that neither releases nor renews within ttl loses the lock.
    std::chrono::milliseconds ttl = std::chrono::seconds(30);
    /// Polling backoff while waiting: each retry sleeps a random time in [d, 2d), with d
    /// starting at retry_min and doubling up to retry_max. Never sleeps past the deadline.
    /// Must be positive.
    std::chrono::milliseconds retry_min = std::chrono::milliseconds(2);
    /// Upper bound of the backoff's d (see retry_min); must be at least retry_min.
    std::chrono::milliseconds retry_max = std::chrono::milliseconds(200);
    /// Keep the lock alive while held: a background thread (one per process, for all locks)
    /// renews it every ttl/3 with an owner-and-token-checked statement (select_for_update:
    /// proves its session alive, which also restarts the server's idle timer).
    bool renew = false;
    /// Called once, from sqlock's background thread, when a held lock is lost (see
    /// loss_reason). Must not block for long and must not call into this mutex.
    std::function<void(const lock_lost_event&)> on_lost{};
    /// Called from sqlock's background thread when a held lease becomes at risk (see
    /// lock_at_risk_event), and again with at_risk false when a renewal gets through after
    /// that: once per change, before on_lost. Work that cannot check owns_lock() in time uses
    /// event.lease_end to stop before the lock can be lost (`sqlock run` stops its job so).
    /// Same rules as on_lost.
    std::function<void(const lock_at_risk_event&)> on_at_risk{};
};

/// A distributed lock named `name` in database `db`.
///
/// Meets the standard TimedLockable requirements: std::unique_lock, std::scoped_lock and
/// std::lock_guard work with it. Mutual exclusion holds between all threads and processes on
/// all hosts that share the database.
///
/// Ownership: the owner of a grant is this mutex object on the thread that locked it. That
/// thread may lock again (re-entrant): the hold count goes up (in the lock row for the lease
/// strategies, locally for select_for_update after a liveness check), and the same
/// number of unlock() calls releases it. Another thread locking the same mutex object waits
/// like any other contender.
///
/// Every grant carries a fencing token(), strictly greater than every earlier grant's token for
/// the same name (also after the row was released, reaped or the server restarted). Pass it to
/// whatever the lock protects and have that refuse lower tokens.
///
/// State table (per owner thread):
/// @code{.unparsed}
///   unlocked --lock()/try_lock() success--> held(1) --lock()--> held(n+1)
///   held(n+1) --unlock()--> held(n);  held(1) --unlock()--> unlocked
///   held --lease's local end passed, renewal refused, or session ended--> lost: owns_lock()
///   is false, lost_reason() says why, stop_token() is requested, on_lost runs once; a
///   re-entrant lock() throws errc::lock_lost; unlock() returns quietly (see last_loss()).
/// @endcode
///
/// Thread safety: all members may be called from any thread. Destroying a held mutex
/// releases it (without throwing).
class mutex {
public:
    /// Validates name and options (errc::invalid_argument) and the strategy against the
    /// backend (errc::unsupported). Does not contact the database.
    mutex(database db, std::string name, mutex_options options = {});
    ~mutex();
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;

    /// Blocks until the lock is granted. Throws sqlock::error on a non-retryable failure
    /// (lock table missing, a re-entrant lock of a lease that was lost...); connection
    /// trouble while waiting is retried. A server that refuses connections for lack of free
    /// slots (is_server_full()) is waited out: retried with jittered backoff, a random pause
    /// in [d/2, 3d/2) with d from 50 ms doubling to 2 s.
    ///
    /// Order: on SQLite, lock() and try_lock_for/until queue first come, first served in a
    /// per-name ticket file beside the database (docs: guides/renewal.md, "Waiting on SQLite"): a
    /// caller that releases and asks again goes behind those already waiting. A waiter that dies
    /// leaves the line at once; one that is stopped but alive delays those behind it by at most 1 s
    /// per turn. The queue only orders who asks the database: exclusion never depends on it, and
    /// where it cannot be used (read-only directory, no Linux OFD locks) waiters poll.
    void lock();
    /// One attempt; true when granted (or re-entered). Throws like lock(); a server without a
    /// free connection slot is reported at once (errc::connection, is_server_full()).
    ///
    /// Does not queue: it never waits, so on SQLite it takes no ticket and can take a free lock
    /// ahead of callers waiting in lock() or try_lock_for/until (as std::mutex::try_lock may).
    bool try_lock();
    /// Retries until granted or `rel` has elapsed (steady clock). Returns false on timeout.
    /// Queues like lock() (on SQLite, first come, first served); leaves the line on timeout.
    /// A server without free connection slots is waited out as in lock(); when it still
    /// refused connections at the deadline, throws errc::timeout (at the deadline, not
    /// before) whose message says so and how to fix it, and for which is_server_full() is true.
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& rel) {
        return try_lock_until_steady(detail::steady_deadline(rel));
    }
    /// As try_lock_for, with an absolute deadline on any clock.
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& abs) {
        return try_lock_until_steady(detail::steady_deadline(abs));
    }
    /// Releases one hold. Never throws: when the release cannot be confirmed (the lock was
    /// lost, or the database is unreachable) the outcome is recorded in last_error() and the
    /// lease simply expires at its TTL. When the release's reply is lost (a failover, say), a
    /// lease is read back until the database answers again, for up to connect_timeout (never
    /// past the grant's local end), so unlock() may block that long during an outage. The
    /// last unlock() of a grant still valid (owns_lock()) when it is called ends the lost and
    /// at-risk signals: a release that outlasts the lease is no loss (the critical section
    /// had ended). A grant already past its local end is not covered: sqlock's background
    /// thread reports it lost as usual.
    void unlock() noexcept;

    /// True while the calling thread holds this mutex and the grant is certainly still valid:
    /// false once it was found lost, and once the lease's local end has passed, before anyone
    /// else can have been granted the lock: on the steady clock, the send time of the last
    /// statement that confirmed the grant (the acquire, a re-entry, a renewal) + ttl - a margin
    /// of ttl/10 (25 ms to 1 s). A grant whose acquire waited (in the server or for a slow reply)
    /// is confirmed once more before lock() returns, so it starts with its whole lease.
    bool owns_lock() const noexcept;
    /// Why the calling thread's current grant was lost (loss_reason::none while it is fine or
    /// when nothing is held).
    loss_reason lost_reason() const noexcept;
    /// A stop token of the calling thread's current grant: stop is requested when the grant is
    /// lost (by the background thread, at the latest at the lease's local end). A default token
    /// (stop_possible() == false) when nothing is held.
    std::stop_token stop_token() const noexcept;
    /// Fencing token of the current grant; throws errc::lock_lost when the calling thread
    /// does not hold the lock.
    std::int64_t token() const;
    /// Current re-entrant hold count of the calling thread (0 when not held).
    std::int64_t hold_count() const noexcept;
    /// The lock name.
    const std::string& name() const noexcept;
    /// The full owner id this mutex writes into the lock row for the calling thread.
    std::string owner_id() const;
    /// select_for_update: the database server's id of the session holding the lock for the
    /// calling thread (PostgreSQL backend pid, MariaDB connection id) — what an operator
    /// passes to pg_terminate_backend() or KILL. 0 when not held or not applicable.
    std::int64_t server_session_id() const noexcept;
    /// How this mutex's most recent grant ended, for any thread: loss_reason::none when it was
    /// released normally; lost / unknown when it was lost while held or when its release
    /// found it gone. Lets a caller learn, after unlock(), that its critical section may have
    /// overlapped another holder.
    loss_reason last_loss() const noexcept;
    /// Message of the last failure unlock() swallowed ("" when none).
    std::string last_error() const;

private:
    // sqlock's own locks (a semaphore's permits and queue, a shared_mutex's writer gate) reach
    // the members below through detail::mutex_access.
    friend class detail::mutex_access;
    struct reserved_name_t {
        explicit reserved_name_t() = default;
    };
    // A lock named "NAME<0x1f>ROLE": NAME valid as above, ROLE printable, the whole at most
    // max_name_length bytes.
    mutex(reserved_name_t, database db, std::string name, mutex_options options);

    // The core of lock(), try_lock() and the timed operations: retries until `deadline` on the
    // steady clock (time_point::max(): forever; time_point::min(): one attempt).
    bool try_lock_until_steady(std::chrono::steady_clock::time_point deadline);
    // The same; with `defer_to`, a new grant is held back while another owner holds a lock
    // named there (a semaphore's queue, a writer gate): false then, with a bit per held name
    // in `*deferred` (0: not held back).
    bool try_lock_until_steady(std::chrono::steady_clock::time_point deadline,
                               const std::array<std::string_view, 2>* defer_to, unsigned* deferred);

    std::unique_ptr<detail::mutex_impl> m_impl;
};

} // namespace sqlock
