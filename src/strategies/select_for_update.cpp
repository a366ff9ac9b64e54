// strategy::select_for_update — the lock is a row lock held by an open transaction on a
// connection pinned for the whole hold; COMMIT (or the death of the session) releases it.
//
// Statements per operation, all on the pinned lock session unless noted:
//   acquire: fu_wait, fu_begin, fu_session, fu_lock[_nowait] as one batch. PostgreSQL
//            pipelines it: one round trip. MariaDB skips the settings while unchanged and
//            needs no BEGIN (autocommit is off on lock sessions): one round trip. SQLite runs
//            BEGIN IMMEDIATE on the name's own lock file, then fu_create_row (the row status
//            lists; a mutex's first grant only) and fu_next_token on the pool.
//   first use of a name: + ROLLBACK, fu_create_row (same session), and the batch again.
//   re-entry: fu_check (one round trip; proves the session, and so the lock, is alive).
//   release:  COMMIT (one round trip); a re-entrant hold is counted locally.
//   tokens:   fu_raise_hwm (one durable commit; MariaDB + COMMIT) on the lock session
//             before the batch, when the durable high-water mark this handle raised may not
//             cover its next tokens: the first acquire of a handle, then about once per half
//             token_reserve_block tokens. A grant whose token is still above it (others drew
//             many tokens meanwhile) is given back, reserved for and taken again, so the lock
//             never needs a second connection (the same raise on the pool is the last resort).
//             After a server restart that may have set the token sequence back (fu_lock's
//             second column is 0): ROLLBACK, fu_recover_tokens (same session), and the batch
//             again.
// An uncontended acquire + release is therefore two round trips on PostgreSQL and MariaDB.
//
// Fencing tokens across crashes (docs/site/guides/fencing.md): the token is drawn in a transaction
// that is not committed (let alone durably) when lock() returns, and a crash can set the sequence
// back below it. So every token handed out is first covered by a durable high-water mark, and a
// server incarnation whose sequence may have gone back (PostgreSQL: crash recovery empties an
// unlogged marker table; MariaDB: any restart empties a MEMORY one) hands out nothing until
// the sequence was moved past that mark. See migrations/*/0004_durable_tokens.sql.
//
// Waiting happens on the server (lock_timeout / innodb_lock_wait_timeout + max_statement_time /
// busy_timeout), bounded by the caller's deadline and, per attempt, by half the I/O timeout so
// that a long wait is never mistaken for a dead server.
#include "base/owner.hpp"
#include "base/rows.hpp"
#include "strategies/strategy.hpp"

#include <atomic>

namespace sqlock::detail {

namespace {

class select_for_update_strategy final : public lock_strategy {
    /// This mutex saw the name's row exist (fu_create_row sent once): later grants skip it.
    std::atomic<bool> m_row_known{false};

    /// The lock itself carries no token (SQLite lock files): the name's row first (status lists
    /// the lock by it; once per mutex), then a token, committed on its own so no later grant
    /// can ever get a smaller one. Throws sqlock::error.
    std::int64_t draw_token(lock_context& db, const lock_request& req) {
        if (!m_row_known.load(std::memory_order_relaxed)) {
            db.run(statement::fu_create_row, {req.name});
            m_row_known.store(true, std::memory_order_relaxed);
        }
        return decode_single<token_row>(db.run(statement::fu_next_token, {})).token;
    }

    /// The name's lock session, with the durable token mark raised on it where this handle's
    /// next tokens may not be covered (from `reserve_from`). Throws sqlock::error (unpinned).
    static std::unique_ptr<session> pin_reserved(lock_context& db, const lock_request& req,
                                                 std::int64_t reserve_from) {
        auto s = db.pin(req.name);
        try {
            db.reserve_tokens_on(*s, reserve_from);
        } catch (const error& e) {
            db.unpin(req.name, std::move(s));
            db.rethrow_with_context(e);
        }
        return s;
    }

