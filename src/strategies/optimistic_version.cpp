// strategy::optimistic_version — compare-and-set on the row's version (the token column).
//
// No row lock is held between statements, so this works behind transaction-mode poolers and
// where long transactions are unwelcome. Statements per operation (pool, autocommit):
//   acquire:  ov_read, then ov_acquire (UPDATE ... WHERE name AND version = the one read)
//             -> 2 round trips; a missing row first gets ov_create (+1). MariaDB has no
//             UPDATE ... RETURNING, so it reads the outcome back with ov_read (+1): success is
//             never inferred from an affected-row count.
//   re-entry: ov_reenter (CAS on our version) [+ ov_read on MariaDB].
//   release:  ov_release (CAS back to a free row) or release_decrement for a re-entrant hold.
// The committed version is the fencing token. New versions come from the token sequence, so
// they keep increasing per name even after the row is reaped and re-created.
// A lease held by someone else is never compared-and-set away: a waiter that saw it unchanged
// (version and lease_seq) for its holder's TTL deletes it (drop_stale_lease), then creates and
// takes a free row.
// Waiting on PostgreSQL and MariaDB (not behind a transaction pooler, not on Galera): a lock()
// whose attempt found the lease held queues in the server on the name's queue lock, as
// unique_key's waiters do (strategies/queue_seat.hpp), and only the head of the line reads and
// compares-and-sets; its grant keeps the queue lock until the release, which then hands it to
// the next in line. Without it a releaser asking again won most grants (handoff at 4
// processes: fairness 1.93 on PostgreSQL, 7.51 on MariaDB). A lock() that could queue also
// leaves a free row to someone in line (ov_read's queue_busy; on PostgreSQL a releaser asking
// again at once otherwise beat the head, woken by NOTIFY, for seconds). The row stays the
// lock: a lost seat costs time, never safety.
#include "base/owner.hpp"
#include "base/rows.hpp"
#include "base/session.hpp"
#include "strategies/queue_seat.hpp"

