// Internal: the lock protocol of one strategy, written once against lock_context/session.
// A strategy never sees backend types; dialect differences live in sql/<backend>/*.sql.
#pragma once

#include "base/io_wait.hpp"
#include "base/sighting.hpp"
#include "database/lock_context.hpp"
#include "sqlock/mutex.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>

namespace sqlock::detail {

class queue_seat;

/// A grant as the database confirmed it.
struct grant {
    std::int64_t token = 0;
    std::int64_t hold_count = 0;
    /// Until when the grant is certainly ours, on this process's steady clock: the send time
    /// of the statement that confirmed it, plus the TTL, minus a safety margin.
    std::chrono::steady_clock::time_point valid_until{};
    /// select_for_update: the session whose open transaction is the lock (unpinned when the
    /// last copy goes).
    std::shared_ptr<session> pinned;
    /// unique_key on PostgreSQL, when the lock was contended: the session holding the name's
    /// place at the head of the server-side waiter queue, given up by the release so that the
    /// server hands the lock to the next waiter. Not the lock: losing it loses nothing.
    std::shared_ptr<queue_seat> seat;
};

/// What one lock() call keeps between its attempts: its place in a server-side waiter queue
/// (unique_key on PostgreSQL), given up when the call ends without the lock, and what it saw
/// of the lease it waits for.
struct attempt_state {
    /// The lease held by someone else that this call waits for (base/sighting.hpp): dropped
    /// once seen unchanged for its holder's TTL.
    std::optional<lease_sighting> sighting;
    std::shared_ptr<queue_seat> seat;
    /// In: the lock was contended when this process last got it, so queue at once rather than
    /// try first (a releaser asking again must not overtake the waiters it just handed over to).
    bool queue_first = false;
    /// Out: someone else held the lock at some attempt of this call.
    bool contended = false;
    /// No seat could be opened for the server-side queue (connection limit, network): the
    /// rest of this call waits by polling instead.
    bool no_queue = false;
    /// A wait in the server-side queue ran out (its head may have stopped): from then on this
    /// call's direct attempts take a free lease even while someone holds the queue lock.
    bool bypass_queue = false;
    /// Out, per attempt: the attempt itself waited its turn (in the server-side queue), so the
    /// caller tries again at once instead of sleeping.
    bool waited = false;
    /// Out, per attempt: no grant was made because another owner holds a lock named in
    /// lock_request::defer_to; bit k set: defer_to[k] is held. 0: not held back.
    unsigned deferred = 0;
};

/// The session of `state`'s queue seat while it has a usable one (else nullptr): a waiter
/// with a seat listens for releases there, so that it keeps one connection.
session* seat_session(const attempt_state& state) noexcept;

/// How long one acquire attempt may wait on the server.
struct server_wait {
    static constexpr std::chrono::milliseconds none{-1};   ///< fail at once if held
    static constexpr std::chrono::milliseconds forever{0}; ///< until granted
};

/// The safety margin a local lease ends before the database's: ttl/10, at least 25 ms, at most
/// 1 s, never more than half the TTL.
std::chrono::milliseconds lease_margin(std::chrono::milliseconds ttl);

/// `sent` + ttl - lease_margin(ttl): the local end of a lease whose confirming statement was
/// sent at `sent` (the database starts the TTL when it runs the statement, which is later).
std::chrono::steady_clock::time_point lease_end(std::chrono::steady_clock::time_point sent,
                                                std::chrono::milliseconds ttl);

/// Who asks for which lock, for how long.
struct lock_request {
    std::string_view name;
    std::string_view owner;
    std::chrono::milliseconds ttl;
    /// The token of the requesting mutex's last grant (0: none). A new grant's token is always
    /// larger, so a row of ours with this token or a smaller one is an earlier grant whose
    /// release did not get through, never the outcome of this request.
    std::int64_t last_token = 0;
    /// sqlock's own locks (a semaphore's queue, a shared mutex's writer gate) whose holders
    /// go first: while another owner holds one, a new grant is not made at all and the
    /// attempt reports which in attempt_state::deferred. Checked by the acquire statement
    /// itself where it can, so that an uncontended attempt stays one round trip. Empty
    /// entries: none. Re-entries ignore it.
    std::array<std::string_view, 2> defer_to{};

    bool defers() const noexcept { return !defer_to[0].empty() || !defer_to[1].empty(); }
    /// defer_to[k] as a statement parameter (NULL when empty).
    param defer_param(std::size_t k) const {
        return defer_to[k].empty() ? param(nullptr) : param(defer_to[k]);
    }
};

/// Which of `req.defer_to` another owner holds (a bit per entry, as attempt_state::deferred),
/// read with waiters_check: for strategies and backends whose acquire statement cannot say.
/// 0 when `req` defers to nothing. Throws sqlock::error.
unsigned held_defer_locks(lock_context& db, const lock_request& req);

/// Records that the lease of `req.name` was held by someone else with (token, lease_seq) in a
/// reply received just now (ttl: the holder's TTL; 0 for rows written before schema 5, which
/// count with the caller's own TTL).
void note_sighting(attempt_state& state, std::int64_t token, std::int64_t lease_seq,
                   std::chrono::milliseconds ttl, std::chrono::milliseconds own_ttl);

/// When `state`'s sighting has lasted its holder's TTL (stale_after), deletes that lease if it
/// is still unchanged (drop_stale_lease) and forgets the sighting. Returns true when a lease
/// was dropped (the caller should try again at once). Throws sqlock::error.
bool drop_if_stale(lock_context& db, const lock_request& req, attempt_state& state);

/// Reads back (`read`) what happened to a release whose reply was lost. While the database
/// cannot be reached (a failover in progress, say) it asks again, with a growing pause, until
/// the grant's local end or connect_timeout from now, whichever comes first: past the former
/// the lease ends by itself anyway. Then rethrows the connection error.
template <typename Read>
auto read_back_release(lock_context& db, const grant& held, Read&& read) {
    const auto now = std::chrono::steady_clock::now();
    const auto limit = std::min(held.valid_until, now + db.options().connect_timeout);
    auto pause = std::chrono::milliseconds(25);
    for (;;) {
        try {
            return read();
        } catch (const error& e) {
            const auto at = std::chrono::steady_clock::now();
            if (e.code() != errc::connection || !e.retryable() || at + pause >= limit)
                throw;
        }
        pause_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(400));
    }
}

