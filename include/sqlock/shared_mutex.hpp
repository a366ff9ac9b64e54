/// @file
/// shared_mutex.hpp: sqlock::shared_mutex, many readers or one writer, across hosts.
#pragma once

#include "sqlock/database.hpp"
#include "sqlock/mutex.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

namespace sqlock {

namespace detail {
class shared_mutex_impl;
class handle_access;
} // namespace detail

/// Readers a shared_mutex admits at once unless told otherwise.
inline constexpr std::int64_t default_max_readers = 16;

/// A reader-writer lock named `name` in database `db`: any number of readers up to
/// `max_readers`, or one writer, among all threads and processes on all hosts that share the
/// database.
///
/// Meets the standard SharedTimedLockable and TimedLockable requirements: std::shared_lock
/// takes it shared, std::unique_lock, std::scoped_lock and std::lock_guard exclusive.
///
/// How it is made (docs: guides/shared-mutex.md): each reader holds one of `max_readers`
/// reader permits, locks named "NAME<0x1f>reader K" with the given strategy, TTL and renewal;
/// a writer takes the writer gate "NAME<0x1f>writer" and then every reader permit. So both
/// modes are leases with fencing tokens, renewal, takeover of a dead holder and the lost
/// signal, written once (as sqlock::mutex), and exclusion rests on the permits alone.
///
/// Writers are not starved: a reader that finds the writer gate held (by a writer that holds
/// the lock or waits for readers to leave) waits for that writer before it takes a permit, so
/// readers arriving after a writer go after it. Waiting readers take turns like a
/// semaphore's waiters; writers take turns at the gate.
///
/// Fencing: a writer's token() is the largest token of the leases its grant is made of: greater
/// than every earlier grant's token in either mode (tokens come from one sequence per
/// database). A reader's token() is its permit's.
///
/// Costs: an uncontended shared lock reads the gate and queue rows and takes a permit (as a
/// semaphore); an exclusive lock takes max_readers + 1 locks and its unlock gives them back.
///
/// Ownership: a grant belongs to this object and the thread that took it. Locking again in
/// the same mode on the holding thread re-enters (hold count + 1); taking the other mode while
/// holding one throws errc::invalid_argument (no upgrade or downgrade: it would deadlock).
///
/// Thread safety: all members may be called from any thread. Destroying a shared_mutex
/// releases what its threads hold (without throwing).
class shared_mutex {
public:
    /// Validates name (as a semaphore's), options (as a mutex's) and max_readers (1 to
    /// max_permits), errc::invalid_argument; the strategy against the backend
    /// (errc::unsupported). Does not contact the database.
    shared_mutex(database db, std::string name, mutex_options options = {},
                 std::int64_t max_readers = default_max_readers);
    ~shared_mutex();
    shared_mutex(const shared_mutex&) = delete;
    shared_mutex& operator=(const shared_mutex&) = delete;

    /// Exclusive: blocks until granted. Errors as mutex::lock().
    void lock();
    /// Exclusive: one attempt at the gate and every permit; false (and nothing held) when any
    /// is taken.
    bool try_lock();
    /// Exclusive, waiting at most `rel`; false on timeout (nothing held then).
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& rel) {
        return try_lock_until_steady(detail::steady_deadline(rel));
    }
    /// As try_lock_for, with an absolute deadline on any clock.
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& abs) {
        return try_lock_until_steady(detail::steady_deadline(abs));
    }
    /// Releases one exclusive hold. Never throws (see mutex::unlock()).
    void unlock() noexcept;

    /// Shared: blocks until granted (after any writer that came first). Errors as lock().
    void lock_shared();
    /// Shared: one round over the reader permits; false when a writer holds or waits for the
    /// gate, or every permit is taken.
    bool try_lock_shared();
    /// Shared, waiting at most `rel`; false on timeout.
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& rel) {
        return try_lock_shared_until_steady(detail::steady_deadline(rel));
    }
    /// As try_lock_shared_for, with an absolute deadline on any clock.
    template <class Clock, class Duration>
    bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& abs) {
        return try_lock_shared_until_steady(detail::steady_deadline(abs));
    }
    /// Releases one shared hold. Never throws.
    void unlock_shared() noexcept;

    /// True while the calling thread holds it exclusively and every lease of the grant is
    /// certainly still valid (see mutex::owns_lock()).
    bool owns_lock() const noexcept;
    /// True while the calling thread holds it shared and its permit is certainly valid.
    bool owns_shared() const noexcept;
    /// Why the calling thread's grant (either mode) was lost; loss_reason::none when fine or
    /// nothing is held.
    loss_reason lost_reason() const noexcept;
    /// Stop is requested when the calling thread's grant (either mode) is lost; a default token
    /// when nothing is held.
    std::stop_token stop_token() const noexcept;
    /// Fencing token of the calling thread's grant (either mode); throws errc::lock_lost when
    /// it holds none.
    std::int64_t token() const;
    /// The name.
    const std::string& name() const noexcept;
    /// Readers admitted at once.
    std::int64_t max_readers() const noexcept;
    /// How the most recent grant released by any thread of this object ended (either mode).
    loss_reason last_loss() const noexcept;
    /// Message of the last failure an unlock swallowed ("" when none).
    std::string last_error() const;

private:
    // The core of the exclusive operations: waits until `deadline` on the steady clock
    // (time_point::max(): forever; time_point::min(): one attempt).
    bool try_lock_until_steady(std::chrono::steady_clock::time_point deadline);
    // The same for the shared operations.
    bool try_lock_shared_until_steady(std::chrono::steady_clock::time_point deadline);
    // The cores of both, giving up (false) soon after `stop` (when not null) is requested
    // (asynchronous locks: detail::handle_access).
    bool lock_exclusive(std::chrono::steady_clock::time_point deadline,
                        const std::stop_token* stop);
    bool lock_shared_until(std::chrono::steady_clock::time_point deadline,
                           const std::stop_token* stop);
    friend class detail::handle_access;

    std::unique_ptr<detail::shared_mutex_impl> m_impl;
};

} // namespace sqlock
