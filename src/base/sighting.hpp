// Internal: the takeover rule that no clock step can break (docs/site/guides/takeover.md). A lease
// held by someone else (unique_key, optimistic_version) may be dropped only by a process that has
// seen it unchanged — same token and lease_seq; every acquire, re-entry and renewal moves lease_seq
// forward — for its holder's whole TTL on its own monotonic clock. The holder's local lease
// (what owns_lock() reads) ends a safety margin before its TTL is up, counted from before the
// statement that set the lease, which the watcher saw only afterwards: so the holder has
// stopped believing in the lease before anyone drops it, whatever any wall clock did.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace sqlock::detail {

/// A lease as one watcher keeps seeing it.
struct lease_sighting {
    std::int64_t token = 0;
    std::int64_t lease_seq = 0;
    std::chrono::milliseconds ttl{};               ///< the holder's TTL, from its row
    std::chrono::steady_clock::time_point since{}; ///< taken after the reply that first showed it
};

/// Records that a lease was seen with (token, lease_seq) in a reply received before `now`
/// (ttl: the holder's TTL from its row; 0 for rows written before schema 5, which count with
/// `fallback_ttl`). An unchanged lease keeps its first sighting's time.
inline void observe(std::optional<lease_sighting>& sighting, std::int64_t token,
                    std::int64_t lease_seq, std::chrono::milliseconds ttl,
                    std::chrono::milliseconds fallback_ttl,
                    std::chrono::steady_clock::time_point now) {
    if (ttl.count() <= 0)
        ttl = fallback_ttl;
    if (sighting && sighting->token == token && sighting->lease_seq == lease_seq)
        return;
    sighting = lease_sighting{token, lease_seq, ttl, now};
}

/// From when the sighted lease may be dropped: its TTL after the first sighting, plus 0.1 % for
/// the holder's monotonic clock running slower than ours (NTP slews a clock by at most 0.05 %).
inline std::chrono::steady_clock::time_point stale_after(const lease_sighting& sighting) {
    return sighting.since + sighting.ttl + sighting.ttl / 1000 + std::chrono::milliseconds(1);
}

} // namespace sqlock::detail
