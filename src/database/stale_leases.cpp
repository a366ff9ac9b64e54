// Dropping leases never released, once seen unchanged for their TTL (stale_lease_reaper).
#include "database/stale_leases.hpp"

#include "base/rows.hpp"

#include <algorithm>
#include <optional>
#include <thread>

namespace sqlock::detail {

result run_reap(lock_context& db, statement id, std::initializer_list<param> params) {
    for (int tries = 1;; ++tries) {
        try {
            return db.run(id, params);
        } catch (const error& e) {
            if (e.code() != errc::conflict || tries >= 5)
                throw;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2 * tries)); // let the winner finish
    }
}

void stale_lease_reaper::reap(lock_context& db, std::int64_t batch, std::int64_t grace,
                              std::chrono::milliseconds settle, reap_result& out) {
    using clock = std::chrono::steady_clock;
    const auto give_up = clock::now() + settle;
    std::lock_guard guard(m_mutex); // one pass at a time per handle: one set of sightings
    for (;;) {
        const auto candidates = run_reap(db, statement::reap_candidates, {batch, grace});
        ++out.batches;
        const auto now = clock::now();
        std::map<std::string, lease_sighting> seen;
        for (const auto& r : decode_rows<reap_candidate_row>(candidates)) {
            const auto& name = r.name;
            std::optional<lease_sighting> sighting;
            if (const auto it = m_sightings.find(name); it != m_sightings.end())
                sighting = it->second;
            const auto ttl = std::chrono::milliseconds(r.ttl_ms);
            observe(sighting, r.token, r.lease_seq, ttl,
                    std::chrono::milliseconds(std::max<std::int64_t>(ttl.count(), 1)), now);
            seen.emplace(name, *sighting);
        }
        m_sightings = seen; // leases renewed, released or gone are forgotten
        clock::time_point next = clock::time_point::max();
        std::size_t waiting = 0;
        bool dropped_any = false;
        for (const auto& [name, sighting] : seen) {
            if (now < stale_after(sighting)) {
                ++waiting;
                next = std::min(next, stale_after(sighting));
                continue;
            }
            const auto res = run_reap(db, statement::drop_stale_lease,
                                      {std::string_view(name), sighting.token, sighting.lease_seq});
            ++out.batches;
            out.deleted += res.affected_rows;
            dropped_any = true;
            m_sightings.erase(name);
        }
        out.deferred = waiting;
        const bool full = candidates.rows.size() >= static_cast<std::size_t>(batch);
        if (full && dropped_any)
            continue; // the next page
        if (waiting == 0 || next > give_up)
            return; // done, or the rest settles in a later pass of this handle
        std::this_thread::sleep_until(next);
    }
}

} // namespace sqlock::detail
