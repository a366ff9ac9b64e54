#include "locks/queue_ticket.hpp"

#include "database/database_impl.hpp"
#include "strategies/strategy.hpp"

#include <algorithm>

namespace sqlock::detail {

namespace {

/// The longest one wait in the SQLite waiter queue (local_queue.hpp): a waiter ahead that
/// stopped without dying (a paused process) delays the others by at most this per attempt.
constexpr std::chrono::milliseconds fair_queue_step{1000};
/// The longest a caller waits to take a ticket in that queue (the counter is locked for a read
/// and a write; only a process stopped in between holds it longer): past it, the caller waits
/// without a ticket, by polling as before the queue.
constexpr std::chrono::milliseconds fair_queue_join_wait{100};
/// The longest a queued caller waits in SQLite's busy handler per attempt.
constexpr std::chrono::milliseconds fair_queue_server_wait{10};

/// SQLite's waiter queue (local_queue.hpp), before an attempt: waits in the kernel until every
/// earlier ticket is gone, at most fair_queue_step (or to the deadline). False when that wait
/// ended first: the caller makes one attempt anyway (bounded bypass of a stopped waiter ahead,
/// or the last attempt at the deadline). A caller that has just become first while the caller
/// ahead still holds the lock (it left the line when granted) also waits for that holder, at
/// most one backoff pause: an attempt now must fail, and on SQLite's one writer it would hold
/// up the holder's release too.
bool await_ticket_turn(fair_turn& ticket, std::chrono::steady_clock::time_point deadline,
                       backoff& delay) {
    if (ticket.first())
        return true;
    const auto step_end = std::chrono::steady_clock::now() + fair_queue_step;
    if (!ticket.wait_first(std::min(deadline, step_end)))
        return false;
    if (ticket.holder_present()) {
        const auto now = std::chrono::steady_clock::now();
        const auto pause = delay.next();
        ticket.wait_holder_gone(deadline - now < pause ? deadline : now + pause);
    }
    return true;
}

} // namespace

void queue_ticket::enter(database_impl& db, const std::string& name,
                         std::chrono::steady_clock::time_point deadline) {
    if (const auto now = std::chrono::steady_clock::now();
        db.traits().queues_waiters_locally && deadline > now) {
        m_turn = fair_turn::open(queue_file_for(db.lock_file_for(name)));
        if (m_turn && !m_turn->idle() &&
            !m_turn->join(std::min(deadline, now + fair_queue_join_wait)))
            m_turn.reset(); // the counter stayed locked (a joiner stopped): poll, as before
    }
}

bool queue_ticket::await_turn(std::chrono::steady_clock::time_point deadline, backoff& delay) {
    // Not first in line: wait in the kernel for the tickets ahead, at most fair_queue_step at
    // a time; past it (a waiter ahead stopped without dying), one direct attempt that does not
    // wait on the server, then back in line (bypass).
    return !m_turn || await_ticket_turn(*m_turn, deadline, delay);
}

void queue_ticket::limit_asking_first(std::optional<busy_wait_limit>& limit) const {
    // Asking before joining SQLite's queue (nobody was in line): briefly. In SQLite's busy
    // handler a process that releases and asks again at once kept this caller out for over a
    // second (1 run in 100 of fair_sqlite's churn test); not granted within this, it joins the
    // line, which puts that process behind it.
    if (m_turn && !m_turn->joined())
        limit.emplace(fair_queue_server_wait);
}

std::chrono::milliseconds
queue_ticket::server_budget(std::chrono::milliseconds budget) const noexcept {
    // A queued caller waits in SQLite's busy handler (a sleep-and-retry loop) only briefly for
    // the lock file (select_for_update): it waits for the holder byte in the kernel instead
    // (wait_for_holder). Not "none": the lock session keeps that busy timeout for the hold, and
    // a COMMIT with none failed as "database is locked" while the next in line was trying the
    // lock file.
    if (m_turn && (budget == server_wait::forever || budget > fair_queue_server_wait))
        return fair_queue_server_wait;
    return budget;
}

void queue_ticket::join_if_asked_first(std::chrono::steady_clock::time_point deadline) noexcept {
    if (m_turn && !m_turn->joined() &&
        !m_turn->join(std::min(deadline, std::chrono::steady_clock::now() + fair_queue_join_wait)))
        m_turn.reset();
}

void queue_ticket::wait_for_holder(std::chrono::steady_clock::time_point now,
                                   std::chrono::steady_clock::time_point deadline, backoff& delay) {
    const auto pause = delay.next();
    m_turn->wait_holder_gone(deadline - now < pause ? deadline : now + pause);
}

bool queue_ticket::claim_holder(database_impl& db, const std::string& name) noexcept {
    try {
        if (!m_turn)
            m_turn = fair_turn::open(queue_file_for(db.lock_file_for(name)));
    } catch (...) {
        return true; // out of memory: the lock file alone decides, as before
    }
    return !m_turn || m_turn->try_hold();
}

std::unique_ptr<fair_turn> queue_ticket::hand_to_hold() noexcept {
    if (m_turn)
        m_turn->mark_holding();
    return std::move(m_turn);
}

} // namespace sqlock::detail
