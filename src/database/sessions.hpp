// Internal: a database handle's sessions. The pool opens sessions on demand up to pool_size
// and takes them back when a statement or a caller is done with them; lock sessions are the
// connections (or SQLite lock files) a lock is held on, pinned for the hold and reused after
// (docs/site/guides/connections.md).
#pragma once

#include "backends/traits.hpp"
#include "base/config.hpp"
#include "base/session.hpp"
#include "sqlock/database.hpp"

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sqlock::detail {

class session_pool;

/// A session checked out of the pool; returned on destruction (dropped when broken).
class pooled_session {
public:
    pooled_session(session_pool* owner, std::unique_ptr<session> s)
        : m_owner(owner), m_session(std::move(s)) {}
    pooled_session(pooled_session&&) noexcept = default;
    pooled_session& operator=(pooled_session&&) = delete;
    ~pooled_session();
    session* operator->() const noexcept { return m_session.get(); }
    session& operator*() const noexcept { return *m_session; }
    /// Closes the session instead of pooling it (its state is unknown after a failure
    /// half-way through a batch that changes session settings).
    void discard() noexcept;

private:
    session_pool* m_owner;
    std::unique_ptr<session> m_session;
};

class session_pool {
public:
    /// Opens one session with `config`, checked (the topology probe's connect()).
    using opener = std::function<std::unique_ptr<session>(const connection_config& config)>;

    /// `config` and `options` must outlive the pool.
    session_pool(const connection_config& config, const connect_options& options, opener open)
        : m_config(config), m_options(options), m_open_session(std::move(open)) {}

    /// SQLite: lock files live in `dir` ("<canonical database path>-sqlock/").
    void place_lock_files(std::string dir) { m_lock_dir = std::move(dir); }

    /// Checks a session out of the pool, connecting when none is idle. Waits at most
    /// connect_timeout for a busy pool (errc::timeout).
    pooled_session checkout();
    /// An idle pooled session for a waiter to keep (and listen on) while it waits, or nullopt:
    /// taken only while another session could still be opened or is idle, so that keeping it
    /// never makes another thread wait for the pool. Never connects, never throws.
    std::optional<pooled_session> try_checkout_idle() noexcept;
    /// Returns a checked-out session to the pool; one that is no longer usable is closed, and
    /// with it every idle server session (see session_broke()).
    void give_back(std::unique_ptr<session> s) noexcept;
    /// A checked-out session was closed instead of given back.
    void forget_session() noexcept;
    /// A session broke: closes the idle pooled and lock sessions too (servers only), since
    /// they were opened to the same server; the next ones are opened afresh.
    void session_broke() noexcept;

    /// A session kept for one lock on `lock_name` (a select_for_update hold, a unique_key
    /// queue seat), taken out of the pool's accounting for as long as it is kept: N kept
    /// sessions cost N connections beside the pool's. Where every session is alike
    /// (traits().pools_lock_sessions): an idle pooled session when there is one, so a process
    /// with one lock keeps one connection; where lock sessions differ (autocommit off): reused
    /// from an idle list of lock sessions; with lock files: a connection to the name's own lock
    /// file. Return it with unpin().
    std::unique_ptr<session> pin(std::string_view lock_name);
    /// A session like the pool's (autocommit statements), kept for one waiter and the hold it
    /// gets: a unique_key queue seat. Taken out of the pool's accounting like pin()'s: an idle
    /// pooled session when there is one, else a new connection. Return it with unpin_seat().
    std::unique_ptr<session> pin_seat(std::string_view lock_name);
    /// Takes back a session pin_seat() gave: into the pool while it has room, closed otherwise
    /// (or when broken). Never throws.
    void unpin_seat(std::string_view lock_name, std::unique_ptr<session> s) noexcept;
    /// Takes back the session pin(lock_name) gave: rolled back if still in a transaction and
    /// unsubscribed if listening, kept for reuse when healthy (pooled sessions: back in the
    /// pool while it has room; other lock sessions: up to pool_size idle ones; lock files: per
    /// file, the least recently used closed first), closed otherwise. Never throws.
    void unpin(std::string_view lock_name, std::unique_ptr<session> s) noexcept;
    /// The SQLite lock file used for `lock_name` (empty for server backends).
    std::string lock_file_for(std::string_view lock_name) const;

private:
    const backend_traits& traits() const noexcept { return traits_of(m_config.kind); }
    /// A pinned lock file's session: an idle one for the same file, else a new one.
    std::unique_ptr<session> pin_lock_file(std::string_view lock_name);
    /// Moves out every idle server session (m_mutex held); the caller closes them.
    std::vector<std::unique_ptr<session>> take_idle_sessions_locked() noexcept;
    /// An idle pooled session taken out of the pool's accounting (m_mutex held), or null.
    std::unique_ptr<session> take_idle_locked() noexcept;

    const connection_config& m_config;
    const connect_options& m_options;
    opener m_open_session;
    std::string m_lock_dir;

    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::vector<std::unique_ptr<session>> m_idle;
    std::size_t m_open = 0;                               ///< sessions alive: idle + checked out
    std::vector<std::unique_ptr<session>> m_idle_holders; ///< lock sessions not holding now
    /// SQLite: lock-file sessions not holding now, with their file, oldest first.
    std::vector<std::pair<std::string, std::unique_ptr<session>>> m_idle_lock_files;
};

} // namespace sqlock::detail
