// Internal: this process's line for one lock (issue 37, "waiting costs no thread"). Acquires
// with time to wait queue here, as entries in a list, not as threads: only the line's head
// runs on a worker thread and asks the database, and only while the grants this process holds
// of the lock leave room for it. So a name costs at most one acquire thread and one
// connection for its waiters however many there are, and a waiter behind a holder of its own
// process never asks the database in vain.
//
// Room is counted in units: a lock admits `capacity` of them (a mutex 1, a semaphore its
// permits, a shared mutex its readers), a grant holds some (1; a writer every one). A grant
// frees its units when it is released or lost (a lost grant holds nothing another may not
// take). Served in order: a waiting writer keeps the readers behind it waiting.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sqlock::detail {

/// What the line needs of a queued acquire (async_acquire).
class line_waiter {
public:
    virtual ~line_waiter() = default;
    /// True once it reported (cancelled or timed out while queued). Never throws.
    virtual bool finished() const noexcept = 0;
    /// Takes it out of the queued phase; false when it ended meanwhile. Never throws.
    virtual bool claim() noexcept = 0;
    /// After claim(): runs its lock call on a worker thread; it tells head_done() when that
    /// ends. Never throws.
    virtual void run_claimed() noexcept = 0;
};

class local_line {
public:
    /// The process's line of the lock named `key` (a primitive kind and its name) in the
    /// database at `database`, made on first use and shared while anyone uses it. Throws only
    /// std::bad_alloc.
    static std::shared_ptr<local_line> of(const void* database, const std::string& key,
                                          std::size_t capacity);

    explicit local_line(std::size_t capacity) : m_capacity(capacity) {}

    std::size_t capacity() const noexcept { return m_capacity; }

    /// Queues `op`, asking for `units`; starts it at once (on a worker thread) when the line
    /// is empty and the room is there. Never throws but std::bad_alloc.
    void join(const std::shared_ptr<line_waiter>& op, std::size_t units);
    /// The head's acquire ended (granted or not): the next may ask. Never throws.
    void head_done() noexcept;
    /// A grant of this process now holds `units` (whether it queued here or not). Never throws.
    void hold(std::size_t units) noexcept;
    /// A grant gave back (or lost) its `units`. Never throws.
    void free(std::size_t units) noexcept;
    /// An entry ended while queued (cancelled, timed out): the next may ask. Never throws.
    void kick() noexcept;

private:
    struct entry {
        std::shared_ptr<line_waiter> op; ///< the line keeps a queued acquire alive
        std::size_t units;
    };
    /// Under m_mutex: takes the head out of the line when it may ask; returns it (null when
    /// none may). Skips entries that ended while queued.
    std::shared_ptr<line_waiter> next_head();
    /// Starts the head, if any may ask now (outside m_mutex: a start may report at once).
    void advance() noexcept;

    const std::size_t m_capacity;
    std::mutex m_mutex;
    std::deque<entry> m_waiting;
    std::size_t m_held = 0; ///< units held by this process's grants
    bool m_asking = false;  ///< the head runs (on a worker thread)
};

} // namespace sqlock::detail
