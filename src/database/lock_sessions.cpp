// Lock sessions: the connection (or SQLite lock file) a lock is held on, pinned for the hold
// and reused after; route_scope sends a thread's statements through a session it holds.
#include "base/owner.hpp"
#include "database/lock_context.hpp"
#include "database/sessions.hpp"

#include <cstdio>
#include <utility>

namespace sqlock::detail {

std::string session_pool::lock_file_for(std::string_view lock_name) const {
    if (!traits().lock_files)
        return {};
    // Two independent 64-bit FNV-1a hashes of prefix + name: a file name of fixed length for
    // any lock name. A collision would only make two names share one lock (more exclusion,
    // never less).
    auto fnv = [&](std::uint64_t hash) {
        for (const char c : m_options.table_prefix + '\0' + std::string(lock_name)) {
            hash ^= static_cast<unsigned char>(c);
            hash *= 0x100000001b3ULL;
        }
        return hash;
    };
    char file[64];
    std::snprintf(file, sizeof file, "%016llx%016llx.lock",
                  static_cast<unsigned long long>(fnv(0xcbf29ce484222325ULL)),
                  static_cast<unsigned long long>(fnv(0x84222325cbf29ce4ULL)));
    return m_lock_dir + file;
}

std::unique_ptr<session> session_pool::pin_lock_file(std::string_view lock_name) {
    auto config = m_config;
    config.purpose = session_purpose::lock_holder;
    config.lock_file = lock_file_for(lock_name);
    {
        std::lock_guard lock(m_mutex);
        for (auto it = m_idle_lock_files.begin(); it != m_idle_lock_files.end(); ++it) {
            if (it->first == config.lock_file) {
                auto s = std::move(it->second);
                m_idle_lock_files.erase(it);
                return s;
            }
        }
    }
    return m_open_session(config);
}

std::unique_ptr<session> session_pool::pin(std::string_view lock_name) {
    if (traits().lock_files)
        return pin_lock_file(lock_name);
    {
        std::lock_guard lock(m_mutex);
        if (traits().pools_lock_sessions && !m_idle.empty()) {
            // One kind of session on PostgreSQL: the pool's idle one becomes the lock's, so a
            // process with one lock keeps one connection (docs/site/guides/connections.md).
            return take_idle_locked();
        }
        if (!m_idle_holders.empty()) {
            auto s = std::move(m_idle_holders.back());
            m_idle_holders.pop_back();
            return s;
        }
    }
    {
        // MariaDB lock sessions differ from pooled ones (autocommit off, the process id as a
        // connection attribute): a pooled session sitting idle is closed first, so that the
        // lock's connection replaces it rather than adding to it (docs/site/guides/connections.md).
        std::unique_ptr<session> spare;
        std::lock_guard lock(m_mutex);
        spare = take_idle_locked();
    }
    auto config = m_config;
    config.purpose = session_purpose::lock_holder;
    config.client_identity = this_process().id;
    return m_open_session(config);
}

void session_pool::unpin(std::string_view lock_name, std::unique_ptr<session> s) noexcept {
    if (!s)
        return;
    s->rollback(); // no-op unless a transaction is still open
    s->unlisten(); // no-op unless it waited for releases
    if (!s->usable()) {
        s.reset();
        session_broke();
        return;
    }
    if (traits().pools_lock_sessions) {
        std::lock_guard lock(m_mutex);
        if (m_open < m_options.pool_size) {
            m_idle.push_back(std::move(s));
            ++m_open;
            m_cv.notify_one();
            return;
        }
    }
    if (traits().lock_files) {
        // Kept open for the next grant of the same name (opening a lock file costs an open,
        // a dozen stats and three prepares); the least recently used goes first.
        try {
            auto file = lock_file_for(lock_name);
            std::lock_guard lock(m_mutex);
            if (m_idle_lock_files.size() >= m_options.pool_size && !m_idle_lock_files.empty())
                m_idle_lock_files.erase(m_idle_lock_files.begin());
            m_idle_lock_files.emplace_back(std::move(file), std::move(s));
        } catch (...) {
            // out of memory: close it
        }
        return;
    }
    std::lock_guard lock(m_mutex);
    if (m_idle_holders.size() < m_options.pool_size)
        m_idle_holders.push_back(std::move(s));
}

std::unique_ptr<session> session_pool::pin_seat(std::string_view lock_name) {
    if (traits().pools_lock_sessions || traits().lock_files)
        return pin(lock_name); // PostgreSQL: lock sessions are pooled ones already
    {
        // MariaDB lock sessions run with autocommit off; a seat's statements (the acquire,
        // the release) must commit on their own, like the pool's.
        std::lock_guard lock(m_mutex);
        if (auto s = take_idle_locked())
            return s;
    }
    return m_open_session(m_config);
}

void session_pool::unpin_seat(std::string_view lock_name, std::unique_ptr<session> s) noexcept {
    if (!s)
        return;
    if (traits().pools_lock_sessions || traits().lock_files) {
        unpin(lock_name, std::move(s));
        return;
    }
    s->rollback(); // no-op: autocommit
    s->unlisten(); // no-op: no notifications here
    if (!s->usable()) {
        s.reset();
        session_broke();
        return;
    }
    std::lock_guard lock(m_mutex);
    if (m_open < m_options.pool_size) {
        m_idle.push_back(std::move(s));
        ++m_open;
        m_cv.notify_one();
    }
    // else: closed here (the pool is full without it)
}

namespace {
thread_local route_scope* t_innermost_route = nullptr;
} // namespace

route_scope::route_scope(const lock_context& db, session* s) noexcept
    : m_db(&db), m_session(s), m_outer(t_innermost_route) {
    t_innermost_route = this;
}

route_scope::~route_scope() {
    t_innermost_route = m_outer;
}

route_scope* route_scope::exchange_innermost(route_scope* innermost) noexcept {
    return std::exchange(t_innermost_route, innermost);
}

session* route_scope::current(const lock_context& db) noexcept {
    for (auto* r = t_innermost_route; r; r = r->m_outer) {
        if (r->m_db == &db)
            return r->m_session && r->m_session->usable() ? r->m_session : nullptr;
    }
    return nullptr;
}

} // namespace sqlock::detail
