/// @file
/// async.hpp: asynchronous lock operations for Asio (standalone Asio 1.19 or newer, namespace
/// `asio`; Debian: libasio-dev): awaitable, callback or future waits that never block the
/// caller's thread, grants owned by a guard rather than a thread, and work cancelled before
/// its lease can end (docs: guides/async.md).
///
/// Not part of sqlock.hpp: include it where Asio is available. Built when CMake finds Asio
/// (option SQLOCK_WITH_ASYNC).
#pragma once

#include "sqlock/database.hpp"
#include "sqlock/error.hpp"
#include "sqlock/leader.hpp"
#include "sqlock/mutex.hpp"
#include "sqlock/semaphore.hpp"
#include "sqlock/shared_mutex.hpp"

#include <asio/any_io_executor.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/error.hpp>
#include <asio/execution/outstanding_work.hpp>
#include <asio/post.hpp>
#include <asio/prefer.hpp>
#include <asio/version.hpp>

#if defined(ASIO_HAS_CO_AWAIT)
#include <asio/awaitable.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#endif
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#if ASIO_VERSION < 101900
#error "sqlock/async.hpp needs standalone Asio 1.19 or newer (per-operation cancellation)"
#endif

namespace sqlock {

class async_guard;

namespace detail {
class worker_pool;    // src/async/worker_pool.hpp
class async_lockable; // src/async/lockable.hpp: one primitive's asynchronous side
class async_grant;    // src/async/lockable.hpp: one asynchronous grant
class async_acquire;  // src/async/acquire.hpp: one acquire in flight
class async_access;
class lease_watchdog;
} // namespace detail

/// A bounded pool of threads that run the acquires and releases of asynchronous locks whose
/// async_options::on_workers is set. Other locks do not use it: their acquires and releases
/// run on fibers of the lock's executor, whose waits (libpq's non-blocking interface, MariaDB
/// Connector/C's socket-wait hook, SQLite's busy handler and waiter queue) suspend the fiber
/// instead of blocking a thread (docs: guides/async.md). Acquires with
/// time to wait first queue in their process's line for the lock (no thread: see async_mutex); a
/// line's head, and a try, occupies one of its `size()` threads until it completes (granted, timed
/// out, cancelled or failed); heads beyond that wait for a free thread, in the order they came.
/// Cancelling an acquire that waits (in the line or for a thread) completes it at once, and one
/// timer thread ends it at its deadline (an empty guard). Releases run on threads of their own (up
/// to `size()` more, started as releases come), so that a release never waits behind acquires
/// (which may be waiting for that very release).
///
/// A handle: copies share one pool, whose threads end when the last copy and the last
/// operation or grant using it are gone. Thread safety: all members, from any thread.
class async_workers {
public:
    /// The process-wide pool: default_size threads, started on first use, shared by every
    /// asynchronous lock made without a pool of its own.
    async_workers();
    /// A pool of its own with `threads` threads for acquires (1 to 1024; else
    /// errc::invalid_argument), as many for releases, and one timer thread. Threads start on
    /// first use.
    explicit async_workers(std::size_t threads);
    /// The number of threads for acquires.
    std::size_t size() const noexcept;
    /// Threads of the process-wide pool.
    static constexpr std::size_t default_size = 4;

private:
    friend class detail::async_access;
    std::shared_ptr<detail::worker_pool> m_pool;
};

/// Settings of an asynchronous lock beyond its primitive's own options.
struct async_options {
    /// The threads its blocking work runs on (default: the process-wide pool).
    async_workers workers{};
    /// Run its acquires and releases on `workers` instead of on fibers of the lock's executor.
    /// For SQLite on a disk: a statement's own writes (a grant's commit and its fsync,
    /// milliseconds on a disk) then never run on your I/O threads, at the cost of four thread
    /// hand-offs per acquire and release; waits for other holders block a worker then, not a
    /// fiber.
    bool on_workers = false;
};

namespace detail {

/// What kind of grant an acquire asks for.
enum class acquire_mode { exclusive, shared };

/// How an acquire ended, as the library reports it (the header maps it onto Asio's forms).
struct acquire_result {
    enum class outcome { granted, timed_out, cancelled, failed } how = outcome::failed;
    std::exception_ptr error;           ///< failed: what was thrown
    std::shared_ptr<async_grant> grant; ///< granted: the grant
};
using acquire_done = std::function<void(acquire_result)>;

/// The library's side of an asynchronous acquire (src/async/acquire.cpp).
struct async_calls {
    /// An acquire of `lockable` until `deadline` (steady clock; max: no deadline, min: one
    /// attempt) that calls `done` exactly once, on a worker thread or on the thread that
    /// cancels it. Not started yet: start() starts it.
    static std::shared_ptr<async_acquire> prepare(const std::shared_ptr<async_lockable>& lockable,
                                                  acquire_mode mode,
                                                  std::chrono::steady_clock::time_point deadline,
                                                  acquire_done done);
    /// Hands `op` to the workers.
    static void start(const std::shared_ptr<async_acquire>& op);
    /// Cancels `op` from any thread: `done` runs at once with outcome::cancelled if it still
    /// waits for a worker, else soon (see async_mutex::async_lock()). Never throws.
    static void cancel(async_acquire& op) noexcept;
    /// Gives `grant` back on a release thread, then calls `done` (when set) with how the
    /// grant ended, on that thread. Never throws.
    static void release(std::shared_ptr<async_grant> grant,
                        std::function<void(loss_reason)> done) noexcept;
    /// Cancels every acquire of `lockable` still in flight. Never throws.
    static void cancel_all(async_lockable& lockable) noexcept;
    /// The lock name of `lockable`.
    static const std::string& name(const async_lockable& lockable) noexcept;
    /// async_guard::lease_end() of `grant`.
    static std::chrono::steady_clock::time_point lease_end(const async_grant& grant) noexcept;
};

/// `ex` with outstanding work tracked: an operation keeps one from its start until it posted its
/// completion, so that the execution context's run() does not return before.
template <class Executor>
auto tracked(const Executor& ex) {
    return asio::prefer(ex, asio::execution::outstanding_work.tracked);
}

/// Calls `handler` with `args` through `work` (its associated executor, tracked()), after
/// clearing its cancellation slot. `work` goes only once the post returned.
template <class Handler, class Executor, class... Args>
void complete_later(std::shared_ptr<std::optional<Handler>> box, Executor work, Args... args) {
    asio::post(work, [box = std::move(box), ... args = std::move(args)]() mutable {
        auto slot = asio::get_associated_cancellation_slot(**box);
        if (slot.is_connected())
            slot.clear();
        Handler handler = std::move(**box);
        box->reset();
        std::move(handler)(std::move(args)...);
    });
}

/// The initiation of every asynchronous acquire (async_initiate).
struct initiate_acquire {
    template <class Handler>
    void operator()(Handler&& handler, std::shared_ptr<async_lockable> lockable, acquire_mode mode,
                    std::chrono::steady_clock::time_point deadline, asio::any_io_executor io) const;
};

/// An acquire of `lockable` until `deadline`, completing through `token` with
/// `void(std::exception_ptr, async_guard)`.
template <class CompletionToken>
auto async_acquire_until(const std::shared_ptr<async_lockable>& lockable, acquire_mode mode,
                         std::chrono::steady_clock::time_point deadline,
                         const asio::any_io_executor& io, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::exception_ptr, async_guard)>(
        initiate_acquire{}, token, lockable, mode, deadline, io);
}

} // namespace detail

