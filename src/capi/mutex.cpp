// The C API's mutex: sqlock_mutex_*() over sqlock::mutex.
#include "capi/lock_common.hpp"
#include "capi/waiting.hpp"
#include "locks/mutex_access.hpp"

using namespace sqlock::capi;

extern "C" {

int sqlock_mutex_open(sqlock_mutex** out, sqlock_db* db, const char* name,
                      const sqlock_lock_options* options, sqlock_error** err) {
    return open_lock(
        out, db, name, options, err,
        [](sqlock_mutex& h, const sqlock::database& d, std::string n, sqlock::mutex_options o) {
            h.async.make = mutex_maker(d, n, o);
            h.lock.emplace(d, std::move(n), std::move(o));
        });
}

void sqlock_mutex_close(sqlock_mutex* mutex) {
    delete mutex;
}

int sqlock_mutex_lock(sqlock_mutex* mutex, int64_t timeout_ms, sqlock_cancel* cancel,
                      int64_t* token, sqlock_error** err) {
    return guarded(err, [&] {
        require(mutex, "mutex");
        auto& m = *mutex->lock;
        const grant_wait wait{[&](steady_time deadline, const std::stop_token* stop) {
                                  return stop ? sqlock::detail::mutex_access::try_lock_cancellable(
                                                    m, deadline, *stop)
                                              : m.try_lock_until(deadline);
                              },
                              [&] { m.unlock(); }, subject{"lock", m.name()}};
        const int rc = wait_for_grant(wait, timeout_ms, cancel, err);
        if (rc == SQLOCK_OK && token)
            *token = m.token();
        return rc;
    });
}

int sqlock_mutex_unlock(sqlock_mutex* mutex, sqlock_error** err) {
    return guarded(err, [&] {
        require(mutex, "mutex");
        auto& m = *mutex->lock;
        const subject what{"lock", m.name()};
        const auto holds = m.hold_count();
        if (holds == 0)
            return not_held(what, err);
        const auto before = m.lost_reason();
        m.unlock();
        return release_outcome(what, before, holds == 1, m.last_loss(), err);
    });
}

int sqlock_mutex_token(const sqlock_mutex* mutex, int64_t* token, sqlock_error** err) {
    return guarded(err, [&] {
        require(mutex, "mutex");
        require(token, "token");
        *token = mutex->lock->token();
        return SQLOCK_OK;
    });
}

int sqlock_mutex_owns(const sqlock_mutex* mutex) {
    return mutex && mutex->lock->owns_lock() ? 1 : 0;
}

int sqlock_mutex_lost_reason(const sqlock_mutex* mutex) {
    return mutex ? c_reason(mutex->lock->lost_reason()) : SQLOCK_LOSS_NONE;
}

int64_t sqlock_mutex_hold_count(const sqlock_mutex* mutex) {
    return mutex ? mutex->lock->hold_count() : 0;
}

} // extern "C"
