// Internal: a lock handle's asynchronous side (sqlock.h "Waiting without a thread"): the core's
// async_lockable (src/async), made on the first *_start call. Free of Asio, so that every
// handle may hold one; capi/async.cpp (built with the asynchronous locks) or
// capi/async_off.cpp (without them) defines the functions.
#pragma once

#include "sqlock/database.hpp"
#include "sqlock/leader.hpp"
#include "sqlock/mutex.hpp"
#include "sqlock/sqlock.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace sqlock::detail {
class async_lockable; // src/async/lockable.hpp
}

namespace sqlock::capi {

/// Makes one handle's async_lockable (validating like the primitive). Empty when the library
/// is built without asynchronous locks.
using async_maker = std::function<std::shared_ptr<detail::async_lockable>()>;

/// A lock handle's asynchronous side: how to make it, and it once made.
struct async_side {
    std::mutex mutex;
    async_maker make;
    std::shared_ptr<detail::async_lockable> lockable; ///< guarded by mutex; null until used

    async_side() = default;
    async_side(const async_side&) = delete;
    async_side& operator=(const async_side&) = delete;
    /// Cancels the acquires still in flight (the grants they gave stay valid). Never throws.
    ~async_side();
};

/// The makers of each primitive's side, from the C++ lock's arguments (copied). Throw only
/// std::bad_alloc.
async_maker mutex_maker(const database& db, const std::string& name, const mutex_options& o);
async_maker semaphore_maker(const database& db, const std::string& name, std::int64_t permits,
                            const mutex_options& o);
async_maker shared_mutex_maker(const database& db, const std::string& name,
                               std::int64_t max_readers, const mutex_options& o);
async_maker leader_maker(const database& db, const std::string& name, const leader_options& o);

/// A *_start function's work on a handle's side (async_start.cpp has checked the handle): an
/// acquire (`shared`: a shared mutex's shared mode) made on the side's async_lockable,
/// reported to `done`, in *out. The C API's code, with the failure in *err.
int start_acquire(async_side& side, const char* kind, bool shared, std::int64_t timeout_ms,
                  sqlock_acquire_fn done, void* user, sqlock_acquire** out, sqlock_error** err);

} // namespace sqlock::capi
