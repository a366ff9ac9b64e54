// Internal: what the C API's opaque handles are.
#pragma once

#include "capi/async.hpp"
#include "capi/options.hpp"
#include "sqlock/database.hpp"
#include "sqlock/job.hpp"
#include "sqlock/leader.hpp"
#include "sqlock/mutex.hpp"
#include "sqlock/semaphore.hpp"
#include "sqlock/shared_mutex.hpp"

#include <memory>
#include <optional>

struct sqlock_db {
    sqlock::database db;
};

/// A lock handle: the C++ primitive, the gate of its callbacks (null without any), and its
/// asynchronous side (the *_start functions).
template <class Lock>
struct sqlock_lock_handle {
    std::shared_ptr<sqlock::capi::callback_gate> gate;
    std::optional<Lock> lock;
    sqlock::capi::async_side async;

    /// Closes the gate first (no callback runs after close returns), then cancels the
    /// asynchronous acquires and destroys the lock, which releases what it holds.
    ~sqlock_lock_handle() {
        if (gate)
            gate->close();
    }
};

struct sqlock_mutex : sqlock_lock_handle<sqlock::mutex> {};
struct sqlock_semaphore : sqlock_lock_handle<sqlock::semaphore> {};
struct sqlock_shared_mutex : sqlock_lock_handle<sqlock::shared_mutex> {};
struct sqlock_leader : sqlock_lock_handle<sqlock::leader_election> {};
struct sqlock_job : sqlock_lock_handle<sqlock::job> {};
