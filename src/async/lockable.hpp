// Internal: what an asynchronous lock is to the library, whatever its primitive. The public
// header (sqlock/async.hpp) turns these into Asio operations; a primitive supplies one
// async_lockable (how to take a grant, on a worker thread) and its async_grant (what a guard
// reads and how it gives the grant back).
#pragma once

#include "async/worker_pool.hpp"
#include "sqlock/async.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

namespace sqlock::detail {

/// One grant, owned by a guard (not by a thread). The readers may be called from any thread.
class async_grant {
public:
    virtual ~async_grant() = default;
    virtual bool owns_lock() const noexcept = 0;
    virtual std::int64_t token() const = 0; ///< errc::lock_lost after release()
    virtual loss_reason lost_reason() const noexcept = 0;
    virtual std::stop_token stop_token() const noexcept = 0;
    virtual std::chrono::steady_clock::time_point lease_end() const noexcept = 0;
    virtual const std::string& name() const noexcept = 0;
    /// Gives the grant back (blocking: runs on the pool's release thread, or on the acquire
    /// thread that finds its grant cancelled) and tells how it ended. Called once. Never throws.
    virtual loss_reason release() noexcept = 0;
    /// The pool whose release thread runs release().
    virtual worker_pool& workers() noexcept = 0;
};

/// One primitive's asynchronous side: takes grants on a worker thread, and knows the acquires
/// in flight (for async_mutex::cancel() and its destructor).
class async_lockable {
public:
    async_lockable(std::string name, std::shared_ptr<worker_pool> workers)
        : m_name(std::move(name)), m_workers(std::move(workers)) {}
    virtual ~async_lockable() = default;
    async_lockable(const async_lockable&) = delete;
    async_lockable& operator=(const async_lockable&) = delete;

    const std::string& name() const noexcept { return m_name; }
    worker_pool& workers() noexcept { return *m_workers; }

    /// On a worker thread: a grant of `mode`, waiting until `deadline` (max: no deadline; min:
    /// one attempt) or until `stop` is requested; nullptr when none came (timed out or
    /// stopped). A grant that lands after a stop request is returned all the same (the caller
    /// gives it back). Throws sqlock::error like the primitive's sync lock calls.
    virtual std::shared_ptr<async_grant> acquire(acquire_mode mode,
                                                 std::chrono::steady_clock::time_point deadline,
                                                 const std::stop_token& stop) = 0;

    /// Remembers `op` as in flight (forgotten once it is gone). Never throws but bad_alloc.
    void track(const std::shared_ptr<async_acquire>& op);
    /// Cancels every tracked acquire still in flight. Never throws.
    void cancel_all() noexcept;

private:
    const std::string m_name;
    const std::shared_ptr<worker_pool> m_workers;
    std::mutex m_mutex;
    std::vector<std::weak_ptr<async_acquire>> m_in_flight;
};

/// The door to the pool inside a public async_workers handle.
class async_access {
public:
    static const std::shared_ptr<worker_pool>& pool(const async_workers& w) noexcept {
        return w.m_pool;
    }
};

} // namespace sqlock::detail
