// Internal: the reaper's part for leases never released (reap_options::settle). A lease that
// looks expired is dropped only once this handle has seen it unchanged for its TTL, on the
// local steady clock, so that no clock decides alone (docs/site/guides/takeover.md).
#pragma once

#include "base/sighting.hpp"
#include "database/lock_context.hpp"
#include "sqlock/database.hpp"

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>

namespace sqlock::detail {

/// db.run() for the reaper's statements. A conflict (MariaDB 1213, PostgreSQL 40P01: a
/// deadlock with a concurrent grant or another reaper) rolled the statement back, so it did
/// nothing; every reap statement re-checks what it deletes, so it is sent again (up to 5
/// tries, a few ms apart) rather than failing a cron run. Other errors are thrown.
result run_reap(lock_context& db, statement id, std::initializer_list<param> params);

class stale_lease_reaper {
public:
    /// Reads the held leases that look expired for longer than `grace` (`batch` at a time),
    /// drops those this reaper has seen unchanged for their TTL, and waits up to `settle` for
    /// the others to get there. Adds to `out` (deleted, batches, deferred). One pass at a time
    /// per reaper. Throws sqlock::error.
    void reap(lock_context& db, std::int64_t batch, std::int64_t grace,
              std::chrono::milliseconds settle, reap_result& out);

private:
    std::mutex m_mutex;
    /// What the passes so far have seen of leases that look expired, by name.
    std::map<std::string, lease_sighting> m_sightings;
};

} // namespace sqlock::detail
