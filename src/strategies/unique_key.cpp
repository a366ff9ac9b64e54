// strategy::unique_key — a lease row under the lock name's primary key.
//
// Statements per operation (each one round trip, autocommit, one durable commit):
//   acquire / take over expired / re-enter : acquire_unique_key (INSERT ... ON CONFLICT/ON
//                                             DUPLICATE KEY ... RETURNING token)
//   release (last hold)                    : release_lease    (DELETE ... owner AND token)
//   release (re-entrant hold)              : release_decrement (UPDATE hold_count - 1 ...)
// Only when a reply is lost (connection error) one extra inspect_lock resolves the doubt by
// reading the row by owner: an outcome is never guessed and never blindly retried.
//
// Waiting on PostgreSQL and MariaDB: after a first attempt found the lease held, the waiter
// queues in the server on the name's queue lock (uk_queue_enter, a session-level lock on a
// pinned "seat" session: a PostgreSQL advisory lock, a MariaDB GET_LOCK user lock), then tries
// the lease (acquire_unique_key). PostgreSQL pipelines the two, one round trip; MariaDB's
// driver cannot, so there the acquire follows once the queue lock is ours (one more round
// trip, and only after a wait). The holder of the queue lock is the lease's holder or the
// next in line; a release commits, then gives the queue lock up (uk_queue_leave), and the
// server wakes the next waiter, which tries at once: no NOTIFY hop, no poll, first come first
// served. On MariaDB a lock() that could queue does not take even a free lease while another
// session holds the queue lock (acquire_unique_key's $7): it queues behind, until one of its
// own queue waits ran out; a grant made past a waiter anyway (try_lock, or after such a wait:
// queue_busy) counts as contended, so that process queues first next time. (PostgreSQL leaves
// the check out, pg_locks costs more than an acquire: its head is woken by NOTIFY instead.)
// The queue only orders waiters; the lease row stays the lock, so a seat whose session dies
// loses nothing, and each queue wait is bounded (queue_step) so that a stalled seat holder
// delays a takeover of an expired lease by at most that. SQLite waiters poll with jittered
// backoff (and a waiter at the head of a queue behind a holder that did not queue polls too;
// PostgreSQL: woken by LISTEN/NOTIFY).
#include "base/owner.hpp"
#include "base/rows.hpp"
#include "base/session.hpp"
#include "strategies/queue_seat.hpp"

namespace sqlock::detail {

namespace {

/// The row of lock `name` (inspect_lock), if there is one.
std::optional<inspect_lock_row> inspect(lock_context& db, std::string_view name) {
    return decode_first<inspect_lock_row>(db.run(statement::inspect_lock, {name}));
}

/// acquire_unique_key's reply: its row, or nullopt when it returned none.
using acquire_reply = std::optional<acquire_unique_key_row>;

/// After acquire_unique_key did not grant (a new grant, not a re-entry): when the row is ours
/// with a token newer than this mutex's last grant, it is an earlier attempt's grant whose reply
/// was lost and whose read-back failed too (a failover, a dropped connection). It is adopted,
/// renewed at once so its lease counts from a statement we saw sent; waiting for it to expire
/// would stall this lock for a whole TTL. Otherwise notes what the reply showed of the lease
/// held by someone else (PostgreSQL and MariaDB return the current row); where it returns none
/// (SQLite: in process, no round trip) the row is read. Owner ids name one mutex object and
/// thread (base/owner.hpp), so no other lock() can have made that row.
std::optional<grant> adopt_or_note(lock_context& db, const lock_request& req,
                                   const acquire_reply& reply, attempt_state* state) {
    using std::chrono::milliseconds;
    std::int64_t token = 0, hold_count = 0, lease_seq = 0, ttl_ms = 0;
    bool mine = false;
    if (reply) {
        token = reply->token;
        hold_count = reply->hold_count;
        lease_seq = reply->lease_seq;
        ttl_ms = reply->ttl_ms;
        mine = reply->mine;
    } else if (const auto row = inspect(db, req.name);
               row && row->strategy == "select_for_update") {
        throw_kept_strategy(db, req.name);
    } else if (row && !row->owner.empty()) {
        token = row->token;
        hold_count = row->hold_count;
        lease_seq = row->lease_seq;
        ttl_ms = row->ttl_ms;
        mine = row->owner == req.owner;
    } else {
        return std::nullopt;
    }
    if (mine && token > req.last_token)
        return adopt_lost_grant(db, req, token, hold_count);
    if (state)
        note_sighting(*state, token, lease_seq, milliseconds(ttl_ms), req.ttl);
    return std::nullopt;
}

[[noreturn]] void throw_lost(const lock_context& db, const lock_request& req, std::string why) {
    throw error(errc::lock_lost,
                "lock \"" + std::string(req.name) + "\" in " + db.config().redacted_url +
                    " was lost: " + why,
                std::string(to_string(db.kind())));
}

/// The acquire statement for `req` (held_token: re-entry), as a batch item. `defer`: hold a
/// new grant back while another session holds the name's queue lock (a waiter is in line);
/// where a backend does so (MariaDB), such an acquire returns no row. A new grant is held
/// back too while a lock in req.defer_to is held (see acquire_statement).
batch_item acquire_item(const lock_request& req, param held_token, bool defer) {
    const auto& me = this_process();
    return {statement::acquire_unique_key,
            {req.name, req.owner, static_cast<std::int64_t>(req.ttl.count()),
             std::string_view(me.host), me.pid, held_token, std::int64_t{defer ? 1 : 0},
             req.defer_param(0), req.defer_param(1)}};
}

/// The grant in acquire_unique_key's reply, if it granted. A grant made while another session
/// held the name's queue lock (queue_busy: someone waits in line) counts as contended in
/// `state`, so that the next lock() of this mutex queues behind that waiter.
std::optional<grant> granted(const acquire_reply& reply, std::chrono::steady_clock::time_point sent,
                             std::chrono::milliseconds ttl, attempt_state* state) {
    if (!reply || !reply->granted)
        return std::nullopt;
    if (state && reply->queue_busy)
        state->contended = true;
    return grant{reply->token, reply->hold_count, lease_end(sent, ttl), {}, {}};
}

class unique_key_strategy final : public lock_strategy {
public:
    std::optional<grant> try_acquire(lock_context& db, const lock_request& req,
                                     std::chrono::milliseconds wait,
                                     attempt_state& state) override {
        return not_granted_on_conflict(state, [&] { return attempt(db, req, wait, state); });
    }

