// The C API's waits: timeout_ms, cancel tokens, and what a cancel does to a grant.
#include "capi/waiting.hpp"

#include "capi/errors.hpp"
#include "sqlock/error.hpp"

namespace sqlock::capi {

namespace {

bool requested(const sqlock_cancel* cancel) noexcept {
    return cancel && cancel->requested.load(std::memory_order_acquire);
}

int canceled(const grant_wait& wait, sqlock_error** err) {
    return fail(err, SQLOCK_E_CANCELED,
                ("the wait for " + wait.what.text() + " was cancelled").c_str());
}

} // namespace

steady_time deadline_of(std::int64_t timeout_ms) {
    // Beyond a century is forever (and the steady clock's nanoseconds do not overflow).
    constexpr std::int64_t century_ms = 100LL * 366 * 24 * 3600 * 1000;
    if (timeout_ms < 0 || timeout_ms > century_ms)
        return steady_time::max();
    if (timeout_ms == 0)
        return steady_time::min();
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
}

int wait_for_grant(const grant_wait& wait, std::int64_t timeout_ms, sqlock_cancel* cancel,
                   sqlock_error** err) {
    const steady_time deadline = deadline_of(timeout_ms);
    if (!cancel)
        return wait.attempt(deadline, nullptr) ? SQLOCK_OK : SQLOCK_NOT_GRANTED;
    ensure_watcher(); // a forked child's first wait starts its own
    // The token first, then the flag: a request in between reaches this token's source.
    const std::stop_token stop = stop_token_of(*cancel);
    if (requested(cancel))
        return canceled(wait, err);
    const bool granted = wait.attempt(deadline, &stop);
    if (stop.stop_requested() || requested(cancel)) {
        if (granted)
            wait.give_back(); // the cancel came first: never leave it held
        return canceled(wait, err);
    }
    return granted ? SQLOCK_OK : SQLOCK_NOT_GRANTED;
}

} // namespace sqlock::capi

extern "C" {

int sqlock_cancel_new(sqlock_cancel** out, sqlock_error** err) {
    return sqlock::capi::guarded(err, [&] {
        sqlock::capi::require(out, "out");
        auto cancel = std::make_unique<sqlock_cancel>();
        sqlock::capi::watch(*cancel);
        *out = cancel.release();
        return SQLOCK_OK;
    });
}

void sqlock_cancel_request(sqlock_cancel* cancel) {
    if (!cancel)
        return;
    cancel->requested.store(true, std::memory_order_release);
    sqlock::capi::wake_watcher(); // async-signal-safe: see cancel_watch.hpp
}

int sqlock_cancel_requested(const sqlock_cancel* cancel) {
    return cancel && cancel->requested.load(std::memory_order_acquire) ? 1 : 0;
}

void sqlock_cancel_reset(sqlock_cancel* cancel) {
    if (cancel)
        sqlock::capi::quietly(0, [&] {
            sqlock::capi::reset(*cancel);
            return 0;
        });
}

void sqlock_cancel_free(sqlock_cancel* cancel) {
    if (!cancel)
        return;
    sqlock::capi::unwatch(*cancel);
    delete cancel;
}

} // extern "C"
