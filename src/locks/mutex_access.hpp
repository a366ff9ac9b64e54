// Internal: the door from sqlock's own locks to the members of sqlock::mutex that applications
// do not get (mutex.hpp befriends this type and nothing else). A semaphore's permits and queue
// and a shared_mutex's writer gate are mutexes with reserved names, and a permit's acquire may
// be held back for the lock's queue or gate.
#pragma once

#include "sqlock/database.hpp"
#include "sqlock/mutex.hpp"

#include <array>
#include <memory>
#include <string>
#include <string_view>

namespace sqlock::detail {

class mutex_access {
public:
    /// One of sqlock's own locks: `name` is "NAME<0x1f>ROLE" with NAME valid as a mutex's name
    /// and ROLE printable, the whole at most max_name_length bytes (errc::invalid_argument
    /// otherwise). Does not contact the database.
    static std::unique_ptr<mutex> make_reserved(database db, std::string name,
                                                mutex_options options) {
        return std::unique_ptr<mutex>(new mutex(mutex::reserved_name_t{}, std::move(db),
                                                std::move(name), std::move(options)));
    }

    /// m.try_lock() for a semaphore's permits: a new grant is held back while another owner
    /// holds a lock named in `defer_to` (its queue, a writer gate); returns false then, with a
    /// bit per held name in `deferred` (0: not held back).
    static bool try_lock_deferring(mutex& m, const std::array<std::string_view, 2>& defer_to,
                                   unsigned& deferred) {
        deferred = 0;
        return m.try_lock_until_steady(std::chrono::steady_clock::time_point::min(), &defer_to,
                                       &deferred);
    }
};

} // namespace sqlock::detail
