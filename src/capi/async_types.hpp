// Internal: the C API's acquire and grant objects (sqlock.h "Waiting without a thread").
#pragma once

#include "sqlock/sqlock.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

namespace sqlock::detail {
class async_acquire; // src/async/acquire.hpp
class async_grant;   // src/async/lockable.hpp
} // namespace sqlock::detail

/// One acquire, referenced by its caller (until sqlock_acquire_free) and by its completion
/// (until the callback returns): freed when both are done with it.
struct sqlock_acquire {
    sqlock_acquire(sqlock_acquire_fn fn, void* u, std::string w)
        : done(fn), user(u), what(std::move(w)) {}

    const sqlock_acquire_fn done;
    void* const user;
    const std::string what; ///< "lock \"NAME\"", for messages
    std::atomic<int> refs{2};

    std::mutex mutex; // guards what follows
    std::shared_ptr<sqlock::detail::async_acquire> op;
    bool ended = false;            ///< the core reported
    bool freed = false;            ///< the caller let go: a grant is given back at once
    int code = SQLOCK_E_INTERNAL;  ///< when ended
    sqlock_error* error = nullptr; ///< a cancel's or failure's details (owned)
    std::shared_ptr<sqlock::detail::async_grant> grant; ///< granted, until taken
};

/// A grant an acquire handed out.
struct sqlock_grant {
    std::shared_ptr<sqlock::detail::async_grant> grant;
};

namespace sqlock::capi {

/// Drops one reference of `a`, freeing it with the last. Never throws.
void unref(sqlock_acquire& a) noexcept;

} // namespace sqlock::capi