    /// The lock's batch on `s`: fu_wait, fu_begin, fu_session, fu_lock[_nowait]. nullopt when
    /// the lock stayed held by someone else for all of `wait` (`s` given back); other errors
    /// are thrown with the database's context (`s` given back too).
    static std::optional<std::vector<result>> send_lock_batch(lock_context& db,
                                                              const lock_request& req,
                                                              std::unique_ptr<session>& s,
                                                              std::chrono::milliseconds wait) {
        try {
            // Order matters: the wait applies to BEGIN on SQLite (lock file), and on
            // PostgreSQL the session guards are transaction-local, so they follow BEGIN.
            const batch_item items[] = {
                {statement::fu_wait, {static_cast<std::int64_t>(wait.count())}},
                {statement::fu_begin, {}},
                {statement::fu_session, {req.owner, static_cast<std::int64_t>(req.ttl.count())}},
                {wait == server_wait::none ? statement::fu_lock_nowait : statement::fu_lock,
                 {req.name}},
            };
            return s->execute_batch(items);
        } catch (const error& e) {
            // Rolls back: after a lock timeout the transaction is still open (MariaDB 1205
            // ends only the statement).
            db.unpin(req.name, std::move(s));
            if (e.code() == errc::timeout)
                return std::nullopt;
            db.rethrow_with_context(e);
        }
    }

public:
    bool waits_server_side() const noexcept override { return true; }

    std::optional<grant> try_acquire(lock_context& db, const lock_request& req,
                                     std::chrono::milliseconds wait,
                                     attempt_state& state) override {
        wait = clamp_to_io_timeout(db, wait);
        db.require_row_locks_safe();
        // Locks that go first (req.defer_to) are asked about before the transaction opens: a
        // row lock taken and then given back would cost more (one round trip more than the
        // lock itself on PostgreSQL, where the lock's statements are pipelined).
        if (const unsigned held = held_defer_locks(db, req); held != 0) {
            state.deferred = held;
            return std::nullopt;
        }
        bool created_row = false;
        int recoveries = 0;
        int reserves = 0;
        std::int64_t reserve_from = 0; // a token the mark must cover with headroom
        for (;;) {
            auto s = pin_reserved(db, req, reserve_from);
            const auto sent = std::chrono::steady_clock::now();
            auto results = send_lock_batch(db, req, s, wait);
            if (!results)
                return std::nullopt; // held by someone else for all of `wait`
            const auto& rows = results->back().rows;
            if (rows.empty()) {
                // No row to lock (a missing row locks nothing in PostgreSQL and only a gap in
                // InnoDB): create it outside the transaction, then lock it.
                if (created_row) {
                    db.unpin(req.name, std::move(s));
                    throw error(errc::backend, "lock row for \"" + std::string(req.name) +
                                                   "\" vanished twice while locking it");
                }
                run_beside_lock(db, req.name, std::move(s), statement::fu_create_row, {req.name});
                created_row = true;
                continue;
            }
            if (rows.size() != 1 || rows.front().size() != fu_lock_row::columns.size()) {
                db.unpin(req.name, std::move(s));
                throw error(errc::backend, "locking \"" + std::string(req.name) + "\" returned " +
                                               std::to_string(rows.size()) +
                                               " rows, not 1 row of 2 columns");
            }
            const auto locked = fu_lock_row::decode(rows.front());
            if (!locked.recovered) {
                // The server restarted since the sequence was last moved past the durable
                // high-water mark: this token may repeat one handed out before. Hand it out
                // never; roll back (the row lock goes too), recover, and lock again.
                if (++recoveries > 2) {
                    db.unpin(req.name, std::move(s));
                    throw error(errc::backend,
                                "the fencing-token sequence of " + db.config().redacted_url +
                                    " was not recovered after a restart (the marker table " +
                                    "stays empty)");
                }
                run_beside_lock(db, req.name, std::move(s), statement::fu_recover_tokens, {});
                continue;
            }
            std::int64_t token = locked.token.value_or(0);
            try {
                if (locked.token) {
                    if (!db.token_covered(token) && db.reserves_on_lock_session() &&
                        ++reserves <= 2) {
                        // Others drew past this handle's reserve while it waited. Raising the
                        // mark now would take a second connection (this one is in the lock's
                        // transaction): give the lock back, reserve here, and lock again.
                        db.unpin(req.name, std::move(s));
                        reserve_from = token;
                        continue;
                    }
                } else {
                    token = draw_token(db, req);
                }
                db.cover_token_durably(token);
            } catch (...) {
                db.unpin(req.name, std::move(s));
                throw;
            }
            return grant{
                token, 1, lease_end(sent, req.ttl), pin_shared(db, req.name, std::move(s)), {}};
        }
    }

