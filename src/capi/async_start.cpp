// The C API's *_start functions (sqlock.h "Waiting without a thread"): each checks its handle
// and starts an acquire on the handle's asynchronous side (capi/async.hpp; made by async.cpp,
// or refused by async_off.cpp in a library without asynchronous locks).
#include "capi/async.hpp"
#include "capi/errors.hpp"
#include "capi/handles.hpp"

namespace {

using sqlock::capi::guarded;
using sqlock::capi::require;

template <class Handle>
int start(Handle* h, const char* kind, bool shared, std::int64_t timeout_ms, sqlock_acquire_fn done,
          void* user, sqlock_acquire** out, sqlock_error** err) {
    return guarded(err, [&] {
        require(h, kind);
        return sqlock::capi::start_acquire(h->async, kind, shared, timeout_ms, done, user, out,
                                           err);
    });
}

} // namespace

extern "C" {

int sqlock_mutex_lock_start(sqlock_mutex* mutex, int64_t timeout_ms, sqlock_acquire_fn done,
                            void* user, sqlock_acquire** out, sqlock_error** err) {
    return start(mutex, "lock", false, timeout_ms, done, user, out, err);
}

int sqlock_semaphore_acquire_start(sqlock_semaphore* semaphore, int64_t timeout_ms,
                                   sqlock_acquire_fn done, void* user, sqlock_acquire** out,
                                   sqlock_error** err) {
    return start(semaphore, "semaphore", false, timeout_ms, done, user, out, err);
}

int sqlock_shared_mutex_lock_start(sqlock_shared_mutex* mutex, int64_t timeout_ms,
                                   sqlock_acquire_fn done, void* user, sqlock_acquire** out,
                                   sqlock_error** err) {
    return start(mutex, "shared mutex", false, timeout_ms, done, user, out, err);
}

int sqlock_shared_mutex_lock_shared_start(sqlock_shared_mutex* mutex, int64_t timeout_ms,
                                          sqlock_acquire_fn done, void* user, sqlock_acquire** out,
                                          sqlock_error** err) {
    return start(mutex, "shared mutex", true, timeout_ms, done, user, out, err);
}

int sqlock_leader_campaign_start(sqlock_leader* leader, int64_t timeout_ms, sqlock_acquire_fn done,
                                 void* user, sqlock_acquire** out, sqlock_error** err) {
    return start(leader, "election", false, timeout_ms, done, user, out, err);
}

} // extern "C"
