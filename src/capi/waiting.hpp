// Internal: how the C API's waiting calls honour timeout_ms and a cancel token.
#pragma once

#include "capi/cancel_watch.hpp"
#include "capi/errors.hpp"
#include "sqlock/sqlock.h"

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>

namespace sqlock::capi {

using steady_time = std::chrono::steady_clock::time_point;

/// The steady-clock deadline of a wait of `timeout_ms` (sqlock.h "Waiting and cancelling"):
/// time_point::max() for a negative one (or beyond a century), time_point::min() for 0.
steady_time deadline_of(std::int64_t timeout_ms);

/// One waiting call of a primitive, for wait_for_grant().
struct grant_wait {
    /// Asks for the grant until `deadline` on the steady clock (time_point::max(): as long as
    /// it takes; time_point::min(): one attempt), giving up soon after `stop` is requested when
    /// it is not null (the core's cancellable lock calls); true when granted (also a grant
    /// that landed after the stop request). Throws sqlock::error.
    std::function<bool(steady_time deadline, const std::stop_token* stop)> attempt;
    /// Gives back the grant `attempt` just made (a cancel came first). Never throws.
    std::function<void()> give_back;
    /// What is waited for, for the cancel message.
    subject what;
};

/// Runs `wait` as sqlock.h's "Waiting and cancelling" says: SQLOCK_OK (granted),
/// SQLOCK_NOT_GRANTED or SQLOCK_E_CANCELED (nothing held then; *err set). The primitive waits
/// in one call, which keeps its place in the server's and this process's queues; with a
/// cancel token, that call watches the token's stop source (cancel_watch.hpp). Throws what the
/// attempt throws.
int wait_for_grant(const grant_wait& wait, std::int64_t timeout_ms, sqlock_cancel* cancel,
                   sqlock_error** err);

} // namespace sqlock::capi
