// Internal: asking the database again when it answered "busy" (a statement that did not run).
#pragma once

#include "base/io_wait.hpp"
#include "sqlock/error.hpp"

#include <chrono>

namespace sqlock::detail {

/// Calls `attempt` and returns what it returns. When it throws errc::timeout or errc::conflict
/// (SQLite's write lock held past busy_timeout, a serialization failure, a deadlock: the
/// statement did not run) and `still_worth_it()` holds, calls it again after `first_pause`,
/// then twice that: three tries at most. Throws what the last try threw; other errors at once.
/// Only for statements that re-check what they change (owner, token), so a repeat is safe.
template <class Attempt, class Worth>
auto retry_if_busy(Attempt attempt, std::chrono::milliseconds first_pause, Worth still_worth_it) {
    for (int retries = 0;; ++retries) {
        try {
            return attempt();
        } catch (const error& e) {
            const bool busy = e.code() == errc::timeout || e.code() == errc::conflict;
            if (!busy || retries >= 2 || !still_worth_it())
                throw;
        }
        pause_for(first_pause * (1 << retries));
    }
}

} // namespace sqlock::detail