/// What a lease release whose reply was lost did, judged from the row read back afterwards.
enum class release_doubt {
    released, ///< it happened (or the lease moved on: nothing of this grant is left)
    not_sent, ///< the row is unchanged: it did not happen, and may be sent again
    unknown,  ///< neither (a re-entrant hold whose lease was taken over meanwhile)
};

/// `still_ours`: the row still carries this grant (owner and token); `hold_count`: the row's
/// hold count then.
inline release_doubt judge_release(const grant& held, bool still_ours, std::int64_t hold_count) {
    const bool last = held.hold_count <= 1;
    if (last && !still_ours)
        return release_doubt::released;
    if (!last && still_ours && hold_count == held.hold_count - 1)
        return release_doubt::released;
    return still_ours ? release_doubt::not_sent : release_doubt::unknown;
}

/// Runs one acquire attempt. A conflict (MariaDB 1213: an InnoDB deadlock or, on Galera, a
/// write set that failed certification at commit; PostgreSQL 40001/40P01) means a concurrent
/// write to the lock row won and the attempt's statement was rolled back: not granted, the
/// same as finding the lock held (try_lock() returns false, lock() waits on), never an error.
template <typename Attempt>
std::optional<grant> not_granted_on_conflict(attempt_state& state, Attempt&& attempt) {
    try {
        return attempt();
    } catch (const error& e) {
        if (e.code() != errc::conflict)
            throw;
        state.contended = true;
        return std::nullopt;
    }
}

class lock_strategy {
public:
    virtual ~lock_strategy() = default;

    /// One attempt at a new grant: the grant, or nullopt when someone else holds the lock.
    /// Strategies that wait server-side (waits_server_side()) wait up to `wait` (a positive
    /// duration, server_wait::none or server_wait::forever); the others ignore it and the
    /// caller polls. `state` lives as long as the caller's lock() call: a strategy may keep
    /// a place in a server-side queue there between attempts (the caller still sleeps between
    /// them). Throws sqlock::error; connection errors are retryable.
    virtual std::optional<grant> try_acquire(lock_context& db, const lock_request& req,
                                             std::chrono::milliseconds wait,
                                             attempt_state& state) = 0;

    /// True when try_acquire() itself waits on the server, so the caller must not sleep
    /// between attempts.
    virtual bool waits_server_side() const noexcept { return false; }

    /// Re-entry by the current holder: returns the grant with its new hold count and validity.
    /// Throws errc::lock_lost when the grant `held` is no longer ours (expired or taken over):
    /// it is never resurrected.
    virtual grant reenter(lock_context& db, const lock_request& req, const grant& held) = 0;

    /// Keeps `held` alive for another ttl (lease strategies: extends the lease; select_for_update:
    /// proves the session alive, restarting the server's idle timer). Returns the grant with
    /// its new validity. Throws errc::lock_lost when it is no longer ours; other errors when
    /// the outcome is unknown (the caller retries until the lease's local end).
    virtual grant renew(lock_context& db, const lock_request& req, const grant& held) = 0;

    /// Gives back one hold of `held` (the last one deletes the lease). Throws errc::lock_lost
    /// when the row is no longer ours, other sqlock::error when the outcome is unknown.
    virtual void release(lock_context& db, const lock_request& req, const grant& held) = 0;
};

/// The implementation of `s`; throws errc::unsupported for strategies not built yet.
std::unique_ptr<lock_strategy> make_strategy(strategy s, backend_kind backend);

/// Throws errc::invalid_argument: lock `name` is a select_for_update lock, which no lease
/// strategy ever takes (its holder is whoever has the row or lock file locked, not its owner
/// column), so waiting for it would never end. A name keeps the strategy it was first locked
/// with.
[[noreturn]] void throw_kept_strategy(const lock_context& db, std::string_view name);

/// Lease renewal shared by unique_key and optimistic_version (statement renew_lease).
grant renew_lease(lock_context& db, const lock_request& req, const grant& held);

/// A lease row of `req.owner` with a token newer than `req.last_token`, found instead of an
/// answer: the grant of an attempt of this lock whose reply was lost. Its lease started when
/// that statement ran, at a moment we never saw, so it is renewed at once (renew_lease) and
/// the grant's local end counts from the renewal. nullopt when it was dropped meanwhile (lost
/// before anyone learnt of it). Throws sqlock::error when the renewal's outcome is unknown.
std::optional<grant> adopt_lost_grant(lock_context& db, const lock_request& req, std::int64_t token,
                                      std::int64_t hold_count);

std::unique_ptr<lock_strategy> make_unique_key_strategy();
std::unique_ptr<lock_strategy> make_select_for_update_strategy();
std::unique_ptr<lock_strategy> make_optimistic_version_strategy();

} // namespace sqlock::detail
