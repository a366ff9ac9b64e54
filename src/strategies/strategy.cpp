#include "strategies/strategy.hpp"

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

grant renew_lease(database_impl& db, const lock_request& req, const grant& held) {
    const auto sent = std::chrono::steady_clock::now();
    const auto res =
        db.run(statement::renew_lease,
               {req.name, req.owner, static_cast<std::int64_t>(req.ttl.count()), held.token});
    bool renewed = false;
    if (db.catalog().needs_read_back(statement::renew_lease)) {
        const auto check = db.run(statement::inspect_lock, {req.name});
        renewed = !check.rows.empty() && check.rows[0].at(0).value_or("") == req.owner &&
                  column_int(check.rows[0].at(1)) == held.token &&
                  column_int(check.rows[0].at(3)) > 0;
    } else {
        renewed = !res.rows.empty();
    }
    if (!renewed)
        throw error(errc::lock_lost,
                    "lock \"" + std::string(req.name) + "\" in " + db.config().redacted_url +
                        " was lost: its lease (token " + std::to_string(held.token) +
                        ") expired or was taken over before it could be renewed",
                    std::string(to_string(db.kind())));
    grant g = held;
    g.valid_until = lease_end(sent, req.ttl);
    return g;
}

std::unique_ptr<lock_strategy> make_strategy(strategy s, backend_kind backend) {
    switch (s) {
    case strategy::unique_key:
        return make_unique_key_strategy(backend);
    case strategy::select_for_update:
        return make_select_for_update_strategy();
    case strategy::optimistic_version:
        return make_optimistic_version_strategy();
    }
    throw error(errc::invalid_argument,
                "unknown strategy value for a " + std::string(to_string(backend)) + " lock");
}

} // namespace sqlock::detail
