// Internal: wake-ups. Waiters of this process learn of local releases through a wake_hub and
// of other processes' releases through notifications on their own session (PostgreSQL); local
// turnstiles queue a process's own waiters for one name, so only one of them asks the database.
#pragma once

#include "base/session.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sqlock::detail {

/// How often a waiter on a fiber (io_wait.hpp) looks again at what a thread would wait for on
/// a condition variable: a local wake-up, a free turnstile.
inline constexpr std::chrono::milliseconds fiber_poll{5};

/// Local wake-ups for waiters. Every name has a generation that moves when its lock may have
/// become free in this process (a local unlock). Releases by other processes reach a waiter
/// as notifications on its own session instead (await(), PostgreSQL).
class wake_hub {
public:
    std::uint64_t generation(const std::string& name);
    /// Moves `name`'s generation and wakes its waiters.
    void wake(const std::string& name);
    /// Waits until `name`'s generation differs from `seen` or `until` passes.
    void wait(const std::string& name, std::uint64_t seen,
              std::chrono::steady_clock::time_point until);
    /// Waits until `name` may have become free or `until` passes: a release notification on
    /// `s` (when it listens) or a local wake-up (the generation differs from `seen`). With
    /// `any_starting_with`, a notification for any name that starts with `name` counts.
    /// Throws nothing: a broken session ends the wait.
    void await(session* s, const std::string& name, std::uint64_t seen,
               std::chrono::steady_clock::time_point until, bool any_starting_with);

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::unordered_map<std::string, std::uint64_t> m_generations;
};

/// One-at-a-time admission for the threads of this process that wait for one lock name.
/// (A mutex + condition variable rather than std::timed_mutex: its timed lock goes through
/// pthread_mutex_clocklock, which ThreadSanitizer cannot see.)
class turnstile {
public:
    /// Waits until the turnstile is free or `deadline` passes (time_point::max(): forever).
    bool enter(std::chrono::steady_clock::time_point deadline);
    void leave() noexcept;

private:
    /// enter() on a fiber (io_wait.hpp), which must not block its thread: asks every
    /// fiber_poll; false also when the fiber's waiter was stopped.
    bool enter_on_fiber(std::chrono::steady_clock::time_point deadline);

    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_busy = false;
};

/// Subscribes `s` to release notifications on `channel` (a no-op when it listens already).
/// False when the session cannot listen or failed (the next statement on it reports what
/// broke). Never throws.
bool listen_on(session& s, const std::string& channel) noexcept;

/// The per-name turnstiles of one database handle.
class gate_table {
public:
    /// The turnstile for `name`, shared by every thread that waits for it now.
    std::shared_ptr<turnstile> gate(const std::string& name);

private:
    std::mutex m_mutex;
    std::unordered_map<std::string, std::weak_ptr<turnstile>> m_gates;
};

} // namespace sqlock::detail
