// Internal: one asynchronous acquire in flight. It is started once: one with time to wait
// joins its lock's local line (local_line.hpp) and runs on an acquire thread of the lock's
// pool when its turn comes; a try goes to an acquire thread at once. It may be cancelled from
// any thread, and reports exactly once: at once when cancelled (or, queued, at its deadline)
// before a thread took it up, else from that thread when the lock call ends. A grant that
// lands after a cancel is given back before "cancelled" is reported, so a cancelled acquire
// never leaves the lock held.
#pragma once

#include "async/lockable.hpp"
#include "sqlock/async.hpp"

#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>

namespace sqlock::detail {

class async_acquire : public line_waiter, public std::enable_shared_from_this<async_acquire> {
public:
    async_acquire(std::shared_ptr<async_lockable> lockable, acquire_mode mode,
                  std::chrono::steady_clock::time_point deadline, acquire_done done)
        : m_lockable(std::move(lockable)), m_mode(mode), m_deadline(deadline),
          m_done(std::move(done)) {}

    /// Queues this acquire in its lock's local line, or (no time to wait) hands it to an
    /// acquire thread at once (call once). When the pool cannot take it, reports the failure
    /// at once.
    void start();
    /// For the local line: takes this queued acquire out of the queued phase (false when it
    /// ended meanwhile), so that only run_claimed() may report it. Never throws.
    bool claim() noexcept override;
    /// For the local line, after claim(): runs the lock call on an acquire thread, then tells
    /// the line (head_done) and reports. Never throws.
    void run_claimed() noexcept override;
    /// Asks this acquire to stop, from any thread: reports "cancelled" at once when no thread
    /// took it up yet. Never throws.
    void cancel() noexcept;
    /// True once it reported. Never throws.
    bool finished() const noexcept override { return m_phase.load() == phase::finished; }

private:
    /// queued: in the line (or waiting for a thread, a try); claimed: the line's head, waiting
    /// for a thread; running: in the lock call; finished: reported (or about to be).
    enum class phase { queued, claimed, running, finished };
    /// Ends this acquire with `how` (cancelled, timed out) if it is still queued or claimed,
    /// and lets the line go on. Never throws.
    void end_waiting(acquire_result::outcome how) noexcept;
    /// The acquire thread's part: the lock call, then the report.
    void run() noexcept;
    /// The same for an acquire the local line claimed.
    void run_head() noexcept;
    /// The timer's part, at the deadline of an acquire still queued: reports "timed out".
    void expire() noexcept;
    /// Arms the deadline of an acquire that joins the line: a timer of the lock's executor
    /// when it runs on fibers (no thread), else the pool's timer thread. Throws what that
    /// throws.
    void arm_deadline();
    /// Cancels the executor's timer, if any. Never throws.
    void disarm_deadline() noexcept;
    /// Runs `call` (which must not throw) on a fiber of the lock's executor (fibers()), else on
    /// an acquire thread. Throws what starting it throws.
    void run_call(std::function<void()> call);
    /// The lock call's outcome, a grant that raced a cancel given back.
    acquire_result attempt() noexcept;
    /// Reports `r` through m_done (once: the caller won the phase). Never throws.
    void report(acquire_result r) noexcept;

    const std::shared_ptr<async_lockable> m_lockable;
    const acquire_mode m_mode;
    const std::chrono::steady_clock::time_point m_deadline;
    acquire_done m_done;
    std::stop_source m_stop;
    std::atomic<phase> m_phase{phase::queued};
    std::mutex m_timer_mutex;                    ///< guards m_timer
    std::shared_ptr<asio::steady_timer> m_timer; ///< arm_deadline()'s, on fibers
};

} // namespace sqlock::detail