/// One grant of an asynchronous lock: it, not a thread, owns the lock, so the coroutine or
/// callback chain that holds it may resume on any thread and release it there.
///
/// Empty (operator bool false) when default-made, moved from, released, or returned by a
/// timed try that timed out. Destroying or assigning over a guard that holds a grant gives
/// the grant back in the background (on a release thread of the lock's pool, or on PostgreSQL
/// on the lock's executor; never blocking the caller), as outstanding work of the lock's executor
/// until it is done (so its io_context::run() does not return before): a guard must not outlive
/// that executor's execution context. async_unlock() does the same and tells when it is done.
///
/// Re-entrancy: none. Each grant has an owner id of its own (one per guard), so asking the same
/// lock again while holding a guard waits like any other contender (until the first guard goes,
/// or the deadline): hand the guard down instead of locking twice.
///
/// Thread safety: the const members may be called from any thread, also while another thread
/// uses the guard; moving, assigning and async_unlock() need exclusive use.
class async_guard {
public:
    /// The executor a completion without an associated one runs on (the lock's).
    using executor_type = asio::any_io_executor;

    /// An empty guard.
    async_guard() = default;
    /// Takes over `other`'s grant; `other` is empty afterwards.
    async_guard(async_guard&& other) noexcept = default;
    /// Gives back this guard's grant (in the background), then takes over `other`'s.
    async_guard& operator=(async_guard&& other) noexcept;
    async_guard(const async_guard&) = delete;
    async_guard& operator=(const async_guard&) = delete;
    /// Gives the grant back in the background (never blocks, never throws).
    ~async_guard();

