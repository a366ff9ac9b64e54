// Internal: a FIFO of lock() calls for one name on SQLite, ended by the kernel (work in progress).
//
// SQLite has no waiter queue: a waiter sleeps in the busy handler or polls, and a releaser that
// asks again at once always wins. Here every lock() call (not try_lock()) first takes a ticket
// in a side file beside the lock files, <db>-sqlock/<hash>.queue:
//   bytes [0, 8)          the ticket counter, read and bumped under an OFD write lock on it;
//   byte  8               the holder byte: held by the queued caller that holds the lock,
//                         from its grant to its release;
//   byte  slot_base + t   held (OFD write lock) by ticket t from joining until it is granted
//                         (or gives up).
// A ticket is first in line once no byte of [slot_base + 1, slot_base + t) is locked: every
// earlier caller released, gave up or died (the kernel drops a dead process's OFD locks, so its
// turn is skipped). That wait is one F_OFD_SETLKW on the whole range, run on a helper thread so
// that the caller can stop waiting at its deadline. The first in line polls the database as
// before (a stale lease is taken over at the same pace), but sleeps between attempts in an
// F_OFD_SETLKW on the holder byte, so it wakes as soon as the holder releases or dies. The
// queue orders who asks the database; the database still decides who holds the lock, so mutual
// exclusion never depends on this file.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <sys/types.h>

namespace sqlock::detail {

class fair_turn {
public:
    /// Takes the next ticket of the queue in `file` (created if missing). nullptr when the file
    /// cannot be used (the caller then waits by polling, as before). Never throws.
    static std::unique_ptr<fair_turn> join(const std::string& file) noexcept;

    ~fair_turn(); ///< closes the file: the kernel drops this ticket's lock
    fair_turn(const fair_turn&) = delete;
    fair_turn& operator=(const fair_turn&) = delete;

    /// True once every earlier ticket is gone (stays true: tickets only grow).
    bool first() noexcept;
    /// Waits in the kernel until first() or `until`; returns first(). Never throws.
    bool wait_first(std::chrono::steady_clock::time_point until) noexcept;

    /// The lock was granted: takes the holder byte, then leaves the line (the next caller
    /// becomes first and waits for the holder byte instead). Never throws.
    void mark_holding() noexcept;
    /// First in line and the lock is held: waits in the kernel until the holder byte is
    /// released (its holder unlocked or died) or `until`, whichever comes first; sleeps until
    /// `until` when no queued caller holds it. Never throws.
    void wait_holder_gone(std::chrono::steady_clock::time_point until) noexcept;

    std::int64_t ticket() const noexcept { return m_ticket; }

    struct waiter; // a helper thread's state

private:
    /// A detached helper that blocks in F_OFD_SETLKW on [start, start + len) of the file,
    /// drops the lock at once and reports done; nullptr when no thread could be started.
    std::shared_ptr<waiter> spawn(off_t start, off_t len) noexcept;
    static bool await(const std::shared_ptr<waiter>& w,
                      std::chrono::steady_clock::time_point until) noexcept;

    fair_turn(std::string file, int fd, std::int64_t ticket)
        : m_file(std::move(file)), m_fd(fd), m_ticket(ticket) {}
    std::string m_file;
    int m_fd = -1;
    std::int64_t m_ticket = 0;
    bool m_first = false;
    std::shared_ptr<waiter> m_waiter;        ///< for the earlier tickets
    std::shared_ptr<waiter> m_holder_waiter; ///< for the holder byte
};

} // namespace sqlock::detail
