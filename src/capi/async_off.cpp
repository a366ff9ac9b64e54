// The C API's waits without a thread in a library built without the asynchronous locks
// (SQLOCK_WITH_ASYNC=OFF: no Asio): every *_start is SQLOCK_E_UNSUPPORTED (sqlock.h), and
// so is every call on an acquire or a grant (there can be none).
#include "capi/async.hpp"
#include "capi/errors.hpp"

namespace sqlock::capi {

namespace {

int unsupported(sqlock_error** err) {
    if (err)
        *err = nullptr;
    return fail(err, SQLOCK_E_UNSUPPORTED,
                "this libsqlock-c was built without asynchronous locks (SQLOCK_WITH_ASYNC=OFF)");
}

} // namespace

async_side::~async_side() = default;

async_maker mutex_maker(const database&, const std::string&, const mutex_options&) {
    return {};
}
async_maker semaphore_maker(const database&, const std::string&, std::int64_t,
                            const mutex_options&) {
    return {};
}
async_maker shared_mutex_maker(const database&, const std::string&, std::int64_t,
                               const mutex_options&) {
    return {};
}
async_maker leader_maker(const database&, const std::string&, const leader_options&) {
    return {};
}

int start_acquire(async_side&, const char*, bool, std::int64_t, sqlock_acquire_fn, void*,
                  sqlock_acquire**, sqlock_error** err) {
    return unsupported(err);
}

} // namespace sqlock::capi

using sqlock::capi::unsupported;

extern "C" {

void sqlock_acquire_cancel(sqlock_acquire*) {}
int sqlock_acquire_result(sqlock_acquire*, sqlock_grant**, sqlock_error** err) {
    return unsupported(err);
}
void sqlock_acquire_free(sqlock_acquire*) {}
int sqlock_grant_token(const sqlock_grant*, int64_t*, sqlock_error** err) {
    return unsupported(err);
}
int sqlock_grant_permit(const sqlock_grant*, int64_t*, sqlock_error** err) {
    return unsupported(err);
}
int sqlock_grant_owns(const sqlock_grant*) {
    return 0;
}
int sqlock_grant_lost_reason(const sqlock_grant*) {
    return SQLOCK_LOSS_NONE;
}
int sqlock_grant_release(sqlock_grant*, sqlock_error** err) {
    return unsupported(err);
}
void sqlock_grant_release_start(sqlock_grant*, sqlock_release_fn, void*) {}

} // extern "C"
