// The C API's reader-writer lock: sqlock_shared_mutex_*() over sqlock::shared_mutex.
#include "capi/lock_common.hpp"
#include "capi/waiting.hpp"
#include "locks/handle_access.hpp"

using namespace sqlock::capi;
using sqlock::detail::handle_access;

namespace {

/// The calling thread holds `m` in some mode (shared_mutex keeps no public hold count: its
/// token() answers only for a holder).
bool holds_any(const sqlock::shared_mutex& m) {
    try {
        (void)m.token();
        return true;
    } catch (const sqlock::error&) {
        return false;
    }
}

/// Releases one hold (exclusive or shared, by `release`) and says how it went.
template <class Release>
int release(sqlock_shared_mutex* mutex, sqlock_error** err, Release release) {
    return guarded(err, [&] {
        require(mutex, "mutex");
        auto& m = *mutex->lock;
        const subject what{"reader-writer lock", m.name()};
        if (!holds_any(m))
            return not_held(what, err);
        const auto before = m.lost_reason();
        release(m);
        return release_outcome(what, before, !holds_any(m), m.last_loss(), err);
    });
}

} // namespace

extern "C" {

int sqlock_shared_mutex_open(sqlock_shared_mutex** out, sqlock_db* db, const char* name,
                             int64_t max_readers, const sqlock_lock_options* options,
                             sqlock_error** err) {
    const auto readers = max_readers == 0 ? sqlock::default_max_readers : max_readers;
    return open_lock(out, db, name, options, err,
                     [readers](sqlock_shared_mutex& h, const sqlock::database& d, std::string n,
                               sqlock::mutex_options o) {
                         h.async.make = shared_mutex_maker(d, n, readers, o);
                         h.lock.emplace(d, std::move(n), std::move(o), readers);
                     });
}

void sqlock_shared_mutex_close(sqlock_shared_mutex* mutex) {
    delete mutex;
}

int sqlock_shared_mutex_lock(sqlock_shared_mutex* mutex, int64_t timeout_ms, sqlock_cancel* cancel,
                             int64_t* token, sqlock_error** err) {
    return guarded(err, [&] {
        require(mutex, "mutex");
        auto& m = *mutex->lock;
        const grant_wait wait{[&](steady_time deadline, const std::stop_token* stop) {
                                  return stop ? handle_access::try_lock_cancellable(m, deadline,
                                                                                    *stop)
                                              : m.try_lock_until(deadline);
                              },
                              [&] { m.unlock(); }, subject{"reader-writer lock", m.name()}};
        const int rc = wait_for_grant(wait, timeout_ms, cancel, err);
        if (rc == SQLOCK_OK && token)
            *token = m.token();
        return rc;
    });
}

int sqlock_shared_mutex_unlock(sqlock_shared_mutex* mutex, sqlock_error** err) {
    return release(mutex, err, [](sqlock::shared_mutex& m) { m.unlock(); });
}

int sqlock_shared_mutex_lock_shared(sqlock_shared_mutex* mutex, int64_t timeout_ms,
                                    sqlock_cancel* cancel, int64_t* token, sqlock_error** err) {
    return guarded(err, [&] {
        require(mutex, "mutex");
        auto& m = *mutex->lock;
        const grant_wait wait{
            [&](steady_time deadline, const std::stop_token* stop) {
                return stop ? handle_access::try_lock_shared_cancellable(m, deadline, *stop)
                            : m.try_lock_shared_until(deadline);
            },
            [&] { m.unlock_shared(); }, subject{"shared lock of reader-writer lock", m.name()}};
        const int rc = wait_for_grant(wait, timeout_ms, cancel, err);
        if (rc == SQLOCK_OK && token)
            *token = m.token();
        return rc;
    });
}

int sqlock_shared_mutex_unlock_shared(sqlock_shared_mutex* mutex, sqlock_error** err) {
    return release(mutex, err, [](sqlock::shared_mutex& m) { m.unlock_shared(); });
}

int sqlock_shared_mutex_owns(const sqlock_shared_mutex* mutex) {
    return mutex && mutex->lock->owns_lock() ? 1 : 0;
}

int sqlock_shared_mutex_owns_shared(const sqlock_shared_mutex* mutex) {
    return mutex && mutex->lock->owns_shared() ? 1 : 0;
}

} // extern "C"