    grant reenter(lock_context& db, const lock_request& req, const grant& held) override {
        const route_scope via_seat(db, seat_session(held));
        auto g = acquire_statement(db, req, held.token, nullptr, false);
        if (!g || g->token != held.token)
            throw_lost(db, req, "its lease was taken over before the re-entrant lock");
        g->seat = held.seat;
        return *g;
    }

private:
    std::optional<grant> attempt(lock_context& db, const lock_request& req,
                                 std::chrono::milliseconds wait, attempt_state& state) {
        // While this call has a seat, its statements share the seat's connection (routed
        // only where nothing can close the seat meanwhile).
        {
            const route_scope via_seat(db, seat_session(state));
            drop_if_stale(db, req, state); // a holder that stopped renewing for its whole TTL
        }
        if (state.seat && state.seat->where == queue_seat::place::inside)
            return retry_at_head(db, req, state); // first in line since an earlier attempt
        // The queue's seats hold session-level locks: not behind a transaction pooler, not on
        // Galera (lock_context::queues_waiters()).
        const bool queue = wait != server_wait::none && !state.no_queue && db.queues_waiters();
        if (queue && state.queue_first)
            return queue_up(db, req, wait, state);
        // While waiters queue, a lock() that may queue too defers to them (never overtakes
        // one), until one of its own queue waits ran out: the queue's head may have stopped.
        const bool defer = queue && !state.bypass_queue;
        std::optional<grant> g;
        {
            const route_scope via_seat(db, seat_session(state));
            g = resolving_doubt(db, req,
                                [&] { return acquire_statement(db, req, nullptr, &state, defer); });
        }
        if (g)
            return g;
        state.contended = true;
        return queue ? queue_up(db, req, wait, state) : std::nullopt;
    }

public:
    grant renew(lock_context& db, const lock_request& req, const grant& held) override {
        const route_scope via_seat(db, seat_session(held));
        return renew_lease(db, req, held);
    }

