// Internal: the asynchronous side (an async_lockable, slot_lockable.hpp) of each synchronous
// primitive the public async_* classes wrap. `executor` is the lock's: on a backend whose sessions
// wait through the wait hook (PostgreSQL), acquires run on fibers of it (fiber_host.hpp) instead
// of worker threads.
#pragma once

#include "async/lockable.hpp"
#include "sqlock/database.hpp"
#include "sqlock/mutex.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace sqlock::detail {

/// Grants are sqlock::mutex grants (exclusive only). Validates like sqlock::mutex.
std::shared_ptr<async_lockable> make_mutex_lockable(database db, std::string name,
                                                    mutex_options options,
                                                    std::shared_ptr<worker_pool> workers,
                                                    const asio::any_io_executor& executor);
/// Grants are one permit of a sqlock::semaphore (exclusive only: one permit). Validates like
/// sqlock::semaphore.
std::shared_ptr<async_lockable> make_semaphore_lockable(database db, std::string name,
                                                        std::int64_t permits, mutex_options options,
                                                        std::shared_ptr<worker_pool> workers,
                                                        const asio::any_io_executor& executor);
/// Grants are a sqlock::shared_mutex's, exclusive or shared as asked. Validates like
/// sqlock::shared_mutex.
std::shared_ptr<async_lockable> make_shared_mutex_lockable(database db, std::string name,
                                                           mutex_options options,
                                                           std::int64_t max_readers,
                                                           std::shared_ptr<worker_pool> workers,
                                                           const asio::any_io_executor& executor);

} // namespace sqlock::detail
