// Internal: sqlock::async_mutex's side of the library. Its grants are those of sqlock::mutex
// objects that belong to their handle rather than a thread (mutex_access::own_by_handle): one
// such "slot" per grant in flight, so every grant has an owner id of its own and none re-enters
// another. Slots are kept for reuse, with what a mutex remembers between its calls (its last
// token, the leases it saw, a release left to retry).
#pragma once

#include "async/lockable.hpp"
#include "sqlock/database.hpp"
#include "sqlock/mutex.hpp"

#include <memory>
#include <mutex>
#include <vector>

namespace sqlock::detail {

class mutex_lockable : public async_lockable, public std::enable_shared_from_this<mutex_lockable> {
public:
    /// Validates like sqlock::mutex (makes its first slot). Does not contact the database.
    mutex_lockable(database db, std::string name, mutex_options options,
                   std::shared_ptr<worker_pool> workers);

    std::shared_ptr<async_grant> acquire(acquire_mode mode,
                                         std::chrono::steady_clock::time_point deadline,
                                         const std::stop_token& stop) override;

    /// Takes a free slot, or makes one. Throws what making a mutex throws.
    std::unique_ptr<mutex> take_slot();
    /// Keeps `slot` (holding nothing) for the next acquire. Never throws.
    void give_back(std::unique_ptr<mutex> slot) noexcept;

private:
    const database m_db;
    const mutex_options m_options;
    std::mutex m_slots_mutex;
    std::vector<std::unique_ptr<mutex>> m_free; ///< guarded by m_slots_mutex
};

} // namespace sqlock::detail