    grant reenter(lock_context& db, const lock_request& req, const grant& held) override {
        grant g = held;
        const auto sent = std::chrono::steady_clock::now();
        try {
            if (!held.pinned || !held.pinned->usable())
                throw error(errc::connection, "the lock session is closed");
            held.pinned->execute(statement::fu_check, {});
        } catch (const error& e) {
            throw error(errc::lock_lost,
                        "lock \"" + std::string(req.name) + "\" in " + db.config().redacted_url +
                            " was lost: its session ended (" + e.what() + ")",
                        e.backend(), e.native_code(), e.sqlstate());
        }
        g.hold_count = held.hold_count + 1;
        g.valid_until = lease_end(sent, req.ttl); // the server's idle timer restarted too
        return g;
    }

    grant renew(lock_context& db, const lock_request& req, const grant& held) override {
        // Any statement restarts the server's idle-in-transaction timer; fu_check also proves
        // the session (and so the lock) is still there.
        grant g = reenter(db, req, held);
        g.hold_count = held.hold_count;
        return g;
    }

    void release(lock_context& db, const lock_request& req, const grant& held) override {
        if (held.hold_count > 1)
            return; // re-entrant holds share the one transaction
        try {
            if (!held.pinned || !held.pinned->usable())
                throw error(errc::connection, "the lock session is closed");
            held.pinned->commit();
        } catch (const error& e) {
            // The session died (idle timeout, killed, network): the server rolled the
            // transaction back when it ended, possibly long before this release.
            throw error(errc::lock_lost,
                        "lock \"" + std::string(req.name) + "\" in " + db.config().redacted_url +
                            " was lost before release: its session ended (" + e.what() + ")",
                        e.backend(), e.native_code(), e.sqlstate());
        }
    }

private:
    /// Runs `id` on lock session `s` outside the lock's transaction (rolled back first,
    /// committed after: MariaDB lock sessions run with autocommit off), so that it needs no
    /// second connection, then hands `s` back. SQLite lock sessions are on the name's lock
    /// file, so there it runs on the pool. Throws sqlock::error.
    static void run_beside_lock(lock_context& db, std::string_view name, std::unique_ptr<session> s,
                                statement id, std::initializer_list<param> params) {
        if (!db.lock_sessions_reach_tables()) {
            db.unpin(name, std::move(s));
            db.run(id, params);
            return;
        }
        try {
            s->rollback();
            s->execute(id, params);
            if (s->in_transaction())
                s->commit();
        } catch (const error& e) {
            db.unpin(name, std::move(s));
            db.rethrow_with_context(e);
        }
        db.unpin(name, std::move(s));
    }

    static std::chrono::milliseconds clamp_to_io_timeout(const lock_context& db,
                                                         std::chrono::milliseconds wait) {
        const auto io = db.options().io_timeout;
        if (io.count() <= 0 || wait == server_wait::none)
            return wait;
        const auto limit = std::max<std::chrono::milliseconds>(io / 2, std::chrono::seconds(1));
        return (wait == server_wait::forever || wait > limit) ? limit : wait;
    }

    /// Shares a pinned session; the last copy hands it back to the database.
    static std::shared_ptr<session> pin_shared(lock_context& db, std::string_view name,
                                               std::unique_ptr<session> s) {
        auto owner = db.shared_context();
        return std::shared_ptr<session>(s.release(), [owner, name = std::string(name)](session* p) {
            owner->unpin(name, std::unique_ptr<session>(p));
        });
    }
};

} // namespace

std::unique_ptr<lock_strategy> make_select_for_update_strategy() {
    return std::make_unique<select_for_update_strategy>();
}

} // namespace sqlock::detail
