// Fencing tokens across crashes: the durable high-water mark that covers every token handed
// out (docs/site/guides/fencing.md, "Which crashes tokens survive").
#include "base/rows.hpp"
#include "database/database_impl.hpp"

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

void database_impl::cover_token_durably(std::int64_t token) {
    raise_to(m_token_seen, token);
    if (token_covered(token))
        return;
    const auto r = run(statement::fu_raise_hwm, {token, token_reserve_block});
    const std::int64_t hwm = raised_mark(r);
    if (hwm < token)
        throw error(errc::schema_missing, "the fencing-token high-water mark in " +
                                              m_config.redacted_url +
                                              " is missing or below token " +
                                              std::to_string(token) + ": run sqlock migrate");
    raise_to(m_durable_token_hwm, hwm);
}

bool database_impl::reserves_on_lock_session() const noexcept {
    return !m_catalog.is_noop(statement::fu_raise_hwm);
}

bool database_impl::token_covered(std::int64_t token) const noexcept {
    return !reserves_on_lock_session() || token <= m_durable_token_hwm.load();
}

void database_impl::reserve_tokens_on(session& s, std::int64_t at_least) {
    // Half a block of headroom: tokens drawn meanwhile by other processes (which reserve
    // their own) rarely use it up; when they do, the caller reserves again from the token it
    // got (at_least).
    if (!reserves_on_lock_session() ||
        m_durable_token_hwm.load() >=
            std::max(m_token_seen.load(), at_least) + token_reserve_block / 2)
        return;
    m_statements_sent.fetch_add(1, std::memory_order_relaxed);
    const auto r = s.execute(statement::fu_raise_hwm, {std::int64_t{0}, token_reserve_block});
    if (s.in_transaction())
        s.commit(); // MariaDB lock sessions: autocommit is off
    raise_to(m_durable_token_hwm, raised_mark(r));
}

} // namespace sqlock::detail
