// The C API's grants taken without a thread (sqlock.h "Waiting without a thread"): reads and
// releases of the core's async_grant.
#include "async/lockable.hpp"
#include "capi/async_types.hpp"
#include "capi/errors.hpp"
#include "capi/options.hpp"

using namespace sqlock::capi;

namespace {

/// The code of a release that ended as `how` (see sqlock_grant_release).
int release_code(sqlock::loss_reason how) noexcept {
    return how == sqlock::loss_reason::none ? SQLOCK_OK : SQLOCK_E_LOCK_LOST;
}

} // namespace

extern "C" {

int sqlock_grant_token(const sqlock_grant* grant, int64_t* token, sqlock_error** err) {
    return guarded(err, [&] {
        require(grant, "grant");
        require(token, "token");
        *token = grant->grant->token();
        return SQLOCK_OK;
    });
}

int sqlock_grant_permit(const sqlock_grant* grant, int64_t* permit, sqlock_error** err) {
    return guarded(err, [&] {
        require(grant, "grant");
        require(permit, "permit");
        const auto p = grant->grant->permit();
        if (p < 0)
            throw sqlock::error(sqlock::errc::invalid_argument,
                                "lock \"" + grant->grant->name() + "\" is not a semaphore's grant");
        *permit = p;
        return SQLOCK_OK;
    });
}

int sqlock_grant_owns(const sqlock_grant* grant) {
    return grant && grant->grant->owns_lock() ? 1 : 0;
}

int sqlock_grant_lost_reason(const sqlock_grant* grant) {
    return grant ? c_reason(grant->grant->lost_reason()) : SQLOCK_LOSS_NONE;
}

int sqlock_grant_release(sqlock_grant* grant, sqlock_error** err) {
    return guarded(err, [&]() -> int {
        require(grant, "grant");
        const std::unique_ptr<sqlock_grant> owned(grant);
        const auto how = owned->grant->release();
        if (how == sqlock::loss_reason::none)
            return SQLOCK_OK;
        return fail(err, SQLOCK_E_LOCK_LOST,
                    ("lock \"" + owned->grant->name() + "\" was lost while held (" +
                     std::string(sqlock::to_string(how)) +
                     "): the critical section may have overlapped another holder's")
                        .c_str());
    });
}

void sqlock_grant_release_start(sqlock_grant* grant, sqlock_release_fn done, void* user) {
    if (!grant)
        return;
    const std::unique_ptr<sqlock_grant> owned(grant);
    std::function<void(sqlock::loss_reason)> tell;
    if (done) {
        try {
            tell = [done, user](sqlock::loss_reason how) {
                done(release_code(how), user);
            };
        } catch (...) {
            // No memory for the report: released all the same (release() runs it inline),
            // and the caller is told here.
            done(release_code(owned->grant->release()), user);
            return;
        }
    }
    sqlock::detail::async_calls::release(std::move(owned->grant), std::move(tell));
}

} // extern "C"
