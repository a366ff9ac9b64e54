// The connection pool: sessions are opened on demand up to pool_size and handed back
// when a statement or a caller is done with them.
#include "base/io_wait.hpp"
#include "database/sessions.hpp"
#include "sqlock/error.hpp"

namespace sqlock::detail {

pooled_session::~pooled_session() {
    if (m_session)
        m_owner->give_back(std::move(m_session));
}

void pooled_session::discard() noexcept {
    if (!m_session)
        return;
    m_session.reset();
    m_owner->forget_session();
}

namespace {

/// Waits on a fiber (io_wait.hpp) for `pool`'s condition: unlocks, pauses (1 ms, doubling to
/// 32 ms) and locks again, since a fiber must not block its thread on the condition variable
/// (the session it waits for may be given back by another fiber of that thread). False at
/// `deadline`, or when the fiber's waiter was stopped.
bool pause_unlocked(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds& step,
                    std::chrono::steady_clock::time_point deadline) {
    lock.unlock();
    const auto now = std::chrono::steady_clock::now();
    const bool more = now < deadline && pause_until(std::min(deadline, now + step));
    step = std::min(step * 2, std::chrono::milliseconds(32));
    lock.lock();
    return more;
}

} // namespace

pooled_session session_pool::checkout() {
    std::unique_lock lock(m_mutex);
    const auto deadline = std::chrono::steady_clock::now() + m_options.connect_timeout;
    const bool fiber = on_fiber();
    auto step = std::chrono::milliseconds(1);
    while (m_idle.empty() && m_open >= m_options.pool_size) {
        const bool more = fiber ? pause_unlocked(lock, step, deadline)
                                : m_cv.wait_until(lock, deadline) != std::cv_status::timeout;
        if (!more && m_idle.empty() && m_open >= m_options.pool_size)
            throw error(errc::timeout,
                        "all " + std::to_string(m_options.pool_size) + " pooled connections to " +
                            m_config.redacted_url + " stayed busy for " +
                            std::to_string(m_options.connect_timeout.count()) +
                            " ms (raise connect_options::pool_size?)",
                        std::string(to_string(m_config.kind)));
    }
    if (!m_idle.empty()) {
        auto s = std::move(m_idle.back());
        m_idle.pop_back();
        return pooled_session(this, std::move(s));
    }
    ++m_open; // reserve the slot, connect outside the lock
    lock.unlock();
    try {
        return pooled_session(this, m_open_session(m_config));
    } catch (...) {
        lock.lock();
        --m_open;
        m_cv.notify_one();
        throw;
    }
}

void session_pool::forget_session() noexcept {
    std::lock_guard lock(m_mutex);
    --m_open;
    m_cv.notify_one();
}

void session_pool::give_back(std::unique_ptr<session> s) noexcept {
    s->unlisten(); // a waiter's session: a pooled one must not collect every release
    std::vector<std::unique_ptr<session>> dropped; // closed outside the lock
    {
        std::lock_guard lock(m_mutex);
        if (s->usable()) {
            m_idle.push_back(std::move(s));
        } else {
            --m_open;
            dropped = take_idle_sessions_locked();
        }
        m_cv.notify_all();
    }
}

void session_pool::session_broke() noexcept {
    std::vector<std::unique_ptr<session>> dropped; // closed outside the lock
    std::lock_guard lock(m_mutex);
    dropped = take_idle_sessions_locked();
    m_cv.notify_all();
}

std::vector<std::unique_ptr<session>> session_pool::take_idle_sessions_locked() noexcept {
    // A session that broke (its server crashed, restarted or failed over, or a network path
    // died) says the idle ones, opened to the same server, are most likely broken too: each
    // would cost its next user a failed statement (a release, say, that then leaves its lease
    // to expire). New sessions go wherever the URL leads now (the new primary of a host list).
    std::vector<std::unique_ptr<session>> dropped;
    if (traits().local_file)
        return dropped; // files do not fail over
    try {
        dropped.reserve(m_idle.size() + m_idle_holders.size());
    } catch (...) {
        return dropped; // out of memory: keep them, each is checked when used
    }
    m_open -= m_idle.size();
    for (auto& idle : m_idle)
        dropped.push_back(std::move(idle));
    m_idle.clear();
    for (auto& idle : m_idle_holders)
        dropped.push_back(std::move(idle));
    m_idle_holders.clear();
    return dropped;
}

std::unique_ptr<session> session_pool::take_idle_locked() noexcept {
    if (m_idle.empty())
        return nullptr;
    auto s = std::move(m_idle.back());
    m_idle.pop_back();
    --m_open;
    m_cv.notify_one(); // room for another pooled session
    return s;
}

std::optional<pooled_session> session_pool::try_checkout_idle() noexcept {
    std::lock_guard lock(m_mutex);
    // Keep one only while others can still get a session without waiting: another idle one,
    // or room to open one.
    if (m_idle.empty() || (m_idle.size() == 1 && m_open >= m_options.pool_size))
        return std::nullopt;
    auto s = std::move(m_idle.back());
    m_idle.pop_back();
    return pooled_session(this, std::move(s));
}

} // namespace sqlock::detail