namespace sqlock::detail {

namespace {

/// The row of `name`; with `defer` (an acquire's request), also which of its defer_to locks
/// are held, in the same statement. queue_busy is always false on SQLite (see ov_read.sql).
std::optional<ov_read_row> read_row(lock_context& db, std::string_view name,
                                    const lock_request* defer = nullptr) {
    return decode_first<ov_read_row>(
        db.run(statement::ov_read, {name, defer ? defer->defer_param(0) : nullptr,
                                    defer ? defer->defer_param(1) : nullptr}));
}

/// After a compare-and-set on a free row failed: when the row is a select_for_update lock
/// (ov_acquire never takes one), throws (throw_kept_strategy). Otherwise another acquirer came
/// first, and this returns.
void refuse_other_strategy(lock_context& db, const lock_request& req) {
    const auto found = decode_first<inspect_lock_row>(db.run(statement::inspect_lock, {req.name}));
    if (found && found->strategy == "select_for_update")
        throw_kept_strategy(db, req.name);
}

[[noreturn]] void throw_lost(const lock_context& db, const lock_request& req,
                             const std::string& why) {
    throw error(errc::lock_lost,
                "lock \"" + std::string(req.name) + "\" in " + db.config().redacted_url +
                    " was lost: " + why,
                std::string(to_string(db.kind())));
}

class optimistic_version_strategy final : public lock_strategy {
public:
    std::optional<grant> try_acquire(lock_context& db, const lock_request& req,
                                     std::chrono::milliseconds wait,
                                     attempt_state& state) override {
        return not_granted_on_conflict(state,
                                       [&] { return attempt_in_turn(db, req, wait, state); });
    }

private:
    /// Polling alone lets a releaser that asks again win nearly every time (it needs no wake-up):
    /// on PostgreSQL and MariaDB a lock() that may wait queues in the server like unique_key's
    /// waiters (strategies/queue_seat.hpp), and only the head of the line reads and sets the
    /// version. `wait` bounds one wait in that queue; the caller still polls between attempts.
    std::optional<grant> attempt_in_turn(lock_context& db, const lock_request& req,
                                         std::chrono::milliseconds wait, attempt_state& state) {
        const bool queue = wait != server_wait::none && !state.no_queue && db.queues_waiters();
        const bool inside =
            state.seat && state.seat->usable() && state.seat->where == queue_seat::place::inside;
        if (!queue && !inside) {
            // No queue wait this time (none possible, or the last attempt at the deadline): a
            // seat this call still keeps carries it, so that it needs no second connection
            // (a pinned seat is out of the pool's count: one more would be a new connect).
            const route_scope via_seat(db, seat_session(state));
            return attempt(db, req, state, false);
        }
        if (!inside && !state.queue_first) {
            // Ask first (uncontended: no seat, no queue), but never past someone in line
            // unless one of this call's own queue waits ran out (the head may have stopped).
            if (auto g = attempt(db, req, state, !state.bypass_queue))
                return g;
            state.contended = true;
        }
        if (!inside && !enter_queue(db, req, wait, state))
            return std::nullopt;
        // First in line: the attempt runs on the seat, which the grant keeps until its release.
        std::optional<grant> g;
        try {
            const route_scope via_seat(db, seat_session(state));
            g = attempt(db, req, state, false);
        } catch (const error& e) {
            if (e.code() == errc::connection)
                state.seat.reset(); // its session is gone, and the place with it
            throw;
        }
        if (!g) {
            state.contended = true; // first in line, but the lease is held: wait for it
            return std::nullopt;
        }
        if (state.seat) {
            state.seat->get().unlisten(); // it listened while this call waited at the head
            g->seat = std::move(state.seat);
        }
        return g;
    }

public:
    /// One read and compare-and-set. `defer`: a free row is not taken while someone else is in
    /// the name's queue (row.queue_busy); that counts as contended.
    std::optional<grant> attempt(lock_context& db, const lock_request& req, attempt_state& state,
                                 bool defer) {
        drop_if_stale(db, req, state); // a holder that stopped renewing for its whole TTL
        auto row = read_row(db, req.name, &req);
        if (!row) {
            db.run(statement::ov_create, {req.name});
            row = read_row(db, req.name, &req);
            if (!row)
                return std::nullopt; // created and reaped at once: try again later
        }
        // Ours and newer than this mutex's last grant: an earlier attempt's grant whose reply
        // was lost (and its read-back too). Adopted with a fresh lease, not waited out for a
        // TTL; owner ids name one mutex object and thread, so no other lock() made it.
        if (row->held && row->owner == req.owner && row->token > req.last_token)
            return adopt_lost_grant(db, req, row->token, row->hold_count);
        if (row->deferred != 0) { // someone who goes first (req.defer_to) holds or waits
            state.deferred = row->deferred;
            return std::nullopt;
        }
        if (row->held) { // someone holds it: watch its lease
            note_sighting(state, row->token, row->lease_seq, std::chrono::milliseconds(row->ttl_ms),
                          req.ttl);
            state.contended = true;
            return std::nullopt;
        }
        if (defer && row->queue_busy) {
            state.contended = true;
            return std::nullopt;
        }
        const auto sent = std::chrono::steady_clock::now();
        const auto& me = this_process();
        std::optional<std::int64_t> token;
        try {
            token =
                compare_and_set(db, statement::ov_acquire, req,
                                {req.name, req.owner, static_cast<std::int64_t>(req.ttl.count()),
                                 std::string_view(me.host), me.pid, row->token});
        } catch (const error& e) {
            if (e.code() != errc::connection)
                throw;
            // Reply lost: read the row by owner. Ours means granted, by this attempt or (a
            // statement the server finished after its connection died) an earlier one: renewed
            // rather than timed from `sent`. A cancel does not abandon the read's connect: a
            // grant it finds is given back.
            const finish_connects to_the_end;
            token = confirmed_by_read(db, req);
            if (!token)
                throw;
            return adopt_lost_grant(db, req, *token, 1);
        }
        if (!token) {
            refuse_other_strategy(db, req);
            state.contended = true;
            return std::nullopt; // another acquirer's CAS came first
        }
        return grant{*token, 1, lease_end(sent, req.ttl), {}, {}};
    }

