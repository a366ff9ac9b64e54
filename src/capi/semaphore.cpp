// The C API's semaphore: sqlock_semaphore_*() over sqlock::semaphore.
#include "capi/lock_common.hpp"
#include "capi/waiting.hpp"
#include "locks/handle_access.hpp"

using namespace sqlock::capi;

extern "C" {

int sqlock_semaphore_open(sqlock_semaphore** out, sqlock_db* db, const char* name, int64_t permits,
                          const sqlock_lock_options* options, sqlock_error** err) {
    return open_lock(out, db, name, options, err,
                     [permits](sqlock_semaphore& h, const sqlock::database& d, std::string n,
                               sqlock::mutex_options o) {
                         h.async.make = semaphore_maker(d, n, permits, o);
                         h.lock.emplace(d, std::move(n), permits, std::move(o));
                     });
}

void sqlock_semaphore_close(sqlock_semaphore* semaphore) {
    delete semaphore;
}

int sqlock_semaphore_acquire(sqlock_semaphore* semaphore, int64_t timeout_ms, sqlock_cancel* cancel,
                             int64_t* token, sqlock_error** err) {
    return guarded(err, [&] {
        require(semaphore, "semaphore");
        auto& s = *semaphore->lock;
        const grant_wait wait{[&](steady_time deadline, const std::stop_token* stop) {
                                  return stop ? sqlock::detail::handle_access::try_lock_cancellable(
                                                    s, deadline, *stop)
                                              : s.try_acquire_until(deadline);
                              },
                              [&] { s.release(); }, subject{"semaphore", s.name()}};
        const int rc = wait_for_grant(wait, timeout_ms, cancel, err);
        if (rc == SQLOCK_OK && token)
            *token = s.token();
        return rc;
    });
}

int sqlock_semaphore_release(sqlock_semaphore* semaphore, sqlock_error** err) {
    return guarded(err, [&] {
        require(semaphore, "semaphore");
        auto& s = *semaphore->lock;
        const subject what{"a permit of semaphore", s.name()};
        const auto holds = s.hold_count();
        if (holds == 0)
            return not_held(what, err);
        const auto before = s.lost_reason();
        s.release();
        return release_outcome(what, before, holds == 1, s.last_loss(), err);
    });
}

int sqlock_semaphore_permit(const sqlock_semaphore* semaphore, int64_t* permit,
                            sqlock_error** err) {
    return guarded(err, [&] {
        require(semaphore, "semaphore");
        require(permit, "permit");
        *permit = semaphore->lock->permit();
        return SQLOCK_OK;
    });
}

int sqlock_semaphore_owns(const sqlock_semaphore* semaphore) {
    return semaphore && semaphore->lock->owns_lock() ? 1 : 0;
}

} // extern "C"