    /// True while the guard holds a grant, lost or not (see owns_lock()).
    explicit operator bool() const noexcept { return m_grant != nullptr; }
    /// True while the guard holds a grant that is certainly still valid: as
    /// mutex::owns_lock(), from any thread.
    bool owns_lock() const noexcept;
    /// The grant's fencing token; throws errc::lock_lost when the guard is empty.
    std::int64_t token() const;
    /// Why the grant was lost (loss_reason::none while valid or when empty).
    loss_reason lost_reason() const noexcept;
    /// Requested when the grant is lost (at the latest at lease_end()); a default token when
    /// empty.
    std::stop_token stop_token() const noexcept;
    /// The local end of the grant's lease on the steady clock: the grant is reported lost then
    /// unless a renewal moves it first (mutex_options::renew). Always before anyone else can be
    /// granted the lock. time_point::min() when empty.
    std::chrono::steady_clock::time_point lease_end() const noexcept;
    /// The lock name ("" when empty).
    const std::string& name() const noexcept;
    /// The executor given to completions without an associated one.
    executor_type get_executor() const noexcept { return m_executor; }

    /// Gives the grant back, asynchronously. Completion signature `void(sqlock::loss_reason)`:
    /// loss_reason::none when it was released normally, lost / unknown when it had been lost
    /// (or the release found it gone: another owner may have held it meanwhile). Runs the
    /// release on a release thread of the lock's pool (PostgreSQL: on the lock's executor, its
    /// waits costing no thread); never fails (a release that cannot be
    /// confirmed leaves the lease to expire at its TTL). The guard is empty as soon as this is
    /// called. Not cancellable: a release, once asked for, runs to its end. An empty guard
    /// completes at once with loss_reason::none.
    template <class CompletionToken>
    auto async_unlock(CompletionToken&& token) {
        return asio::async_initiate<CompletionToken, void(loss_reason)>(
            [](auto handler, std::shared_ptr<detail::async_grant> grant, executor_type io) {
                using handler_type = std::decay_t<decltype(handler)>;
                auto ex = detail::tracked(asio::get_associated_executor(handler, io));
                auto box = std::make_shared<std::optional<handler_type>>(std::move(handler));
                if (!grant) {
                    detail::complete_later(std::move(box), std::move(ex), loss_reason::none);
                    return;
                }
                detail::async_calls::release(std::move(grant), [box, ex](loss_reason how) mutable {
                    detail::complete_later(std::move(box), std::move(ex), how);
                });
            },
            token, std::move(m_grant), m_executor);
    }

private:
    friend struct detail::initiate_acquire;
    friend class detail::lease_watchdog;
    async_guard(std::shared_ptr<detail::async_grant> grant, executor_type executor)
        : m_grant(std::move(grant)), m_executor(std::move(executor)) {}
    std::shared_ptr<detail::async_grant> m_grant;
    executor_type m_executor;
};

/// A distributed mutex, as sqlock::mutex (same database rows, strategies, fencing, renewal and
/// lost signal: sync and async holders exclude each other), with asynchronous acquires that
/// never block the caller's thread.
///
/// Every acquire takes an Asio completion token (asio::use_awaitable, a callback,
/// asio::use_future, ...) and completes with signature `void(std::exception_ptr,
/// sqlock::async_guard)`: a coroutine gets the guard or the exception thrown; a callback gets
/// both. The completion runs on the handler's associated executor (default: this lock's).
/// Errors are those of the sync calls (sqlock::error); a cancelled acquire fails with
/// std::system_error(asio::error::operation_aborted).
///
/// Cancellation: per operation, through the handler's associated cancellation slot (for
/// example asio::bind_cancellation_slot, or cancelling the coroutine awaiting it); terminal,
/// partial and total requests all cancel, as does cancel() and destroying this object. An
/// acquire still waiting for a worker completes at once; one in progress gives up at its next
/// look at the request: at most 100 ms into a wait in this process (PostgreSQL: at once), at
/// most 1 s into a wait in the server or in SQLite's waiter queue (PostgreSQL: at once, the
/// server is asked to cancel the statement), plus the statement in flight. A cancelled acquire
/// never leaves the lock held: a grant that lands after the request is given back at once.
///
/// Where the waiting happens: acquires with time to wait of one process on one lock (same
/// database, primitive and name, from any object) queue in a line of that process, an entry
/// each, no thread: only its head asks the database, and only while this process's grants of
/// the lock leave room (for a mutex: none held); the others wait for it, in order. A queued
/// acquire completes at its deadline (empty guard) or at once when cancelled. Tries never
/// queue. The head's work runs on a fiber of the lock's executor (its waits suspend the fiber:
/// no thread waits), or on the threads of async_options::workers with
/// async_options::on_workers.
///
/// Thread safety: all members may be called from any thread. Acquires in flight when this
/// object is destroyed are cancelled; guards outlive it.
///
/// Lifetime of executors: an operation counts as outstanding work on its completion's executor
/// from its start until its completion has been posted there (so io_context::run() does not
/// return before), and a worker thread posts that completion; stopping and destroying the
/// execution context while operations are in flight is undefined, as for Asio's own I/O objects.
class async_mutex {
public:
    /// The executor completions run on when the handler has none of its own.
    using executor_type = asio::any_io_executor;

