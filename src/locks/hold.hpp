// Internal: one held grant, shared between the mutex that owns it and the process-wide lease
// keeper that renews it and watches its deadline.
#pragma once

#include "base/io_wait.hpp"
#include "database/database_impl.hpp"
#include "sqlock/mutex.hpp"
#include "strategies/strategy.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

namespace sqlock::detail {

/// active_hold::op_mutex: a lock that any thread may give back, not only the one that took it.
/// An asynchronous PostgreSQL release runs on a fiber (src/async/fiber_host.hpp), which holds
/// it across the release statement's wait and may resume on another thread of its executor;
/// a std::mutex must be unlocked by the thread that locked it. lock() blocks the thread: on a
/// fiber, use lock_op() below instead.
class op_lock {
public:
    void lock() noexcept {
        while (m_held.exchange(true, std::memory_order_acquire))
            m_held.wait(true, std::memory_order_relaxed);
    }
    bool try_lock() noexcept { return !m_held.exchange(true, std::memory_order_acquire); }
    void unlock() noexcept {
        m_held.store(false, std::memory_order_release);
        m_held.notify_one(); // no system call unless a thread waits
    }

private:
    std::atomic<bool> m_held{false};
};

/// Takes `op` for the caller: on a fiber (base/io_wait.hpp) by polling between pauses of 1 ms,
/// so that its thread is not blocked while the lease keeper's renewal holds it (one round
/// trip); elsewhere by blocking. The caller unlocks it (a std::lock_guard with adopt_lock).
inline void lock_op(op_lock& op) {
    if (!on_fiber()) {
        op.lock();
        return;
    }
    while (!op.try_lock())
        pause_for(std::chrono::milliseconds(1));
}

/// Lets a lock object's destructor wait out its callbacks. on_lost and on_at_risk run on the
/// lease keeper's threads and may use the object's state (a shared_mutex's permits call into
/// it): each call runs under the gate's lock while the gate is open; close() waits for a call
/// in progress (unless it is made from that very call) and keeps later ones from running.
struct callback_gate {
    std::recursive_mutex mutex;
    bool open = true;

    void close() noexcept {
        std::lock_guard lock(mutex);
        open = false;
    }
};

/// `callback` behind `gate` (an empty function stays empty).
template <class Event>
std::function<void(const Event&)> gated(const std::shared_ptr<callback_gate>& gate,
                                        std::function<void(const Event&)> callback) {
    if (!callback)
        return nullptr;
    return [gate, callback = std::move(callback)](const Event& event) {
        std::lock_guard lock(gate->mutex);
        if (gate->open)
            callback(event);
    };
}

struct active_hold {
    // Fixed at acquisition.
    std::shared_ptr<database_impl> db;
    std::shared_ptr<lock_strategy> strategy;
    std::string name;
    std::string owner;
    std::chrono::milliseconds ttl{};
    std::thread::id thread;
    bool renew = false;
    std::function<void(const lock_lost_event&)> on_lost;
    std::function<void(const lock_at_risk_event&)> on_at_risk;
    std::stop_source stop;

    /// Serialises database work on this grant (the owner's re-entry/release and the keeper's
    /// renewal): a pinned select_for_update session is used by one thread at a time.
    op_lock op_mutex;

    /// Guards everything below; never held during database work.
    mutable std::mutex state_mutex;
    grant current;
    loss_reason reason = loss_reason::none;
    std::string message;
    bool released = false; ///< the owner gave it back
    /// The owner's last unlock() is under way on a valid hold: the lease ending while its
    /// release waits (a failover, a slow server) is no loss, for the holder's work is done.
    bool releasing = false;
    std::chrono::steady_clock::time_point next_renewal{}; ///< when the keeper renews next
    bool last_renewal_failed = false; ///< the database did not answer the last renewal
    bool renewal_in_flight = false;   ///< a renewal was sent and has not returned yet
    bool told_at_risk = false;        ///< on_at_risk's last call said at risk

    lock_request request() const { return lock_request{name, owner, ttl}; }

    /// Records the loss once: requests stop and calls on_lost (outside the state lock).
    /// Returns false when the hold was already lost, released or being released.
    bool mark_lost(loss_reason why, const std::string& what);

    /// True while not lost, not released, and before the local end of the lease.
    bool valid(std::chrono::steady_clock::time_point now) const;

    /// Tells on_at_risk when the lease's risk changed since its last call (at risk: the last
    /// renewal failed, or less than half the TTL is left at `now`). Returns when to look
    /// again: the time it becomes at risk, or time_point::max(). Lost or released: nothing.
    std::chrono::steady_clock::time_point update_risk(std::chrono::steady_clock::time_point now);
};

/// The process-wide background work for held locks: one thread renews every lease that asked
/// for it at ttl/3; one watchdog marks a hold lost at its local deadline if no renewal was
/// confirmed by then (it never talks to a database, so a hung server cannot delay it).
class lease_keeper {
public:
    static lease_keeper& instance();
    void track(const std::shared_ptr<active_hold>& hold);
    /// Wakes the threads to look at the holds again (a new deadline or renewal time).
    void poke();

private:
    /// Wakes the watchdog (a renewal's outcome changed a lease's risk).
    void wake_watch();
    /// Records a renewal of `h` that failed with `what` (tried again at ttl/10; `next`: the
    /// renewal thread's next wake-up) and wakes the watchdog to tell on_at_risk.
    void note_failed_renewal(active_hold& h, const std::string& what,
                             std::chrono::steady_clock::time_point& next);
    /// The renewal thread's look at `h`: renews it when due (reporting a loss or a failed
    /// renewal), and lowers `next` to when `h` wants to be looked at again.
    void renew_if_due(const std::shared_ptr<active_hold>& h,
                      std::chrono::steady_clock::time_point& next);
    /// Records that `renewed` (a renewal of `h`) got through: the lease is safe until its new
    /// end; lowers `next` to the following renewal.
    void note_renewal(active_hold& h, const grant& renewed,
                      std::chrono::steady_clock::time_point& next);
    lease_keeper() = default;
    void renew_loop();
    void watch_loop();
    void start_locked();

    std::mutex m_mutex;
    std::condition_variable m_renew_cv;
    std::condition_variable m_watch_cv;
    std::vector<std::weak_ptr<active_hold>> m_holds;
    bool m_started = false;
    /// When each thread will wake next (time_point::min() while it is awake and working, so a
    /// new hold is seen on its pass or by the wait's own deadline logic).
    std::chrono::steady_clock::time_point m_renew_wake =
        std::chrono::steady_clock::time_point::min();
    std::chrono::steady_clock::time_point m_watch_wake =
        std::chrono::steady_clock::time_point::min();
    bool m_renew_dirty = false; ///< a hold arrived that the renewal thread must look at
    bool m_watch_dirty = false; ///< the same for the watchdog
};

} // namespace sqlock::detail
