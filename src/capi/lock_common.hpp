// Internal: what the C API's mutex, semaphore and shared mutex share: opening a handle, and
// telling how a release went.
#pragma once

#include "capi/errors.hpp"
#include "capi/handles.hpp"
#include "capi/options.hpp"

#include <string>

namespace sqlock::capi {

/// Makes a lock handle: `emplace(handle, database, name, options)` constructs its C++ lock,
/// with the C options read and their callbacks routed through the handle's gate.
template <class Handle, class Emplace>
int open_lock(Handle** out, sqlock_db* db, const char* name, const sqlock_lock_options* options,
              sqlock_error** err, Emplace emplace) {
    return guarded(err, [&] {
        require(out, "out");
        require(db, "db");
        require(name, "name");
        const auto o = read_options(options, default_lock_options(), "sqlock_lock_options");
        auto handle = std::make_unique<Handle>();
        auto cpp = to_mutex_options(o, handle->gate);
        emplace(*handle, db->db, std::string(name), std::move(cpp));
        *out = handle.release();
        return SQLOCK_OK;
    });
}

/// The result of releasing a hold of `what`: SQLOCK_E_LOCK_LOST when the grant was known lost
/// before (`before`), or when this was its last hold and the release found it lost (`ended`);
/// else SQLOCK_OK.
inline int release_outcome(const subject& what, loss_reason before, bool last, loss_reason ended,
                           sqlock_error** err) {
    if (before == loss_reason::none && (!last || ended == loss_reason::none))
        return SQLOCK_OK;
    const auto why = before != loss_reason::none ? before : ended;
    return fail(err, SQLOCK_E_LOCK_LOST,
                (what.text() + " was lost while held (" + std::string(to_string(why)) +
                 "): the critical section may have overlapped another holder's")
                    .c_str());
}

/// SQLOCK_E_INVALID_ARGUMENT: `what` released by a thread that does not hold it.
inline int not_held(const subject& what, sqlock_error** err) {
    return fail(err, SQLOCK_E_INVALID_ARGUMENT,
                ("release of " + what.text() + " by a thread that does not hold it").c_str());
}

} // namespace sqlock::capi
