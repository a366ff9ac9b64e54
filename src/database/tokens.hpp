// Internal: select_for_update's fencing tokens across crashes. A durable high-water mark
// covers every token this handle hands out, so that a crash that sets the token sequence back
// cannot hand one out again (docs/site/guides/fencing.md, "Which crashes tokens survive").
#pragma once

#include "base/session.hpp"
#include "base/statements.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace sqlock::detail {

class token_guard {
public:
    /// Tokens reserved per raise of the durable mark (fu_raise_hwm): one durable commit per
    /// this many tokens per database handle, and at most about this many values skipped by a
    /// crash recovery (fu_recover_tokens).
    static constexpr std::int64_t reserve_block = 65536;

    /// `catalog` (which must outlive the guard) says whether fu_raise_hwm does something on
    /// this backend: it is a no-op where tokens are durable already, and then every token is
    /// covered.
    explicit token_guard(const sql_catalog& catalog) noexcept : m_catalog(catalog) {}

    /// True where the mark is raised at all (fu_raise_hwm is not a no-op).
    bool reserves() const noexcept { return !m_catalog.is_noop(statement::fu_raise_hwm); }
    /// True when `token` may be handed out without raising the mark first. Trusts only the
    /// marks this handle's own durable commits returned (a mark merely read may not be on a
    /// synchronous standby yet).
    bool covered(std::int64_t token) const noexcept;

    /// Before a grant with `token` is handed out: when it is not covered, raises the mark to
    /// token + reserve_block with `raise(token, reserve_block)` (fu_raise_hwm on the pool;
    /// returns its reply). Throws errc::schema_missing, naming `where`, when the mark is
    /// missing or stays below the token; what `raise` throws otherwise.
    void cover(std::int64_t token, const std::function<result(std::int64_t, std::int64_t)>& raise,
               const std::string& where);

    /// Before locking on lock session `s` (outside a transaction): raises the mark on `s`
    /// itself when the marks raised so far may not cover the next tokens (nor `at_least` +
    /// half a block), so that the grant needs no second connection for cover(). Returns true
    /// when it sent a statement. Throws sqlock::error.
    bool reserve_on(session& s, std::int64_t at_least);

private:
    const sql_catalog& m_catalog;
    /// The largest mark a durable fu_raise_hwm of this handle returned (0: none).
    std::atomic<std::int64_t> m_durable_hwm{0};
    /// The largest token this handle handed out (0: none).
    std::atomic<std::int64_t> m_seen{0};
};

} // namespace sqlock::detail
