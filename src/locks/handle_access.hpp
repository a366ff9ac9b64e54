// Internal: the door from the asynchronous locks (src/async) to a semaphore's and a shared
// mutex's members that applications do not get (their headers befriend this type): grants
// owned by the object rather than a thread, waits that give up on a stop request, and the
// local end of a grant's lease (for run_while_held's watchdog). Also the C API's cancellable
// campaign of a leader election.
#pragma once

#include "sqlock/leader.hpp"
#include "sqlock/semaphore.hpp"
#include "sqlock/shared_mutex.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>

namespace sqlock::detail {

class handle_access {
public:
    /// Makes `s`'s grant belong to `s` itself rather than to the thread that took it: any
    /// thread may then read it and release it, and `s` holds at most one permit (a second
    /// acquire re-enters it), so the caller keeps one grant per object. Its owner ids are one
    /// per permit object (thread number 0). Call before the first lock call. Never throws.
    static void own_by_handle(semaphore& s) noexcept;
    /// The same for `m`, in both modes (its writer gate and reader permits).
    static void own_by_handle(shared_mutex& m) noexcept;

    /// s.try_lock_until(deadline) that also gives up soon after `stop` is requested (false,
    /// nothing held): waits look at it at least every 100 ms, a wait in the server lasts at most
    /// 1 s per attempt (see mutex_access::try_lock_cancellable). A permit granted after the
    /// request is still a grant (true): the caller gives it back. Throws like try_lock_until().
    static bool try_lock_cancellable(semaphore& s, std::chrono::steady_clock::time_point deadline,
                                     const std::stop_token& stop);
    /// The same for m.try_lock_until() (exclusive) ...
    static bool try_lock_cancellable(shared_mutex& m,
                                     std::chrono::steady_clock::time_point deadline,
                                     const std::stop_token& stop);
    /// ... and for m.try_lock_shared_until().
    static bool try_lock_shared_cancellable(shared_mutex& m,
                                            std::chrono::steady_clock::time_point deadline,
                                            const std::stop_token& stop);

    /// e.try_campaign_until(deadline) (time_point::max(): campaign()) that also gives up soon
    /// after `stop` is requested (nullopt), as try_lock_cancellable; a term won after the request
    /// is still returned (the caller resigns). Throws like campaign().
    static std::optional<std::int64_t>
    try_campaign_cancellable(leader_election& e, std::chrono::steady_clock::time_point deadline,
                             const std::stop_token& stop);

    /// The local end of the lease of the permit `s` holds (owned by handle), which renewals
    /// move on; time_point::min() when it holds none. Never throws.
    static std::chrono::steady_clock::time_point lease_end(const semaphore& s) noexcept;
    /// The same for `m`'s grant: a reader's permit; for a writer the earliest of its gate's
    /// and permits' lease ends (its grant is lost when any of them is).
    static std::chrono::steady_clock::time_point lease_end(const shared_mutex& m) noexcept;
};

} // namespace sqlock::detail