    /// Validates like sqlock::mutex (errc::invalid_argument, errc::unsupported). Does not
    /// contact the database.
    async_mutex(executor_type executor, database db, std::string name, mutex_options options = {},
                async_options async = {});
    /// Cancels the acquires still in flight (never blocks); guards stay valid.
    ~async_mutex();
    async_mutex(const async_mutex&) = delete;
    async_mutex& operator=(const async_mutex&) = delete;

    /// The executor given to completions without an associated one.
    executor_type get_executor() const noexcept { return m_executor; }
    /// The lock name.
    const std::string& name() const noexcept;
    /// Cancels every acquire of this object still in flight (operation_aborted). Never throws.
    void cancel() noexcept;

    /// Acquires the lock, waiting as long as it takes (as mutex::lock()). Completes with a
    /// guard that holds it.
    template <class CompletionToken>
    auto async_lock(CompletionToken&& token) {
        return initiate(std::chrono::steady_clock::time_point::max(),
                        std::forward<CompletionToken>(token));
    }
    /// One attempt, no waiting for the lock (as mutex::try_lock()): completes with an empty
    /// guard when someone else holds it.
    template <class CompletionToken>
    auto async_try_lock(CompletionToken&& token) {
        return initiate(std::chrono::steady_clock::time_point::min(),
                        std::forward<CompletionToken>(token));
    }
    /// Acquires the lock, giving up after `rel` (steady clock, from this call; time spent
    /// waiting for a worker counts, see async_workers): completes with an empty guard then.
    template <class Rep, class Period, class CompletionToken>
    auto async_try_lock_for(const std::chrono::duration<Rep, Period>& rel,
                            CompletionToken&& token) {
        return initiate(detail::steady_deadline(rel), std::forward<CompletionToken>(token));
    }
    /// As async_try_lock_for(), with an absolute deadline on any clock.
    template <class Clock, class Duration, class CompletionToken>
    auto async_try_lock_until(const std::chrono::time_point<Clock, Duration>& abs,
                              CompletionToken&& token) {
        return initiate(detail::steady_deadline(abs), std::forward<CompletionToken>(token));
    }

private:
    template <class CompletionToken>
    auto initiate(std::chrono::steady_clock::time_point deadline, CompletionToken&& token) {
        return detail::async_acquire_until(m_lockable, detail::acquire_mode::exclusive, deadline,
                                           m_executor, std::forward<CompletionToken>(token));
    }

    executor_type m_executor;
    std::shared_ptr<detail::async_lockable> m_lockable;
};

/// Leader election, as sqlock::leader_election (the same lock row: synchronous and
/// asynchronous electors of one name compete in one election), campaigning asynchronously.
///
/// A won campaign completes with a guard that is the term: guard.token() is the term (fence
/// what the leader writes with it), guard.stop_token() is requested when leadership is lost,
/// and releasing the guard resigns. Leadership is renewed on its own (every ttl/3) while the
/// guard holds it; run_while_held() stops the leader's work before a term can end unnoticed.
///
/// Each campaign is an elector of its own: a second campaign on this object while a guard
/// leads waits for that term to end (it does not return the current term, as
/// leader_election::campaign() does). Completions, cancellation, workers and thread safety as
/// for async_mutex. To see who leads without campaigning, use leader_election::leader()
/// (blocking: one SELECT).
class async_leader_election {
public:
    /// The executor completions run on when the handler has none of its own.
    using executor_type = asio::any_io_executor;

