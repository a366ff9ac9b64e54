// The C API's waits: timeout_ms, cancel tokens, and what a cancel does to a grant.
#include "capi/waiting.hpp"

#include "capi/errors.hpp"
#include "sqlock/error.hpp"

#include <algorithm>

namespace sqlock::capi {

namespace {

bool requested(const sqlock_cancel* cancel) noexcept {
    return cancel && cancel->requested.load(std::memory_order_acquire);
}

/// The steady-clock deadline of a wait of `timeout_ms` (see wait_for_grant).
steady_time deadline_of(std::int64_t timeout_ms) {
    // Beyond a century is forever (and the steady clock's nanoseconds do not overflow).
    constexpr std::int64_t century_ms = 100LL * 366 * 24 * 3600 * 1000;
    if (timeout_ms < 0 || timeout_ms > century_ms)
        return steady_time::max();
    if (timeout_ms == 0)
        return steady_time::min();
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
}

int canceled(const grant_wait& wait, sqlock_error** err) {
    return fail(err, SQLOCK_E_CANCELED,
                ("the wait for " + wait.what.text() + " was cancelled").c_str());
}

/// One slice of a cancellable wait: an attempt until the slice's end. A server that refused
/// every connection until then (errc::timeout, is_server_full) is waited out as the core
/// would: the whole wait fails that way only at its own deadline.
bool slice(const grant_wait& wait, steady_time slice_end, steady_time deadline) {
    try {
        return wait.attempt(slice_end);
    } catch (const error& e) {
        if (slice_end < deadline && e.code() == errc::timeout && is_server_full(e))
            return false;
        throw;
    }
}

} // namespace

int wait_for_grant(const grant_wait& wait, std::int64_t timeout_ms, const sqlock_cancel* cancel,
                   sqlock_error** err) {
    const steady_time deadline = deadline_of(timeout_ms);
    if (!cancel)
        return wait.attempt(deadline) ? SQLOCK_OK : SQLOCK_NOT_GRANTED;
    const auto check = std::chrono::milliseconds(SQLOCK_CANCEL_CHECK_MS);
    for (;;) {
        if (requested(cancel))
            return canceled(wait, err);
        const auto now = std::chrono::steady_clock::now();
        const steady_time slice_end =
            deadline == steady_time::min() ? deadline : std::min(deadline, now + check);
        if (slice(wait, slice_end, deadline)) {
            if (!requested(cancel))
                return SQLOCK_OK;
            wait.give_back(); // the cancel came first: never leave it held
            return canceled(wait, err);
        }
        if (slice_end >= deadline || std::chrono::steady_clock::now() >= deadline)
            return SQLOCK_NOT_GRANTED;
    }
}

} // namespace sqlock::capi

extern "C" {

int sqlock_cancel_new(sqlock_cancel** out, sqlock_error** err) {
    return sqlock::capi::guarded(err, [&] {
        sqlock::capi::require(out, "out");
        *out = new sqlock_cancel;
        return SQLOCK_OK;
    });
}

void sqlock_cancel_request(sqlock_cancel* cancel) {
    if (cancel)
        cancel->requested.store(true, std::memory_order_release);
}

int sqlock_cancel_requested(const sqlock_cancel* cancel) {
    return cancel && cancel->requested.load(std::memory_order_acquire) ? 1 : 0;
}

void sqlock_cancel_reset(sqlock_cancel* cancel) {
    if (cancel)
        cancel->requested.store(false, std::memory_order_release);
}

void sqlock_cancel_free(sqlock_cancel* cancel) {
    delete cancel;
}

} // extern "C"
