// Internal: the waiter queue of one lock name on SQLite, a FIFO whose waits the kernel ends.
//
// SQLite has no waiter queue: a waiter sleeps in the busy handler or polls, and a releaser that
// asks again at once always wins. So every call that may wait (lock(), try_lock_for/until; not
// try_lock()) takes a ticket in a side file beside the name's lock file before it asks the
// database (unless no byte of the file is locked at all: then it asks first, and takes a ticket
// only if not granted), <db>-sqlock/<hash>.lock.queue, guarded only by Linux
// open-file-description (OFD) fcntl locks:
//   bytes [0, 8)          the ticket counter, read and bumped under a write lock on these bytes;
//   byte  8               the holder byte: write-locked by the queued caller that holds the lock,
//                         from its grant to its release;
//   byte  slot_base + t   write-locked by ticket t from joining until it is granted, gives up or
//                         dies.
// A ticket is first in line once no byte of [slot_base + 1, slot_base + t) is write-locked:
// every earlier caller was granted, gave up or died (the kernel drops a dead process's OFD
// locks, so its turn is skipped). The first in line asks the database, and between attempts
// waits for the holder byte to be unlocked (its holder released or died), at most for the
// mutex's backoff pause, so that a stale lease is still taken over at the usual pace.
//
// Every wait is one F_OFD_SETLKW (a read lock, dropped at once) on a helper thread of this
// process, so that the caller can give up at its deadline; callers waiting for the same range,
// or for a part of a range already waited for, share one helper (wait_threads in
// local_queue.cpp), so a helper left behind by abandoned waits is never more than one per queue
// file and range start. A caller on a fiber (an asynchronous acquire, base/io_wait.hpp) asks the
// kernel instead (F_OFD_GETLK) every millisecond between pauses of its fiber: no thread waits
// for it.
//
// The queue only orders who asks the database; the lease row (or the lock file's transaction)
// still decides who holds the lock, so mutual exclusion never depends on this file. User-facing
// description, bounds and costs: docs/site/guides/renewal.md, "Waiting on SQLite"; measurements:
// tools/bench/README.md.
//
// Not covered: systems without OFD locks (macOS would need flock(2) on a file per ticket) and
// processes of an older sqlock (they ask without a ticket). Semaphores and shared mutexes could
// reuse the scheme with another rule for who may ask (a semaphore: any of the first N in line;
// a shared_mutex: readers taking read locks on their bytes, so that a reader waits only for
// earlier writers and a writer for everyone earlier).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sqlock::detail {

/// A name's queue file, beside its lock file (`lock_file`: database_impl::lock_file_for).
inline std::string queue_file_for(const std::string& lock_file) {
    return lock_file + ".queue";
}

class fair_turn;

/// The tickets waiting in the queue file `file`, first in line first: each ticket whose byte
/// is write-locked (joined and not yet granted, given up or dead). Opened read-only and never
/// created, taking no lock: a reader's tool (`sqlock status`) sees the line without joining
/// it. Empty when the file is missing or cannot be read. Never throws.
std::vector<std::int64_t> tickets_in_line(const std::string& file) noexcept;

/// True when someone is in the line of the queue file `file`: holding a ticket, taking one, or
/// holding the lock through the queue (fair_turn::idle() is false). False when nobody is and
/// when the file cannot be used. One open (usually a kept descriptor) and one fcntl; never
/// throws. For a caller that never waits in line itself (a semaphore's permit round) but must
/// not overtake those who do: on SQLite a waiter can sit in the busy handler for the one write
/// lock, its row not written yet, while this caller keeps winning that lock.
bool someone_in_line(const std::string& file) noexcept;

class fair_turn {
public:
    /// Opens the queue in `file` (created, with its directory, if missing), without a ticket
    /// yet. nullptr when the file cannot be used or the platform has no OFD locks: the caller
    /// then waits by polling, as without a queue. Never throws.
    static std::unique_ptr<fair_turn> open(const std::string& file) noexcept;

    /// True when no byte of the file is locked: nobody is taking a ticket, waiting, or holding
    /// the lock through the queue. The caller may then ask the database before taking a
    /// ticket (an uncontended lock() pays one fcntl here instead of a ticket's ten system
    /// calls), and must join() if that attempt is not granted. Never throws.
    bool idle() noexcept;

    /// Takes the next ticket. The counter is locked for a read and a write only, but a process
    /// stopped inside that window would stall every joiner: this waits for it at most until
    /// `until`. False when it could not (the caller then drops this object and polls, as
    /// without a queue). Never throws.
    bool join(std::chrono::steady_clock::time_point until) noexcept;
    /// True once join() succeeded.
    bool joined() const noexcept { return m_ticket != 0; }

    ~fair_turn(); ///< closes the file: the kernel drops this ticket's locks
    fair_turn(const fair_turn&) = delete;
    fair_turn& operator=(const fair_turn&) = delete;

    /// True once every earlier ticket is gone (then stays true: tickets only grow). Also true
    /// before join() and when the file cannot be read back (behave as without a queue).
    bool first() noexcept;
    /// Waits in the kernel until first() or `until`; returns first(). Never throws.
    bool wait_first(std::chrono::steady_clock::time_point until) noexcept;

    /// The lock was granted: takes the holder byte, then leaves the line (the next caller
    /// becomes first and waits for the holder byte). Also without a ticket (granted after
    /// idle()). Kept until this object is destroyed, which must happen after the release.
    /// Never throws.
    void mark_holding() noexcept;
    /// True when a queued caller holds the lock (its holder byte is locked). Never throws.
    bool holder_present() noexcept;
    /// Takes the holder byte now, for a lock that dies with its holder process (a lock file's
    /// transaction): false when another caller holds it (a dead holder's guard still stopping
    /// its job), so that the grant just obtained is given back. A waiter's brief read lock on
    /// the byte is waited out (at most 1 ms). Never throws.
    bool try_hold() noexcept;
    /// First in line and the lock is held: waits in the kernel until the holder byte is
    /// unlocked (its holder released or died) or `until`, whichever comes first; sleeps until
    /// `until` when no queued caller holds it (a try_lock() holder). Never throws.
    void wait_holder_gone(std::chrono::steady_clock::time_point until) noexcept;

    std::int64_t ticket() const noexcept { return m_ticket; }

private:
    fair_turn(std::string file, int fd) : m_file(std::move(file)), m_fd(fd) {}
    std::string m_file;
    int m_fd = -1;
    std::uint64_t m_dev = 0;   ///< the file's identity, read by join(): a helper opening it
    std::uint64_t m_inode = 0; ///< by name checks it (a file replaced meanwhile is another queue)
    std::int64_t m_ticket = 0; ///< 0: no ticket (yet)
    bool m_first = false;
};

} // namespace sqlock::detail