    /// Validates like sqlock::leader_election (errc::invalid_argument). Does not contact the
    /// database and does not campaign.
    async_leader_election(executor_type executor, database db, std::string name,
                          leader_options options = {}, async_options async = {});
    /// Cancels the campaigns still in flight (never blocks); guards (terms) stay valid.
    ~async_leader_election();
    async_leader_election(const async_leader_election&) = delete;
    async_leader_election& operator=(const async_leader_election&) = delete;

    /// The executor given to completions without an associated one.
    executor_type get_executor() const noexcept { return m_executor; }
    /// The election name.
    const std::string& name() const noexcept;
    /// Cancels every campaign of this object still in flight. Never throws.
    void cancel() noexcept;

    /// Campaigns until elected; completes with the term's guard.
    template <class CompletionToken>
    auto async_campaign(CompletionToken&& token) {
        return detail::async_acquire_until(m_lockable, detail::acquire_mode::exclusive,
                                           std::chrono::steady_clock::time_point::max(), m_executor,
                                           std::forward<CompletionToken>(token));
    }
    /// Campaigns for at most `rel` (steady clock, from this call): an empty guard when not
    /// elected by then.
    template <class Rep, class Period, class CompletionToken>
    auto async_try_campaign_for(const std::chrono::duration<Rep, Period>& rel,
                                CompletionToken&& token) {
        return detail::async_acquire_until(m_lockable, detail::acquire_mode::exclusive,
                                           detail::steady_deadline(rel), m_executor,
                                           std::forward<CompletionToken>(token));
    }

private:
    executor_type m_executor;
    std::shared_ptr<detail::async_lockable> m_lockable;
};

/// A counting semaphore, as sqlock::semaphore (the same permits "NAME<0x1f>permit K", queue,
/// strategies, fencing, renewal and lost signal: sync and async holders share its permits),
/// acquired asynchronously. A guard holds one permit: guard.token() is that permit's fencing
/// token (strictly greater than every earlier grant of the same permit; tokens of different
/// permits are not ordered against each other).
///
/// Completions, cancellation (a permit granted after the request is given back before the
/// cancel is reported), workers, lifetime of executors and thread safety as for async_mutex.
/// Re-entrancy: none; each acquire is a holder of its own, so N guards of one object hold N
/// permits, and one more acquire waits until a guard goes.
class async_semaphore {
public:
    /// The executor completions run on when the handler has none of its own.
    using executor_type = asio::any_io_executor;

    /// Validates like sqlock::semaphore (errc::invalid_argument, errc::unsupported). Does not
    /// contact the database.
    async_semaphore(executor_type executor, database db, std::string name, std::int64_t permits,
                    semaphore_options options = {}, async_options async = {});
    /// Cancels the acquires still in flight (never blocks); guards stay valid.
    ~async_semaphore();
    async_semaphore(const async_semaphore&) = delete;
    async_semaphore& operator=(const async_semaphore&) = delete;

    /// The executor given to completions without an associated one.
    executor_type get_executor() const noexcept { return m_executor; }
    /// The semaphore's name.
    const std::string& name() const noexcept;
    /// The number of permits this object admits.
    std::int64_t permits() const noexcept { return m_permits; }
    /// Cancels every acquire of this object still in flight (operation_aborted). Never throws.
    void cancel() noexcept;

    /// Takes a permit, waiting in turn as long as it takes (as semaphore::acquire()).
    /// Completes with a guard that holds it.
    template <class CompletionToken>
    auto async_acquire(CompletionToken&& token) {
        return initiate(std::chrono::steady_clock::time_point::max(),
                        std::forward<CompletionToken>(token));
    }
    /// One round over the permits, never queued (as semaphore::try_acquire()): an empty guard
    /// when every permit is taken.
    template <class CompletionToken>
    auto async_try_acquire(CompletionToken&& token) {
        return initiate(std::chrono::steady_clock::time_point::min(),
                        std::forward<CompletionToken>(token));
    }
    /// Takes a permit, giving up after `rel` (steady clock, from this call): an empty guard
    /// then.
    template <class Rep, class Period, class CompletionToken>
    auto async_try_acquire_for(const std::chrono::duration<Rep, Period>& rel,
                               CompletionToken&& token) {
        return initiate(detail::steady_deadline(rel), std::forward<CompletionToken>(token));
    }
    /// As async_try_acquire_for(), with an absolute deadline on any clock.
    template <class Clock, class Duration, class CompletionToken>
    auto async_try_acquire_until(const std::chrono::time_point<Clock, Duration>& abs,
                                 CompletionToken&& token) {
        return initiate(detail::steady_deadline(abs), std::forward<CompletionToken>(token));
    }

private:
    template <class CompletionToken>
    auto initiate(std::chrono::steady_clock::time_point deadline, CompletionToken&& token) {
        return detail::async_acquire_until(m_lockable, detail::acquire_mode::exclusive, deadline,
                                           m_executor, std::forward<CompletionToken>(token));
    }

