// Internal: a pool of N interchangeable locks ("permits") under one name, taken in turn. The
// engine of sqlock::semaphore (role "permit") and of sqlock::shared_mutex's readers (role
// "reader").
//
// Why permits are whole locks: each one then has everything a mutex has (strategy, fencing
// token, renewal, lost signal, takeover of a dead holder's lease, failover handling, status,
// reap), written once. Why a queue lock: polling waiters would race for a freed permit and
// the quickest asker would win every time; instead a waiter that found every permit taken
// waits its turn on "NAME<0x1f>ROLE queue" (a mutex, served in order where the backend queues), and
// only the queue's head tries the permits. Mutual exclusion never depends on the queue: the
// permits are the locks, the queue only decides who asks.
#pragma once

#include "sqlock/mutex.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace sqlock::detail {

class database_impl;

/// "NAME<0x1f>ROLE": the name of one of sqlock's own locks of primitive NAME.
std::string reserved_name(std::string_view name, std::string_view role);

/// Throws errc::invalid_argument when `name` is too long to be followed by a role
/// (max_semaphore_name_length); `kind` words the message. The rest of the checks (empty,
/// UTF-8, NUL, 0x1f) come with the first reserved lock made.
void validate_primitive_name(std::string_view name, std::string_view kind);

class permit_pool {
public:
    /// Permits "NAME<0x1f>ROLE K" for K in [0, count) with `options` (on_lost is told NAME and
    /// "ROLE K: ..."), and the queue lock "NAME<0x1f>ROLE queue". `kind` ("semaphore", "shared
    /// mutex") words the errors. Throws errc::invalid_argument for a bad name (as a mutex's,
    /// and at most max_name_length - 16 bytes) or count (1 to max_permits).
    /// With a `gate` (a shared mutex's writer lock, owned by the caller and outliving the
    /// pool), a caller that finds the gate held lets that writer go first: it passes through
    /// the gate (waits for it, then lets it go) before it takes a permit, and try-acquires
    /// fail while the gate is held.
    permit_pool(database db, std::string name, std::int64_t count, const mutex_options& options,
                std::string_view role, std::string_view kind, mutex* gate = nullptr);

    /// Makes the permits belong to this pool rather than to the thread that took one
    /// (asynchronous locks, src/async): it then holds at most one permit, which any thread may
    /// read and release (held_by_me() answers for every thread). Makes every permit's mutex
    /// owned by handle too (mutex_access::own_by_handle), and `gate` when given. Call before
    /// the first acquire(). Never throws.
    void own_by_handle(mutex* gate) noexcept;

    /// The permit the calling thread (owned by handle: the pool) holds through acquire() (a
    /// hold, possibly known lost, which its mutex keeps until unlocked), or nullopt.
    std::optional<std::size_t> held_by_me() const;

    /// Takes one permit for the calling thread, waiting in turn until `deadline`
    /// (time_point::min(): one round, no queue). A thread that holds one re-enters it. Errors
    /// as mutex::try_lock_until: retryable trouble is retried while time remains and a
    /// full server is waited out. With `stop`, also gives up (false, nothing held) soon after
    /// it is requested: its waits look at it at least every 100 ms (mutex_access::
    /// try_lock_cancellable); a permit granted after the request is still returned (true).
    bool acquire(std::chrono::steady_clock::time_point deadline,
                 const std::stop_token* stop = nullptr);

    /// Gives back one hold of the calling thread's permit; never throws. `what` words the
    /// error recorded when the thread holds none ("unlock() of semaphore").
    void release(std::string_view what) noexcept;

    std::size_t size() const noexcept { return m_permits.size(); }
    mutex& permit(std::size_t k) { return *m_permits[k]; }
    const mutex& permit(std::size_t k) const { return *m_permits[k]; }
    const std::string& name() const noexcept { return m_name; }
    /// The permit the most recent release() gave back, if any.
    std::optional<std::size_t> last_released() const;
    std::string last_error() const;
    /// Wakes this process's threads waiting for a permit (after permits were given back
    /// other than through release()).
    void wake_waiters();

private:
    database_impl& db() const;
    /// Whose permit m_held records: the calling thread's, or (owned by handle) the pool's.
    std::thread::id holder() const noexcept {
        return m_by_handle ? std::thread::id{} : std::this_thread::get_id();
    }
    /// SQLite: someone is in the queue lock's line (local_queue.hpp), so a caller that may
    /// wait queues too. False elsewhere.
    bool someone_queues_locally() const;
    /// lock_request::defer_to's entries (and attempt_state::deferred's bits): [0] the queue,
    /// [1] the writer gate.
    static constexpr std::size_t defer_queue = 0;
    static constexpr std::size_t defer_gate = 1;
    struct round {
        std::optional<std::size_t> granted; ///< the permit taken
        /// Not asked on: bit defer_queue, someone holds the queue (waits for a permit); bit
        /// defer_gate, a writer holds or waits for the gate (mutex_access::try_lock_deferring).
        unsigned deferred = 0;
        bool deferred_to(std::size_t which) const noexcept { return (deferred >> which) & 1u; }
    };
    /// One try at each permit, from a random one, each held back while another owner holds
    /// a lock in `defer_to` ([defer_queue], [defer_gate]; empty: not looked at).
    round one_round(const std::array<std::string_view, 2>& defer_to);
    /// One acquire() call's state across its rounds (permits.cpp).
    struct acquire_call;
    /// What a round of acquire() came to.
    enum class round_end {
        granted,     ///< a permit is held
        not_granted, ///< the deadline passed (or no time to wait)
        again,       ///< queued, or let a writer pass: another round at once
        wait,        ///< every permit taken: wait for a release, then another round
    };
    /// One round: asks for a permit (or queues first, not to overtake waiters), and follows a
    /// deferral to the queue or the writer gate. Throws sqlock::error from the database.
    round_end acquire_round(acquire_call& call);
    /// Between rounds: waits out a full server, or (the queue's head) for a release, at most
    /// to the deadline. False when the deadline has passed. Throws what cannot be waited out.
    bool pause_between_rounds(acquire_call& call, bool failed);
    mutex_options permit_options(std::string_view role, std::int64_t k) const;

    database m_db;
    std::string m_name;
    std::string m_kind;
    mutex_options m_options;
    std::vector<std::unique_ptr<mutex>> m_permits;
    std::unique_ptr<mutex> m_queue;
    mutex* m_gate = nullptr;
    bool m_by_handle = false; ///< own_by_handle(): set once, before the first acquire
    std::string m_wake_name;  ///< "NAME<0x1f>ROLE ": a prefix of every permit's name
    /// The last acquire had to wait: the next one queues at once, so that a releaser asking
    /// again does not overtake the waiters it handed over to.
    std::atomic<bool> m_contended{false};

    mutable std::mutex m_state_mutex; ///< guards the members below
    mutable std::unordered_map<std::thread::id, std::size_t> m_held;
    std::optional<std::size_t> m_last_released;
    std::string m_last_error;
};

} // namespace sqlock::detail