    grant reenter(lock_context& db, const lock_request& req, const grant& held) override {
        const auto sent = std::chrono::steady_clock::now();
        const auto token = compare_and_set(
            db, statement::ov_reenter, req,
            {req.name, req.owner, static_cast<std::int64_t>(req.ttl.count()), held.token});
        if (!token || *token != held.token)
            throw_lost(db, req, "its lease was taken over before the re-entrant lock");
        grant g = held;
        g.hold_count = held.hold_count + 1;
        g.valid_until = lease_end(sent, req.ttl);
        return g;
    }

    grant renew(lock_context& db, const lock_request& req, const grant& held) override {
        const route_scope via_seat(db, seat_session(held)); // one connection while queued
        return renew_lease(db, req, held); // a compare-and-set on our version, like release
    }

    void release(lock_context& db, const lock_request& req, const grant& held) override {
        const bool last = held.hold_count <= 1;
        // A hold that came through the server-side queue releases on its seat, then gives the
        // queue lock up (whatever the outcome), so the server hands the turn to the next in line.
        struct leave_queue {
            queue_seat* seat;
            ~leave_queue() {
                if (seat)
                    seat->vacate();
            }
        } leave{last ? held.seat.get() : nullptr};
        const route_scope via_seat(db, seat_session(held));
        for (int tries = 1;; ++tries) {
            std::uint64_t affected = 0;
            try {
                // Both statements always change the row they match (owner, hold_count), so
                // their affected-row counts are exact on every backend.
                affected =
                    last ? db.run_async_release(statement::ov_release,
                                                {req.name, req.owner, held.token})
                               .affected_rows
                         : db.run_async_release(statement::release_decrement,
                                                {req.name, req.owner, held.token, held.hold_count})
                               .affected_rows;
            } catch (const error& e) {
                if (e.code() != errc::connection)
                    throw;
                // The reply was lost (or the statement never reached the server: a pooled
                // session that died with its server). Read the row on a fresh session.
                const auto row =
                    read_back_release(db, held, [&] { return read_row(db, req.name); });
                const bool still_ours =
                    row && row->held && row->owner == req.owner && row->token == held.token;
                const auto outcome = judge_release(held, still_ours, row ? row->hold_count : 0);
                if (outcome == release_doubt::released)
                    return;
                if (outcome == release_doubt::not_sent && tries < 2)
                    continue; // it did not happen: once more, now that the row was reached
                throw;
            }
            if (affected == 0)
                throw_lost(db, req,
                           "its version " + std::to_string(held.token) +
                               " was replaced (the lease expired and was taken over)");
            return;
        }
    }

private:
    /// Runs a compare-and-set; returns the row's token when it matched, nullopt otherwise.
    static std::optional<std::int64_t> compare_and_set(lock_context& db, statement id,
                                                       const lock_request& req,
                                                       std::initializer_list<param> params) {
        const auto res = db.run(id, params);
        if (!db.catalog().needs_read_back(id)) {
            const auto written = decode_first<token_row>(res);
            if (!written)
                return std::nullopt;
            return written->token;
        }
        return confirmed_by_read(db, req);
    }

    /// The row's token when it is ours and held (read back after a CAS whose outcome the
    /// backend does not return, or whose reply was lost).
    static std::optional<std::int64_t> confirmed_by_read(lock_context& db,
                                                         const lock_request& req) {
        const auto row = read_row(db, req.name);
        // An older row of ours (an earlier grant whose release failed) is not this outcome.
        if (row && row->owner == req.owner && row->token > req.last_token && row->held)
            return row->token;
        return std::nullopt;
    }
};

} // namespace

std::unique_ptr<lock_strategy> make_optimistic_version_strategy() {
    return std::make_unique<optimistic_version_strategy>();
}

} // namespace sqlock::detail