    executor_type m_executor;
    std::shared_ptr<detail::async_lockable> m_lockable;
    std::int64_t m_permits;
};

/// A reader-writer lock, as sqlock::shared_mutex (the same writer gate and reader permits:
/// sync and async holders exclude each other; writers are not starved), taken exclusively or
/// shared, asynchronously.
///
/// An exclusive guard's token() is the largest token of its leases (greater than every earlier
/// grant's in either mode); a shared guard's is its reader permit's. A guard's lease_end() is
/// the earliest local lease end among its leases, and its stop_token() is requested when any
/// of them is lost, so run_while_held() stops a writer's work before any of them can end.
///
/// Completions, cancellation, workers, lifetime of executors and thread safety as for
/// async_mutex. Re-entrancy: none; each acquire is a holder of its own, in either mode (no
/// upgrade or downgrade either: give the guard back, then ask in the other mode).
class async_shared_mutex {
public:
    /// The executor completions run on when the handler has none of its own.
    using executor_type = asio::any_io_executor;

    /// Validates like sqlock::shared_mutex (errc::invalid_argument, errc::unsupported). Does
    /// not contact the database.
    async_shared_mutex(executor_type executor, database db, std::string name,
                       mutex_options options = {}, std::int64_t max_readers = default_max_readers,
                       async_options async = {});
    /// Cancels the acquires still in flight (never blocks); guards stay valid.
    ~async_shared_mutex();
    async_shared_mutex(const async_shared_mutex&) = delete;
    async_shared_mutex& operator=(const async_shared_mutex&) = delete;

    /// The executor given to completions without an associated one.
    executor_type get_executor() const noexcept { return m_executor; }
    /// The name.
    const std::string& name() const noexcept;
    /// Readers admitted at once.
    std::int64_t max_readers() const noexcept { return m_max_readers; }
    /// Cancels every acquire of this object still in flight, in both modes. Never throws.
    void cancel() noexcept;

    /// Exclusive, waiting as long as it takes (as shared_mutex::lock()).
    template <class CompletionToken>
    auto async_lock(CompletionToken&& token) {
        return initiate(detail::acquire_mode::exclusive,
                        std::chrono::steady_clock::time_point::max(),
                        std::forward<CompletionToken>(token));
    }
    /// Exclusive, one attempt (as shared_mutex::try_lock()): an empty guard when taken.
    template <class CompletionToken>
    auto async_try_lock(CompletionToken&& token) {
        return initiate(detail::acquire_mode::exclusive,
                        std::chrono::steady_clock::time_point::min(),
                        std::forward<CompletionToken>(token));
    }
    /// Exclusive, giving up after `rel`: an empty guard then.
    template <class Rep, class Period, class CompletionToken>
    auto async_try_lock_for(const std::chrono::duration<Rep, Period>& rel,
                            CompletionToken&& token) {
        return initiate(detail::acquire_mode::exclusive, detail::steady_deadline(rel),
                        std::forward<CompletionToken>(token));
    }
    /// Shared, waiting as long as it takes (after any writer that came first).
    template <class CompletionToken>
    auto async_lock_shared(CompletionToken&& token) {
        return initiate(detail::acquire_mode::shared, std::chrono::steady_clock::time_point::max(),
                        std::forward<CompletionToken>(token));
    }
    /// Shared, one round over the reader permits: an empty guard when a writer holds or waits,
    /// or every permit is taken.
    template <class CompletionToken>
    auto async_try_lock_shared(CompletionToken&& token) {
        return initiate(detail::acquire_mode::shared, std::chrono::steady_clock::time_point::min(),
                        std::forward<CompletionToken>(token));
    }
    /// Shared, giving up after `rel`: an empty guard then.
    template <class Rep, class Period, class CompletionToken>
    auto async_try_lock_shared_for(const std::chrono::duration<Rep, Period>& rel,
                                   CompletionToken&& token) {
        return initiate(detail::acquire_mode::shared, detail::steady_deadline(rel),
                        std::forward<CompletionToken>(token));
    }

private:
    template <class CompletionToken>
    auto initiate(detail::acquire_mode mode, std::chrono::steady_clock::time_point deadline,
                  CompletionToken&& token) {
        return detail::async_acquire_until(m_lockable, mode, deadline, m_executor,
                                           std::forward<CompletionToken>(token));
    }

