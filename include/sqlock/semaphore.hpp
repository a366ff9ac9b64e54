/// @file
/// semaphore.hpp: sqlock::semaphore, at most N holders of a name at once, across hosts.
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
class semaphore_impl;
class handle_access;
} // namespace detail

/// Most permits a semaphore may have. A waiter at the head of the queue tries every permit
/// once per round, so rounds cost up to this many statements.
inline constexpr std::int64_t max_permits = 1000;

/// Longest semaphore name accepted, in bytes: its permits are stored as locks named
/// "NAME<0x1f>permit K" (and its waiters' queue as "NAME<0x1f>permit queue"), which must fit
/// max_name_length.
inline constexpr std::size_t max_semaphore_name_length = max_name_length - 16;

/// Per-semaphore settings: the same as a mutex's (strategy, ttl, backoff, renew, on_lost,
/// on_at_risk), applied to each permit. on_lost and on_at_risk are told the semaphore's name,
/// and the permit in their message.
using semaphore_options = mutex_options;

/// A counting semaphore named `name` in database `db`: at most `permits` holders at once
/// among all threads and processes on all hosts that share the database.
///
/// Each permit is a lock of its own ("NAME<0x1f>permit K", K in [0, permits)), with the
/// semaphore's strategy, TTL and renewal: a permit carries its own fencing token (strictly
/// greater than every earlier grant of the same permit), its lease expires when a crashed
/// holder stops renewing it, and its loss is signalled like a mutex's (owns_lock(),
/// stop_token(), on_lost). `sqlock status` shows each permit's holder; `sqlock reap` and
/// `sqlock release --force NAME` handle them.
///
/// Meets the standard TimedLockable requirements with one permit: std::unique_lock,
/// std::scoped_lock and std::lock_guard work with it; acquire()/try_acquire()/
/// try_acquire_for()/try_acquire_until()/release() are the same operations under the names of
/// std::counting_semaphore.
///
/// Ownership: like a mutex, a permit is held by this object on the thread that acquired it.
/// Several threads of one object may each hold a permit. A thread holds at most one permit of
/// one object: acquiring again on the same thread re-enters the permit it holds (hold count
/// + 1), and the same number of releases gives it back. Only the holding thread releases.
///
/// Waiting is fair: a caller that finds every permit taken joins the name's queue (a lock
/// "NAME<0x1f>permit queue", renewed while waiting); only the queue's head tries the permits, so
/// permits go to waiters in the order the queue serves them (FIFO on PostgreSQL and SQLite;
/// each backend in docs: guides/semaphores.md). try_acquire() makes one round over the
/// permits and never queues. A caller whose last acquire had to wait queues at once next time,
/// so a releaser asking again cannot overtake the waiters it just handed over to.
///
/// The number of permits: every process uses its own `permits`, and a holder only ever takes
/// permits below it. So processes that disagree (a rolling change of N) admit at most the
/// largest N among them; after lowering N, holders of permits at or above the new N keep them
/// until they release, and no new holder gets one.
///
/// Thread safety: all members may be called from any thread. Destroying a semaphore releases
/// the permits its threads hold (without throwing).
class semaphore {
public:
    /// Validates name (errc::invalid_argument: empty, longer than max_semaphore_name_length,
    /// not UTF-8, NUL or the unit separator 0x1f), permits (1 to max_permits) and options as a
    /// mutex does, and the strategy against the backend (errc::unsupported). Does not contact the
    /// database.
    semaphore(database db, std::string name, std::int64_t permits, semaphore_options options = {});
    ~semaphore();
    semaphore(const semaphore&) = delete;
    semaphore& operator=(const semaphore&) = delete;

    /// Blocks until the calling thread holds a permit (or re-entered the one it holds). Throws
    /// sqlock::error like mutex::lock(); connection trouble while waiting is retried and a full
    /// server is waited out.
    void lock();
    /// One round over the permits (one statement when a permit is free); true when one was
    /// granted (or re-entered). Never queues. A full server is reported at once.
    bool try_lock();
    /// Waits until a permit is granted or `rel` has elapsed (steady clock); false on timeout.
    /// Throws errc::timeout when the server refused connections until the deadline.
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& rel) {
        return try_lock_until_steady(detail::steady_deadline(rel));
    }
    /// As try_lock_for, with an absolute deadline on any clock.
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& abs) {
        return try_lock_until_steady(detail::steady_deadline(abs));
    }
    /// Releases one hold of the calling thread's permit. Never throws; see mutex::unlock().
    void unlock() noexcept;

    /// Same as lock().
    void acquire() { lock(); }
    /// Same as try_lock().
    bool try_acquire() { return try_lock(); }
    /// Same as try_lock_for().
    template <class Rep, class Period>
    bool try_acquire_for(const std::chrono::duration<Rep, Period>& rel) {
        return try_lock_for(rel);
    }
    /// Same as try_lock_until().
    template <class Clock, class Duration>
    bool try_acquire_until(const std::chrono::time_point<Clock, Duration>& abs) {
        return try_lock_until(abs);
    }
    /// Same as unlock().
    void release() noexcept { unlock(); }

    /// True while the calling thread holds a permit whose grant is certainly still valid (see
    /// mutex::owns_lock()).
    bool owns_lock() const noexcept;
    /// Why the calling thread's permit was lost (loss_reason::none when fine or none held).
    loss_reason lost_reason() const noexcept;
    /// Stop is requested when the calling thread's permit is lost; a default token when none
    /// is held.
    std::stop_token stop_token() const noexcept;
    /// Fencing token of the calling thread's permit; throws errc::lock_lost when it holds none.
    std::int64_t token() const;
    /// Which permit the calling thread holds, in [0, permits()); throws errc::lock_lost when
    /// it holds none.
    std::int64_t permit() const;
    /// Re-entrant hold count of the calling thread's permit (0 when none is held).
    std::int64_t hold_count() const noexcept;
    /// The semaphore's name.
    const std::string& name() const noexcept;
    /// The number of permits this object admits.
    std::int64_t permits() const noexcept;
    /// How the most recent grant released by any thread of this object ended (see
    /// mutex::last_loss()).
    loss_reason last_loss() const noexcept;
    /// Message of the last failure unlock() swallowed ("" when none).
    std::string last_error() const;

private:
    // The core of lock(), try_lock() and the timed operations: waits until `deadline` on the
    // steady clock (time_point::max(): forever; time_point::min(): one round, no queue).
    bool try_lock_until_steady(std::chrono::steady_clock::time_point deadline);
    friend class detail::handle_access; // asynchronous locks (src/locks/handle_access.hpp)

    std::unique_ptr<detail::semaphore_impl> m_impl;
};

} // namespace sqlock
