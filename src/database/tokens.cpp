// The durable high-water mark that covers every select_for_update token handed out.
#include "database/tokens.hpp"

#include "base/rows.hpp"
#include "sqlock/error.hpp"

#include <algorithm>

namespace sqlock::detail {

namespace {
/// Raises `value` to `to` (never lowers it), against concurrent raises.
void raise_to(std::atomic<std::int64_t>& value, std::int64_t to) noexcept {
    auto seen = value.load();
    while (seen < to && !value.compare_exchange_weak(seen, to)) {
    }
}

/// The high-water mark in fu_raise_hwm's reply; 0 when there is none (a no-op statement).
std::int64_t raised_mark(const result& r) {
    const auto mark = decode_first<token_hwm_row>(r);
    return mark ? mark->value : 0;
}
} // namespace

bool token_guard::covered(std::int64_t token) const noexcept {
    return !reserves() || token <= m_durable_hwm.load();
}

void token_guard::cover(std::int64_t token,
                        const std::function<result(std::int64_t, std::int64_t)>& raise,
                        const std::string& where) {
    raise_to(m_seen, token);
    if (covered(token))
        return;
    const std::int64_t hwm = raised_mark(raise(token, reserve_block));
    if (hwm < token)
        throw error(errc::schema_missing, "the fencing-token high-water mark in " + where +
                                              " is missing or below token " +
                                              std::to_string(token) + ": run sqlock migrate");
    raise_to(m_durable_hwm, hwm);
}

bool token_guard::reserve_on(session& s, std::int64_t at_least) {
    // Half a block of headroom: tokens drawn meanwhile by other processes (which reserve
    // their own) rarely use it up; when they do, the caller reserves again from the token it
    // got (at_least).
    if (!reserves() ||
        m_durable_hwm.load() >= std::max(m_seen.load(), at_least) + reserve_block / 2)
        return false;
    const auto r = s.execute(statement::fu_raise_hwm, {std::int64_t{0}, reserve_block});
    if (s.in_transaction())
        s.commit(); // MariaDB lock sessions: autocommit is off
    raise_to(m_durable_hwm, raised_mark(r));
    return true;
}

} // namespace sqlock::detail