    executor_type m_executor;
    std::shared_ptr<detail::async_lockable> m_lockable;
    std::int64_t m_max_readers;
};

namespace detail {

template <class Handler>
void initiate_acquire::operator()(Handler&& handler, std::shared_ptr<async_lockable> lockable,
                                  acquire_mode mode, std::chrono::steady_clock::time_point deadline,
                                  asio::any_io_executor io) const {
    using handler_type = std::decay_t<Handler>;
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto ex = tracked(asio::get_associated_executor(handler, io));
    auto box = std::make_shared<std::optional<handler_type>>(std::forward<Handler>(handler));
    // Called once, on a worker thread or the cancelling one: hands everything it holds to the
    // completion (nothing of the result, an exception least of all, is released on that thread
    // after the handler may have run).
    auto done = [box, ex, io](acquire_result r) mutable {
        using how = acquire_result::outcome;
        std::exception_ptr error;
        async_guard guard;
        if (r.how == how::granted)
            guard = async_guard(std::move(r.grant), std::move(io));
        else if (r.how == how::cancelled)
            error = std::make_exception_ptr(
                std::system_error(make_error_code(asio::error::operation_aborted)));
        else if (r.how == how::failed)
            error = std::move(r.error);
        complete_later(std::move(box), std::move(ex), std::move(error), std::move(guard));
    };
    auto op = async_calls::prepare(lockable, mode, deadline, std::move(done));
    if (slot.is_connected())
        slot.assign([op](asio::cancellation_type type) {
            if (type != asio::cancellation_type::none)
                async_calls::cancel(*op);
        });
    async_calls::start(op);
}

} // namespace detail

#if defined(ASIO_HAS_CO_AWAIT)

namespace detail {

/// run_while_held()'s watch over one grant, on a strand shared with the work: cancels the work
/// (terminal) once the grant is lost, or once less than the stop bound is left before its
/// lease's local end (looked at again when that time comes: renewals move it on).
class lease_watchdog : public std::enable_shared_from_this<lease_watchdog> {
public:
    using strand_type = asio::strand<asio::any_io_executor>;
    lease_watchdog(strand_type strand, const async_guard& guard,
                   std::chrono::steady_clock::duration stop_bound)
        : m_strand(strand), m_timer(strand), m_grant(guard.m_grant), m_stop(guard.stop_token()),
          m_bound(stop_bound) {}

    /// On the strand, from the work's first step: starts watching.
    void arm() {
        auto self = shared_from_this();
        m_on_loss.emplace(m_stop,
                          [self] { asio::post(self->m_strand, [self] { self->fire(true); }); });
        wait();
    }
    /// From any thread, once the work ended: stops watching (on the strand).
    void disarm() {
        m_on_loss.reset();
        asio::post(m_strand, [self = shared_from_this()] {
            self->m_done = true;
            self->m_timer.cancel();
        });
    }
    /// The slot the work's cancellation is bound to.
    asio::cancellation_slot slot() { return m_signal.slot(); }
    /// From any thread: passes a cancellation of the caller on to the work (on the strand).
    void forward(asio::cancellation_type type) {
        asio::post(m_strand, [self = shared_from_this(), type] {
            if (!self->m_done)
                self->m_signal.emit(type);
        });
    }
    /// True once the watchdog cancelled the work; `lost()`: because the grant was lost.
    bool fired() const noexcept { return m_fired.load(); }
    bool lost() const noexcept { return m_lost.load(); }

private:
    void wait() {
        const auto end = async_calls::lease_end(*m_grant);
        if (end == std::chrono::steady_clock::time_point::min())
            return fire(true); // released or lost already
        m_timer.expires_at(end - m_bound);
        m_timer.async_wait([self = shared_from_this()](std::error_code) { self->on_timer(); });
    }
    void on_timer() {
        if (m_done || m_fired.load())
            return;
        const auto end = async_calls::lease_end(*m_grant);
        if (end != std::chrono::steady_clock::time_point::min() &&
            std::chrono::steady_clock::now() < end - m_bound)
            return wait(); // renewed meanwhile
        fire(false);
    }
    void fire(bool lost) {
        if (m_done || m_fired.load())
            return;
        m_lost = lost;
        m_fired = true;
        m_timer.cancel();
        m_signal.emit(asio::cancellation_type::terminal);
    }

