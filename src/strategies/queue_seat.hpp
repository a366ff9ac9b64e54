// Internal: a name's waiter queue in the server (PostgreSQL advisory lock, MariaDB GET_LOCK),
// shared by the strategies whose waiters would otherwise poll (unique_key, optimistic_version).
//
// A waiter that queues holds a pinned session, its seat, and on it the name's queue lock
// (uk_queue_enter). The server grants that lock first come, first served, so only the head of
// the line asks for the lease; the head keeps the queue lock with its grant and gives it up
// after its release (uk_queue_leave), handing the turn to the next waiter. The queue orders
// waiters and nothing else: the lease row is the lock, so a lost seat costs time, never safety.
#pragma once

#include "strategies/strategy.hpp"

#include <array>

namespace sqlock::detail {

/// The longest one wait in the server-side queue: a seat holder that stopped (paused process)
/// delays a takeover of its expired lease by at most this; then the waiter tries directly.
inline constexpr std::chrono::milliseconds queue_step_limit{1000};

/// A pinned lock session that holds, or is about to hold, a name's queue lock.
class queue_seat {
public:
    queue_seat(std::shared_ptr<lock_context> db, std::string name)
        : m_db(std::move(db)), m_name(std::move(name)), m_session(m_db->pin_seat(m_name)) {}
    ~queue_seat() { vacate(); }
    queue_seat(const queue_seat&) = delete;
    queue_seat& operator=(const queue_seat&) = delete;

    enum class place {
        outside, ///< does not hold the queue lock
        inside,  ///< holds it
        unknown  ///< a statement failed half-way: only closing the session is sure to free it
    };

    bool usable() const noexcept { return m_session && m_session->usable(); }
    session& get() { return *m_session; }
    place where = place::outside;

    /// Hands the session back, leaving the queue first if inside (closing the session when
    /// that fails or the place is unknown: the server then drops its locks). Never throws.
    void vacate() noexcept;

private:
    std::shared_ptr<lock_context> m_db;
    std::string m_name;
    std::unique_ptr<session> m_session;
};

/// The seat of a hold that came through the queue, while usable: its statements go there.
session* seat_session(const grant& held) noexcept;

/// How long one wait in the queue may last for an attempt allowed to wait `wait` (a positive
/// duration or server_wait::forever): at most queue_step_limit, and within the session's
/// statement timeout (half of io_timeout).
std::chrono::milliseconds queue_step(const lock_context& db, std::chrono::milliseconds wait);

/// Opens `state.seat` when it has none. False when the server refused one more connection
/// (max_connections) or could not be reached: `state.no_queue` is then set, and the rest of
/// the call waits by polling with the connections it has. Other errors are thrown.
bool open_seat(lock_context& db, const lock_request& req, attempt_state& state);

/// The statements that take `name`'s queue lock on a seat, waiting at most `step`: the wait
/// is set, uk_queue_enter runs (items[queue_enter_item]), the wait is cleared (so that a
/// statement pipelined behind waits without one). The wait applies to the queue lock only:
/// PostgreSQL then answers "not our turn yet" with 55P03 (not_our_turn_error()), MariaDB's
/// GET_LOCK with turn = 0 (took_turn()).
std::array<batch_item, 3> queue_entry_items(std::string_view name, std::chrono::milliseconds step);
inline constexpr std::size_t queue_enter_item = 1;

/// True for the error a queue wait that ran out raises (PostgreSQL's lock_timeout, 55P03).
bool not_our_turn_error(const error& e) noexcept;

/// After a queue entry that failed with not_our_turn_error: notes it (note_not_our_turn) and
/// gives up the queue lock in case the session holds it anyway. PostgreSQL's lock_timeout can
/// fire just as the lock is granted: the statement fails, the session keeps the lock (a
/// session-level advisory lock outlives the failed transaction), and a seat that went back to
/// the pool with it would hold the name's queue for good (every later waiter of the name then
/// waits behind it). Never throws; a seat that cannot be asked is marked unknown (closed).
void note_timed_out_turn(std::string_view name, attempt_state& state) noexcept;

/// Reads uk_queue_enter's reply: our turn (the seat is then inside, and a wait for it counts
/// as contended in `state`) or not (note_not_our_turn). Returns whether it was our turn.
bool took_turn(const result& entered, attempt_state& state);

/// Takes `req.name`'s queue lock on the call's seat (opened if need be), waiting at most one
/// queue step for an attempt allowed to wait `wait`. False when it was not our turn within it
/// (noted in `state`) or no seat could be opened (state.no_queue: poll instead). Any other
/// error closes the seat (and whatever lock it got) and is thrown.
bool enter_queue(lock_context& db, const lock_request& req, std::chrono::milliseconds wait,
                 attempt_state& state);

/// The queue's wait for its turn ran out (the head may have stopped): the seat is outside,
/// the next attempt tries directly first and then takes free leases even while someone holds
/// the queue lock (attempt_state::bypass_queue); it comes at once (this attempt waited).
void note_not_our_turn(attempt_state& state) noexcept;

} // namespace sqlock::detail
