// Internal: how a cancel token (sqlock.h: sqlock_cancel_*()) reaches the core's waits, which
// take a std::stop_token. sqlock_cancel_request() must be async-signal-safe, and
// std::stop_source::request_stop() is not (it takes the source's lock and runs the waits' stop
// callbacks on the requesting thread). So a request only stores the token's flag and writes one
// byte to a pipe (both async-signal-safe); one watcher thread per process, started with the
// first token, reads the pipe and requests the stop of every token whose flag is set. A wait
// thus stays one call of the core, in its queue place, until granted or stopped.
#pragma once

#include <atomic>
#include <mutex>
#include <stop_token>

/// A cancel token: the flag a request sets, and the stop source of its current request
/// generation (replaced by a reset once requested, since a stop source cannot be un-requested).
struct sqlock_cancel {
    std::atomic<bool> requested{false};
    static_assert(std::atomic<bool>::is_always_lock_free);
    std::mutex mutex;        // guards source
    std::stop_source source; // the waits of this generation hold its tokens
};

namespace sqlock::capi {

/// Registers a new token with the watcher (starting it on first use). Throws std::bad_alloc,
/// std::system_error (no pipe or thread).
void watch(sqlock_cancel& cancel);
/// Starts the watcher again in a forked child (its parent's thread is not there). Throws as
/// watch().
void ensure_watcher();
/// Unregisters a token before it is freed (no stop is requested on it afterwards). Never
/// throws.
void unwatch(sqlock_cancel& cancel) noexcept;
/// Wakes the watcher after a request. Async-signal-safe (one write(2), errno kept).
void wake_watcher() noexcept;
/// The token a wait of `cancel`'s current generation watches. Never throws.
std::stop_token stop_token_of(sqlock_cancel& cancel) noexcept;
/// Clears a request: the flag, and the stop source of a generation that saw a request (stopped
/// or about to be, by the watcher) is replaced. Never throws but std::bad_alloc.
void reset(sqlock_cancel& cancel);

} // namespace sqlock::capi
