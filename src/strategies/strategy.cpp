#include "strategies/strategy.hpp"

#include "base/rows.hpp"

#include <algorithm>

namespace sqlock::detail {

std::chrono::milliseconds lease_margin(std::chrono::milliseconds ttl) {
    // Absorbs clock-rate differences and the delay before the watchdog thread gets to run on a
    // busy host.
    using std::chrono::milliseconds;
    return std::min(std::clamp<milliseconds>(ttl / 10, milliseconds(25), std::chrono::seconds(1)),
                    ttl / 2);
}

std::chrono::steady_clock::time_point lease_end(std::chrono::steady_clock::time_point sent,
                                                std::chrono::milliseconds ttl) {
    // The database counts the TTL from when it ran the statement, which is after `sent`.
    return sent + ttl - lease_margin(ttl);
}

void note_sighting(attempt_state& state, std::int64_t token, std::int64_t lease_seq,
                   std::chrono::milliseconds ttl, std::chrono::milliseconds own_ttl) {
    observe(state.sighting, token, lease_seq, ttl, own_ttl, std::chrono::steady_clock::now());
}

bool drop_if_stale(lock_context& db, const lock_request& req, attempt_state& state) {
    if (!state.sighting || std::chrono::steady_clock::now() < stale_after(*state.sighting))
        return false;
    const auto seen = *state.sighting;
    state.sighting.reset();
    return db.run(statement::drop_stale_lease, {req.name, seen.token, seen.lease_seq})
               .affected_rows > 0;
}

unsigned held_defer_locks(lock_context& db, const lock_request& req) {
    if (!req.defers())
        return 0;
    unsigned held = 0;
    for (const auto& [name] : decode_rows<held_name_row>(
             db.run(statement::waiters_check, {req.defer_param(0), req.defer_param(1)}))) {
        for (std::size_t k = 0; k < req.defer_to.size(); ++k)
            if (!req.defer_to[k].empty() && name == req.defer_to[k])
                held |= 1u << k;
    }
    return held;
}

grant renew_lease(lock_context& db, const lock_request& req, const grant& held) {
    auto sent = std::chrono::steady_clock::now();
    result res;
    // A conflict (1213: on Galera, a concurrent write to our row certified first) rolled the
    // renewal back: it did not happen. Asking again at once tells which: the row is still
    // ours (renewed now) or someone took it (lost). Never treated as renewed.
    for (int tries = 1;; ++tries) {
        try {
            res = db.run(
                statement::renew_lease,
                {req.name, req.owner, static_cast<std::int64_t>(req.ttl.count()), held.token});
            break;
        } catch (const error& e) {
            if (e.code() != errc::conflict || tries >= 3)
                throw; // the lease keeper tries again later, until the lease's local end
        }
        sent = std::chrono::steady_clock::now();
    }
    bool renewed = false;
    if (db.catalog().needs_read_back(statement::renew_lease)) {
        const auto check =
            decode_first<inspect_lock_row>(db.run(statement::inspect_lock, {req.name}));
        // The row still ours means our UPDATE matched it (it checks nothing else).
        renewed = check && check->owner == req.owner && check->token == held.token;
    } else {
        renewed = !res.rows.empty();
    }
    if (!renewed)
        throw error(errc::lock_lost,
                    "lock \"" + std::string(req.name) + "\" in " + db.config().redacted_url +
                        " was lost: its lease (token " + std::to_string(held.token) +
                        ") was taken over or force-released before it could be renewed",
                    std::string(to_string(db.kind())));
    grant g = held;
    g.valid_until = lease_end(sent, req.ttl);
    return g;
}

std::optional<grant> adopt_lost_grant(lock_context& db, const lock_request& req, std::int64_t token,
                                      std::int64_t hold_count) {
    try {
        return renew_lease(db, req, grant{token, hold_count, {}, {}, {}});
    } catch (const error& e) {
        if (e.code() != errc::lock_lost)
            throw;
        return std::nullopt;
    }
}

void throw_kept_strategy(const lock_context& db, std::string_view name) {
    throw error(errc::invalid_argument,
                "lock \"" + std::string(name) + "\" in " + db.config().redacted_url +
                    " is a select_for_update lock: a name keeps the strategy it was first "
                    "locked with (lock it with select_for_update, or use another name)",
                std::string(to_string(db.kind())));
}

std::unique_ptr<lock_strategy> make_strategy(strategy s, backend_kind backend) {
    switch (s) {
    case strategy::unique_key:
        return make_unique_key_strategy();
    case strategy::select_for_update:
        return make_select_for_update_strategy();
    case strategy::optimistic_version:
        return make_optimistic_version_strategy();
    }
    throw error(errc::invalid_argument,
                "unknown strategy value for a " + std::string(to_string(backend)) + " lock");
}

} // namespace sqlock::detail
