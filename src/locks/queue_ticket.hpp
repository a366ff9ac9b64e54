// Internal: how one lock call of a mutex waits its turn in the SQLite waiter queue of its name
// (local_queue.hpp), for mutex.cpp's acquire loop. Every step is a no-op for a call that holds
// no ticket (a server backend, a try_lock(), a queue file that cannot be used): such a call
// waits as without a queue.
#pragma once

#include "backends/local_queue.hpp"
#include "base/session.hpp"
#include "base/waiting.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace sqlock::detail {

class database_impl;

class queue_ticket {
public:
    /// SQLite has no waiter queue of its own: a lock() call (not try_lock(): `deadline` must
    /// lie ahead) takes a ticket in the name's side file and asks the database only once every
    /// earlier ticket is gone, so a releaser asking again queues behind those already waiting.
    /// While nobody is in line or holds the lock through the queue, it asks first and takes a
    /// ticket only if not granted (join_if_asked_first): an uncontended lock() costs one fcntl,
    /// not a ticket's ten system calls. Holds no ticket on other backends, without time to
    /// wait, or when the queue cannot be used. Call once. Throws only std::bad_alloc.
    void enter(database_impl& db, const std::string& name,
               std::chrono::steady_clock::time_point deadline);

    /// True while this call holds a ticket (joined or about to ask first).
    bool active() const noexcept { return m_turn != nullptr; }

    /// Before an attempt: waits in the kernel for the tickets ahead, at most one queue step at
    /// a time. True when it is this call's turn (or it holds no ticket); false when the step
    /// ended first (a waiter ahead stopped without dying) or the deadline came: the caller
    /// makes one attempt anyway that does not wait on the server (bounded bypass), then goes
    /// back in line. May use one pause of `delay`. Never throws.
    bool await_turn(std::chrono::steady_clock::time_point deadline, backoff& delay);

    /// During an attempt made before joining (the queue was idle): emplaces into `limit` a
    /// short limit on SQLite's busy handler. Leaves `limit` empty otherwise. Never throws.
    void limit_asking_first(std::optional<busy_wait_limit>& limit) const;

    /// An attempt's server-side wait `budget` (wait_budget), cut to a short one for a call
    /// holding a ticket: it waits in the kernel instead (wait_for_holder). Never throws.
    std::chrono::milliseconds server_budget(std::chrono::milliseconds budget) const noexcept;

    /// After an attempt made before joining that was not granted: takes a ticket now, so that
    /// no later attempt overtakes those who queued meanwhile. Gives up the queue (the call
    /// polls, as without one) when the ticket counter stays locked. Never throws.
    void join_if_asked_first(std::chrono::steady_clock::time_point deadline) noexcept;

    /// Between attempts, first in line and not granted: waits in the kernel until the holder
    /// is gone, at most one pause of `delay` or to `deadline` (a stale lease is still dropped
    /// at the backoff's pace). Requires active(). Never throws.
    void wait_for_holder(std::chrono::steady_clock::time_point now,
                         std::chrono::steady_clock::time_point deadline, backoff& delay);

    /// A lock file's transaction (select_for_update on SQLite) dies with its holder process at
    /// once, but the job of a killed `sqlock run` lives on until its guard, which inherited the
    /// holder byte's descriptor, has stopped it. So such a grant stands only once this call
    /// holds the holder byte (opening the name's queue file when it had no ticket: try_lock()).
    /// False when another holder has it: the caller gives the grant back and tries again
    /// later. True where there is no queue file to use. Never throws.
    bool claim_holder(database_impl& db, const std::string& name) noexcept;

    /// The lock was granted: marks this call as its holder in the queue (the next in line
    /// becomes first and waits for the holder) and hands the ticket over, to be kept until
    /// the hold is released or lost. nullptr when it held no ticket. Never throws.
    std::unique_ptr<fair_turn> hand_to_hold() noexcept;

private:
    std::unique_ptr<fair_turn> m_turn;
};

} // namespace sqlock::detail