    void release(lock_context& db, const lock_request& req, const grant& held) override {
        const bool last = held.hold_count <= 1;
        // A hold that came through the server-side queue is released on its seat, which then
        // passes the queue on; if that session turns out dead, through the pool like any other.
        bool via_seat = last && held.seat && held.seat->where == queue_seat::place::inside &&
                        held.seat->usable();
        bool retried = false;
        for (;;) {
            std::uint64_t affected = 0;
            try {
                if (!last) {
                    const route_scope on_seat(db, seat_session(held));
                    affected =
                        db.run_async_release(statement::release_decrement,
                                             {req.name, req.owner, held.token, held.hold_count})
                            .affected_rows;
                } else if (via_seat)
                    affected = release_and_pass_on(req, held);
                else
                    affected = db.run_async_release(statement::release_lease,
                                                    {req.name, req.owner, held.token})
                                   .affected_rows;
            } catch (const error& e) {
                if (e.code() != errc::connection)
                    throw;
                const auto row = read_back_release(db, held, [&] { return inspect(db, req.name); });
                const bool still_ours = row && row->owner == req.owner && row->token == held.token;
                const auto outcome = judge_release(held, still_ours, row ? row->hold_count : 0);
                if (outcome == release_doubt::released)
                    return;
                if (outcome == release_doubt::not_sent && via_seat) {
                    via_seat = false; // the seat's session died (and its queue lock with it)
                    continue;
                }
                if (outcome == release_doubt::not_sent && !retried) {
                    // A pooled session that died with its server, say: once more, now that a
                    // fresh session reached the row.
                    retried = true;
                    continue;
                }
                throw;
            }
            if (affected == 0)
                throw_lost(db, req,
                           "its lease expired and was taken over (token " +
                               std::to_string(held.token) + " no longer owns the row)");
            return;
        }
    }

private:
    /// Runs `attempt`; when its reply was lost (connection error) reads the row back: a grant
    /// that happened is kept, one that did not is reported as the connection error.
    template <typename Attempt>
    static std::optional<grant> resolving_doubt(lock_context& db, const lock_request& req,
                                                Attempt&& attempt) {
        try {
            return attempt();
        } catch (const error& e) {
            // A connection refused for lack of slots sent nothing: no doubt to resolve (and
            // reading the row back would only be refused too).
            if (e.code() != errc::connection || is_server_full(e))
                throw;
            const finish_connects to_the_end; // a grant it finds is given back if cancelled
            const auto row = inspect(db, req.name);
            // Ours, and newer than any earlier grant of this mutex: this attempt's grant, or
            // an earlier attempt's whose reply was lost too (its lease may have started long
            // before `sent`), so it is renewed rather than timed from `sent`. The server's
            // clock is not asked: a step would disown it.
            if (row && row->owner == req.owner && row->token > req.last_token) {
                if (auto g = adopt_lost_grant(db, req, row->token, row->hold_count))
                    return g;
                return std::nullopt; // dropped as abandoned meanwhile: never ours to use
            }
            throw;
        }
    }

    /// One acquire (held_token: a re-entry; defer: see acquire_item). Not granted: notes the
    /// holder in `state`, if given.
    static std::optional<grant> acquire_statement(lock_context& db, const lock_request& req,
                                                  param held_token, attempt_state* state,
                                                  bool defer) {
        // Twice at most: a backend whose INSERT branch only creates a free row (MariaDB, so
        // that tokens are drawn under the row lock) says so in the 4th column; the repeat
        // then takes that row.
        for (int attempt = 0;; ++attempt) {
            const auto sent = std::chrono::steady_clock::now();
            const auto item = acquire_item(req, held_token, defer);
            const auto reply = decode_first<acquire_unique_key_row>(db.run(item.id, item.params));
            if (auto g = granted(reply, sent, req.ttl, state))
                return g;
            const bool reentry = !std::holds_alternative<std::nullptr_t>(held_token);
            if (state && !reentry && req.defers()) {
                // Held back for a lock in req.defer_to: PostgreSQL's reply says so; the other
                // backends return no row then (as SQLite does for a held lock too), and only
                // then is it worth asking.
                const unsigned held = reply ? reply->deferred : held_defer_locks(db, req);
                if (held != 0) {
                    state->deferred = held;
                    return std::nullopt;
                }
            }
            if (defer && !reply) {
                // Held back: someone waits in the server-side queue (defer is only asked where
                // waiters queue, and there an acquire otherwise always returns the row).
                if (state)
                    state->contended = true;
                return std::nullopt;
            }
            const bool created_free_row = reply && reply->created_free_row;
            if (!created_free_row || attempt > 0 || reentry) {
                if (!reentry && !created_free_row)
                    return adopt_or_note(db, req, reply, state);
                return std::nullopt; // held by someone else (or a re-entry that found no row)
            }
        }
    }

