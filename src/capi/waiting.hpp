// Internal: how the C API's waiting calls honour timeout_ms and a cancel token.
#pragma once

#include "capi/errors.hpp"
#include "sqlock/sqlock.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

/// A cancel token (sqlock.h: sqlock_cancel_*()): one flag, lock-free so that a signal handler
/// may set it.
struct sqlock_cancel {
    std::atomic<bool> requested{false};
    static_assert(std::atomic<bool>::is_always_lock_free);
};

namespace sqlock::capi {

using steady_time = std::chrono::steady_clock::time_point;

/// One waiting call of a primitive, for wait_for_grant().
struct grant_wait {
    /// Asks for the grant until `deadline` on the steady clock (time_point::max(): as long as
    /// it takes; time_point::min(): one attempt); true when granted. Throws sqlock::error.
    std::function<bool(steady_time deadline)> attempt;
    /// Gives back the grant `attempt` just made (a cancel came first). Never throws.
    std::function<void()> give_back;
    /// What is waited for, for the cancel message.
    subject what;
};

/// Runs `wait` as sqlock.h's "Waiting and cancelling" says: SQLOCK_OK (granted),
/// SQLOCK_NOT_GRANTED or SQLOCK_E_CANCELED (nothing held then; *err set). Without a cancel
/// token the primitive waits in one call; with one, in slices of SQLOCK_CANCEL_CHECK_MS,
/// looking at the token between them. Throws what the attempts throw.
int wait_for_grant(const grant_wait& wait, std::int64_t timeout_ms, const sqlock_cancel* cancel,
                   sqlock_error** err);

} // namespace sqlock::capi
