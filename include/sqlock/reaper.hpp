/// @file
/// reaper.hpp: an optional in-process reaper, for applications that prefer it to a cron job.
#pragma once

#include "sqlock/database.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace sqlock {

/// Runs database::reap(options) every `interval` on a background thread until destroyed (the
/// run ledger is pruned at the first pass and then at most every 10 minutes).
/// Reaping is hygiene, never needed for liveness: an expired lease is taken over without it.
/// Failures are kept in last_error() and retried at the next interval; they never throw.
///
/// Thread safety: the accessors may be called from any thread while the reaper runs.
class reaper {
public:
    /// Starts the background thread; its first pass runs at once. Throws
    /// errc::invalid_argument when `interval` is not positive. `options` are not checked here:
    /// options that reap() refuses make every pass fail (see last_error()).
    reaper(database db, std::chrono::milliseconds interval, reap_options options = {});
    ~reaper(); ///< stops the thread (waits for a running batch to finish)
    reaper(const reaper&) = delete;
    reaper& operator=(const reaper&) = delete;

    /// Rows deleted since start.
    std::size_t total_deleted() const;
    /// Completed reap passes since start.
    std::size_t passes() const;
    /// The last failure ("" when the last pass succeeded).
    std::string last_error() const;

private:
    struct state;
    std::unique_ptr<state> m_state;
};

} // namespace sqlock
