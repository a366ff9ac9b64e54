// Internal: the door from sqlock's own locks to the members of sqlock::mutex that applications
// do not get (mutex.hpp befriends this type and nothing else). A semaphore's permits and queue
// and a shared_mutex's writer gate are mutexes with reserved names, and a permit's acquire may
// be held back for the lock's queue or gate.
#pragma once

#include "sqlock/database.hpp"
#include "sqlock/mutex.hpp"

#include <array>
#include <chrono>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

namespace sqlock::detail {

class mutex_access {
public:
    /// One of sqlock's own locks: `name` is "NAME<0x1f>ROLE" with NAME valid as a mutex's name
    /// and ROLE printable, the whole at most max_name_length bytes (errc::invalid_argument
    /// otherwise). Does not contact the database.
    static std::unique_ptr<mutex> make_reserved(database db, std::string name,
                                                mutex_options options) {
        return std::unique_ptr<mutex>(new mutex(mutex::reserved_name_t{}, std::move(db),
                                                std::move(name), std::move(options)));
    }

    /// m.try_lock() for a semaphore's permits: a new grant is held back while another owner
    /// holds a lock named in `defer_to` (its queue, a writer gate); returns false then, with a
    /// bit per held name in `deferred` (0: not held back).
    static bool try_lock_deferring(mutex& m, const std::array<std::string_view, 2>& defer_to,
                                   unsigned& deferred) {
        deferred = 0;
        return m.try_lock_until_steady(std::chrono::steady_clock::time_point::min(), &defer_to,
                                       &deferred);
    }

    /// Makes `m`'s grants belong to `m` itself rather than to the thread that locked it
    /// (asynchronous locks, src/async): any thread may then unlock it and read its token,
    /// and a lock call while it is held re-enters, whichever thread makes it, so the caller
    /// must keep one grant per object. Its owner id is one per object (thread number 0).
    /// Call before the first lock call. Never throws.
    static void own_by_handle(mutex& m) noexcept;

    /// m.try_lock_until(deadline) that also gives up soon after `stop` is requested: false
    /// then, with nothing held. Waits look at `stop` at least every 100 ms; a wait in the
    /// server (a row lock, a server-side queue) lasts at most 1 s per attempt; a statement in
    /// flight is not interrupted. A grant that lands after the request is still a grant (true):
    /// the caller gives it back. Throws like try_lock_until().
    static bool try_lock_cancellable(mutex& m, std::chrono::steady_clock::time_point deadline,
                                     const std::stop_token& stop);

    /// The local end of the lease of m's current grant (for a handle-owned m: its grant),
    /// which renewals move on; time_point::min() when none is held. Never throws.
    static std::chrono::steady_clock::time_point lease_end(const mutex& m) noexcept;
};

} // namespace sqlock::detail
