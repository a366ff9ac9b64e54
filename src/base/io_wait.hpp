// Internal: how the code below the asynchronous layer waits. Statements, connects and pauses of
// the lock protocol are written once, synchronously; where they wait (for a socket, for a
// time) they ask this hook. Without one (the synchronous API) they block the calling thread
// exactly as before (poll(), sleep_until); an asynchronous PostgreSQL acquire installs one for
// the fiber it runs on (src/async/fiber_host.cpp), which suspends the fiber instead and lets
// the I/O context run other work. No Asio here: the hook is an interface.
#pragma once

#include <algorithm>
#include <chrono>

namespace sqlock::detail {

/// The waits a fiber host provides. Called only on the fiber that installed it.
class io_wait {
public:
    using time_point = std::chrono::steady_clock::time_point;
    enum class fd_event { readable, writable };
    enum class outcome { ready, timed_out, stopped };

    virtual ~io_wait() = default;
    /// Suspends until `fd` is ready for `event`, `deadline` passes (time_point::max(): never)
    /// or, when `interruptible`, the waiter's stop is requested. Throws std::system_error when
    /// the descriptor cannot be waited on.
    virtual outcome wait_fd(int fd, fd_event event, time_point deadline, bool interruptible) = 0;
    /// Suspends until `until`, or until the waiter's stop is requested (outcome::stopped).
    virtual outcome pause_until(time_point until) = 0;
    /// True once the waiter's stop is requested: interruptible waits end at once from then on.
    virtual bool stop_requested() const noexcept = 0;
};

/// The hook of the calling thread (or fiber), or null: block the thread. Never throws.
io_wait* current_io_wait() noexcept;

/// Installs `hook` for the calling thread; returns the one it replaces. For fiber hosts only,
/// when they switch a fiber in and out. Never throws.
io_wait* exchange_io_wait(io_wait* hook) noexcept;

/// Waits until `fd` is ready for `event` or `deadline` passes: through the hook when there is
/// one, else poll(). `interruptible`: a hook also ends the wait when the waiter is stopped
/// (notification waits); statement waits are not (the statement in flight is read to its
/// end, as the synchronous API does). Returns true when ready; throws std::system_error on a
/// poll failure other than EINTR (which counts as "not ready yet").
bool wait_for_fd(int fd, io_wait::fd_event event, io_wait::time_point deadline,
                 bool interruptible = false);

/// Pauses until `until`: through the hook, else std::this_thread::sleep_until. False when a
/// hook ended the pause early because the waiter was stopped (the callers look at their stop
/// token after every pause; a loop that has none must not pause again at once).
bool pause_until(io_wait::time_point until);

/// pause_until(now + d).
bool pause_for(std::chrono::steady_clock::duration d);

/// While it lives on a fiber, every socket wait of that fiber ends when its waiter is stopped,
/// as if asked with `interruptible`: for a driver's connect, whose waits come through a
/// callback that cannot say so (nothing is held yet, so a cancel may abandon it). Off a fiber
/// it does nothing, and so it does when `active` is false. Scoped to one fiber: made and
/// destroyed on it, never moved.
class interruptible_waits final : public io_wait {
public:
    explicit interruptible_waits(bool active = true) noexcept;
    ~interruptible_waits() override;
    interruptible_waits(const interruptible_waits&) = delete;
    interruptible_waits& operator=(const interruptible_waits&) = delete;

    outcome wait_fd(int fd, fd_event event, time_point deadline, bool interruptible) override;
    outcome pause_until(time_point until) override;
    bool stop_requested() const noexcept override;

private:
    io_wait* m_inner; ///< the fiber's hook, or null off a fiber (or when not active)
};

/// True when the caller runs on a fiber whose waiter was stopped: a loop of interruptible
/// waits (each of which now ends at once) must end too. Never throws.
inline bool fiber_stopped() noexcept {
    const io_wait* hook = current_io_wait();
    return hook && hook->stop_requested();
}

/// True when the caller runs on a fiber (a hook is installed): it must not block its thread on
/// a condition variable, and polls what it waits for between pauses instead. Never throws.
inline bool on_fiber() noexcept {
    return current_io_wait() != nullptr;
}

/// On a fiber, what a thread would wait for on a condition variable: asks `ready()` (which
/// takes its own locks), then pauses `step` (at most to `deadline`) and asks again. True once
/// ready; false at `deadline` or when the fiber's waiter was stopped.
template <class Ready>
bool poll_on_fiber(Ready&& ready, io_wait::time_point deadline,
                   std::chrono::steady_clock::duration step) {
    for (;;) {
        if (ready())
            return true;
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline || !pause_until(std::min(deadline, now + step)))
            return false;
    }
}

} // namespace sqlock::detail
