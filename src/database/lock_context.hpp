// Internal: what a lock strategy may use of a database handle, and nothing more: its
// statements, the sessions a lock keeps, the durable token mark and a few answers about the
// server. database_impl is the one implementation; strategies see only this.
#pragma once

#include "base/config.hpp"
#include "base/session.hpp"
#include "base/statements.hpp"
#include "sqlock/database.hpp"
#include "sqlock/error.hpp"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>

namespace sqlock::detail {

class lock_context {
public:
    virtual ~lock_context() = default;

    virtual backend_kind kind() const noexcept = 0;
    virtual const connection_config& config() const noexcept = 0;
    virtual const connect_options& options() const noexcept = 0;
    virtual const sql_catalog& catalog() const noexcept = 0;
    /// This context, shared: what a kept session holds on to so that it can be given back
    /// (unpin, unpin_seat) after the caller's handle is gone.
    virtual std::shared_ptr<lock_context> shared_context() = 0;

    /// One statement on a pooled connection, or on the session a route_scope names for this
    /// context on this thread. A missing table is errc::schema_missing. Throws sqlock::error.
    virtual result run(statement id, std::initializer_list<param> params) = 0;
    virtual result run(statement id, std::span<const param> params) = 0;
    /// A release statement with an asynchronous commit where the backend has one (not synced
    /// until the next durable commit); elsewhere just the statement.
    virtual result run_async_release(statement id, std::initializer_list<param> params) = 0;
    /// `e` as users should read it: errc::schema_missing rewritten into the message they act
    /// on ("run sqlock migrate", naming the table and database); other errors unchanged.
    virtual error with_context(const error& e) const = 0;
    /// Throws with_context(e).
    [[noreturn]] void rethrow_with_context(const error& e) const { throw with_context(e); }

    /// A session kept for one lock on `lock_name` (a select_for_update hold), outside the
    /// pool's accounting until unpin() takes it back. Throws sqlock::error.
    virtual std::unique_ptr<session> pin(std::string_view lock_name) = 0;
    /// Takes back pin()'s session (rolled back, unsubscribed, kept for reuse when healthy).
    virtual void unpin(std::string_view lock_name, std::unique_ptr<session> s) noexcept = 0;
    /// A session like the pool's, kept for one waiter and the hold it gets (a queue seat).
    virtual std::unique_ptr<session> pin_seat(std::string_view lock_name) = 0;
    /// Takes back pin_seat()'s session. Never throws.
    virtual void unpin_seat(std::string_view lock_name, std::unique_ptr<session> s) noexcept = 0;
    /// A lock session reaches the tables (not a per-name lock file).
    virtual bool lock_sessions_reach_tables() const noexcept = 0;
    /// unique_key waiters queue in the server (uk_queue_enter) here and now.
    virtual bool queues_waiters() const noexcept = 0;

    /// select_for_update's durable token mark (database/tokens.cpp): before a grant with
    /// `token` is handed out, makes sure a crash cannot hand it out again.
    virtual void cover_token_durably(std::int64_t token) = 0;
    /// Raises the durable mark on lock session `s` itself when it may not cover the next
    /// tokens (nor `at_least` + half a reserve block).
    virtual void reserve_tokens_on(session& s, std::int64_t at_least) = 0;
    /// True where reserve_tokens_on() does something.
    virtual bool reserves_on_lock_session() const noexcept = 0;
    /// True when `token` may be handed out without raising the durable mark first.
    virtual bool token_covered(std::int64_t token) const noexcept = 0;
    /// Throws errc::topology where row locks would hold on one node of several.
    virtual void require_row_locks_safe() const = 0;
};

/// While alive, run() and run_async_release() of `db` on this thread send through `s`
/// instead of a pooled session, so that a lock's statements share the one connection it
/// already keeps (a queue seat, a waiter's session: docs/site/guides/connections.md). A null or
/// broken `s` routes nothing. Scopes nest; the innermost wins.
class route_scope {
public:
    route_scope(const lock_context& db, session* s) noexcept;
    ~route_scope();
    route_scope(const route_scope&) = delete;
    route_scope& operator=(const route_scope&) = delete;

    /// The session routed for `db` on this thread, if any and still usable.
    static session* current(const lock_context& db) noexcept;
    /// Installs `innermost` as the calling thread's innermost scope and returns the one it
    /// had: a fiber host carries a fiber's scopes with it (as wait_scopes). Never throws.
    static route_scope* exchange_innermost(route_scope* innermost) noexcept;

private:
    const lock_context* m_db;
    session* m_session;
    route_scope* m_outer;
};

} // namespace sqlock::detail