    strand_type m_strand;
    asio::steady_timer m_timer;
    const std::shared_ptr<async_grant> m_grant;
    const std::stop_token m_stop;
    const std::chrono::steady_clock::duration m_bound;
    asio::cancellation_signal m_signal;
    std::optional<std::stop_callback<std::function<void()>>> m_on_loss;
    bool m_done = false; ///< on the strand only
    std::atomic<bool> m_fired{false};
    std::atomic<bool> m_lost{false};
};

/// The work, started on the strand: arms the watchdog first, so that every cancellation it
/// emits comes after co_spawn connected the work to its slot.
template <class T>
asio::awaitable<T> watched(std::shared_ptr<lease_watchdog> dog, asio::awaitable<T> work) {
    dog->arm();
    co_return co_await std::move(work);
}

/// The error run_while_held() throws for work the watchdog cancelled.
inline error cancelled_for_lease(const std::string& name, bool lost) {
    return error(errc::lock_lost,
                 "work under lock \"" + name + "\" was cancelled: " +
                     (lost ? std::string("the lock was lost")
                           : std::string("its lease was about to end (no renewal got through)")));
}

} // namespace detail

/// Runs `work` while `guard` holds its lock and cancels it (terminal cancellation of the
/// operation it awaits) before the lease can end: at once when the grant is lost, and once
/// less than `stop_bound` is left before the lease's local end (async_guard::lease_end(): the
/// last acquire or renewal + TTL − the safety margin), unless a renewal moved that end on. So
/// work that stops within `stop_bound` of being cancelled has stopped before anyone else can
/// be granted the lock. Renewal (mutex_options::renew) keeps long work running; without it the
/// work is cancelled stop_bound before its single lease ends.
///
/// Cancellation is cooperative: `work` must let the cancellation end it (Asio operations do,
/// with operation_aborted) and must not outlast `stop_bound` afterwards. `work` runs on a
/// strand of the caller's executor. Returns what `work` returns; when `work` ends with an
/// exception after the watchdog cancelled it, throws errc::lock_lost instead, saying why (the
/// guard keeps the grant either way: release it next). Throws errc::lock_lost at once when the
/// guard holds no valid grant, errc::invalid_argument for a negative stop bound.
///
/// Cancelling the coroutine that awaits run_while_held() cancels `work` the same way (its
/// exception is then rethrown as it is).
///
/// Thread: the caller's coroutine; `guard` must outlive the call.
template <class T, class Rep, class Period>
asio::awaitable<T> run_while_held(const async_guard& guard, asio::awaitable<T> work,
                                  std::chrono::duration<Rep, Period> stop_bound) {
    const auto bound = std::chrono::ceil<std::chrono::steady_clock::duration>(stop_bound);
    if (bound.count() < 0)
        throw error(errc::invalid_argument, "run_while_held: negative stop bound");
    if (!guard.owns_lock())
        throw error(errc::lock_lost, "run_while_held: the guard holds no valid grant of lock \"" +
                                         guard.name() + "\"");
    auto strand = asio::make_strand(co_await asio::this_coro::executor);
    auto dog = std::make_shared<detail::lease_watchdog>(strand, guard, bound);
    std::exception_ptr failure;
    std::optional<std::conditional_t<std::is_void_v<T>, bool, T>> result;
    // Cancelling the caller cancels the work too.
    asio::cancellation_state caller_state = co_await asio::this_coro::cancellation_state;
    auto caller = caller_state.slot();
    if (caller.is_connected())
        caller.assign([dog](asio::cancellation_type type) { dog->forward(type); });
    try {
        auto spawned =
            asio::co_spawn(strand, detail::watched<T>(dog, std::move(work)),
                           asio::bind_cancellation_slot(dog->slot(), asio::use_awaitable));
        if constexpr (std::is_void_v<T>) {
            co_await std::move(spawned);
            result.emplace(true);
        } else {
            result.emplace(co_await std::move(spawned));
        }
    } catch (...) {
        failure = std::current_exception();
    }
    if (caller.is_connected())
        caller.clear();
    dog->disarm();
    if (failure) {
        if (dog->fired())
            throw detail::cancelled_for_lease(guard.name(), dog->lost());
        std::rethrow_exception(failure);
    }
    if constexpr (!std::is_void_v<T>)
        co_return std::move(*result);
}

#endif // ASIO_HAS_CO_AWAIT

} // namespace sqlock