    /// Joins the server-side queue for `req.name` and, once first in line, tries the lease
    /// (one pipelined round trip). Returns the grant, or nullopt: the lease is still held (the
    /// seat stays first in line for the next attempt) or the wait ended first (the seat stays
    /// outside, ready for another try).
    static std::optional<grant> queue_up(lock_context& db, const lock_request& req,
                                         std::chrono::milliseconds wait, attempt_state& state) {
        const auto entry = queue_entry_items(req.name, queue_step(db, wait));
        // The server refused one more connection (max_connections) or could not be reached:
        // waiting by polling still works, with the connections we have.
        if (!open_seat(db, req, state))
            return std::nullopt;
        auto& seat = *state.seat;
        const auto sent = std::chrono::steady_clock::now();
        // The queue lock, then the acquire behind it (on the seat: the queue lock's holder),
        // which waits without a lock timeout, as on a pooled session. Not our turn within the
        // step: nothing held, and the next attempt (at once: this one waited) tries the lease
        // directly first, so that an expired lease is taken if the queue's head has stopped.
        const batch_item items[] = {entry[0], entry[1], entry[2], acquire_item(req, nullptr, true)};
        constexpr std::size_t enter = queue_enter_item;
        std::vector<result> results;
        // When the acquire was sent: its grant's lease counts from there.
        auto acquire_sent = sent;
        seat.where = queue_seat::place::unknown; // until the outcome is known
        try {
            if (seat.get().pipelines()) {
                // One round trip; the acquire was sent at `sent` and ran after the wait, so a
                // grant arrives with the wait spent (and is confirmed, mutex.cpp).
                results = seat.get().execute_batch(items);
            } else {
                // One statement at a time anyway: the acquire only once the queue lock is ours,
                // so its grant does not count the queue wait against its lease.
                results = seat.get().execute_batch(std::span(items).first(entry.size()));
                if (!took_turn(results[enter], state))
                    return std::nullopt;
                acquire_sent = std::chrono::steady_clock::now();
                for (auto& r : seat.get().execute_batch(std::span(items).subspan(entry.size())))
                    results.push_back(std::move(r));
            }
        } catch (const error& e) {
            if (not_our_turn_error(e)) {
                note_timed_out_turn(req.name, state);
                return std::nullopt;
            }
            state.seat.reset(); // closes the session, and any lock it got
            return resolving_doubt(db, req,
                                   [&]() -> std::optional<grant> { db.rethrow_with_context(e); });
        }
        if (seat.where != queue_seat::place::inside && !took_turn(results[enter], state))
            return std::nullopt;
        const auto reply = decode_first<acquire_unique_key_row>(results.back());
        auto g = granted(reply, acquire_sent, req.ttl, &state);
        if (!g) {
            state.contended = true; // first in line, but the lease is held: wait for it
            const route_scope via_seat(db, seat_session(state)); // any read-back too
            g = adopt_or_note(db, req, reply, &state);
        }
        if (g) {
            seat.get().unlisten();           // no-op unless an earlier wait listened on it
            g->seat = std::move(state.seat); // holds the queue lock until the release
        }
        return g;
    }

    /// First in line already: the lease is held by someone who did not queue (or whose queue
    /// seat died). Tries it again on the seat, keeping the place.
    static std::optional<grant> retry_at_head(lock_context& db, const lock_request& req,
                                              attempt_state& state) {
        const auto sent = std::chrono::steady_clock::now();
        auto g = resolving_doubt(db, req, [&]() -> std::optional<grant> {
            try {
                const auto item = acquire_item(req, nullptr, true);
                const auto reply = decode_first<acquire_unique_key_row>(
                    state.seat->get().execute(item.id, item.params));
                auto outcome = granted(reply, sent, req.ttl, &state);
                if (!outcome) {
                    // Any read-back goes to the seat too: the pool may have no idle session
                    // left (the seat is one), and a new connection would outlive this wait.
                    const route_scope via_seat(db, seat_session(state));
                    outcome = adopt_or_note(db, req, reply, &state);
                }
                return outcome;
            } catch (const error& e) {
                if (e.code() == errc::connection)
                    state.seat.reset(); // its session is gone, and the place with it
                db.rethrow_with_context(e);
            }
        });
        if (g && state.seat) {
            state.seat->get().unlisten(); // it listened while this call waited at the head
            g->seat = std::move(state.seat);
        }
        return g;
    }

    /// The last release of a hold that came through the queue: the release commits, then the
    /// queue lock goes to the next waiter, in one pipeline on the seat.
    static std::uint64_t release_and_pass_on(const lock_request& req, const grant& held) {
        auto& seat = *held.seat;
        const batch_item items[] = {
            {statement::async_begin, {}},
            {statement::async_commit_off, {}},
            {statement::release_lease, {req.name, req.owner, held.token}},
            {statement::async_commit, {}},
            {statement::uk_queue_leave, {req.name}},
        };
        try {
            auto results = seat.get().execute_batch(items);
            seat.where = queue_seat::place::outside;
            seat.vacate();
            return results[2].affected_rows;
        } catch (...) {
            seat.where = queue_seat::place::unknown;
            seat.vacate(); // closes the session: the server ends its transaction and locks
            throw;
        }
    }
};

} // namespace

std::unique_ptr<lock_strategy> make_unique_key_strategy() {
    return std::make_unique<unique_key_strategy>();
}

} // namespace sqlock::detail
