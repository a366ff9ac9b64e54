// Internal: what an asynchronous lock is to the library, whatever its primitive. The public
// header (sqlock/async.hpp) turns these into Asio operations; a primitive supplies one
// async_lockable (how to take a grant, on a worker thread) and its async_grant (what a guard
// reads and how it gives the grant back).
#pragma once

#include "async/local_line.hpp"
#include "async/worker_pool.hpp"
#include "sqlock/async.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
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
    /// A semaphore grant's permit (0 to permits - 1); -1 for other primitives (the C API's
    /// sqlock_grant_permit). Never throws.
    virtual std::int64_t permit() const noexcept { return -1; }
    /// Gives the grant back (blocking: runs on a release thread of the pool or a fiber, or where
    /// the acquire finds its grant cancelled) and tells how it ended. Called once. Never throws.
    virtual loss_reason release() noexcept = 0;
    /// The pool whose release threads run release(), unless fibers() has an executor.
    virtual worker_pool& workers() noexcept = 0;
    /// The executor on whose fibers release() runs (PostgreSQL), or null: a release thread.
    virtual const asio::any_io_executor* fibers() const noexcept = 0;
};

/// One primitive's asynchronous side: takes grants on a worker thread, and knows the acquires
/// in flight (for async_mutex::cancel() and its destructor).
class async_lockable {
public:
    /// `line`: this process's local line of the lock (local_line.hpp); `exclusive_units`: the
    /// units of its capacity an exclusive grant holds (a shared one holds 1); `fibers`: the
    /// executor whose fibers run its acquires (fiber_host.hpp), or none: worker threads.
    async_lockable(std::string name, std::shared_ptr<worker_pool> workers,
                   std::shared_ptr<local_line> line, std::size_t exclusive_units,
                   std::optional<asio::any_io_executor> fibers = std::nullopt)
        : m_name(std::move(name)), m_workers(std::move(workers)), m_line(std::move(line)),
          m_exclusive_units(exclusive_units), m_fibers(std::move(fibers)) {}
    virtual ~async_lockable() = default;
    async_lockable(const async_lockable&) = delete;
    async_lockable& operator=(const async_lockable&) = delete;

    const std::string& name() const noexcept { return m_name; }
    worker_pool& workers() noexcept { return *m_workers; }
    local_line& line() noexcept { return *m_line; }
    /// The executor whose fibers run this lock's acquires, or null: worker threads.
    const asio::any_io_executor* fibers() const noexcept { return m_fibers ? &*m_fibers : nullptr; }
    /// The units of the line's capacity a grant of `mode` holds.
    std::size_t units(acquire_mode mode) const noexcept {
        return mode == acquire_mode::shared ? 1 : m_exclusive_units;
    }

    /// On a worker thread or a fiber (fibers()): a grant of `mode`, waiting until `deadline` (max:
    /// no deadline; min: one attempt) or until `stop` is requested; nullptr when none came (timed
    /// out or stopped). A grant that lands after a stop request is returned all the same (the
    /// caller gives it back). Throws sqlock::error like the primitive's sync lock calls.
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
    const std::shared_ptr<local_line> m_line;
    const std::size_t m_exclusive_units;
    const std::optional<asio::any_io_executor> m_fibers;
    std::mutex m_mutex;
    std::vector<std::weak_ptr<async_acquire>> m_in_flight;
    std::size_t m_sweep_at = 16; ///< m_in_flight's size at which ended acquires are dropped
};

/// The door to the pool inside a public async_workers handle.
class async_access {
public:
    static const std::shared_ptr<worker_pool>& pool(const async_workers& w) noexcept {
        return w.m_pool;
    }
};

} // namespace sqlock::detail
