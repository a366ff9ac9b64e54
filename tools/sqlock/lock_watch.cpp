#include "lock_watch.hpp"

#include "wakeup_pipe.hpp"

#include <algorithm>

namespace sqlock::cli {

std::chrono::milliseconds kill_margin(std::chrono::milliseconds ttl) {
    return std::min<std::chrono::milliseconds>(ttl / 20, std::chrono::milliseconds(250));
}

std::chrono::milliseconds max_grace(std::chrono::milliseconds ttl) {
    return ttl / 2 - kill_margin(ttl);
}

std::chrono::milliseconds default_grace(std::chrono::milliseconds ttl) {
    return std::min<std::chrono::milliseconds>(std::chrono::seconds(10), ttl / 4);
}

void lock_watch::lost(const sqlock::lock_lost_event& event) noexcept {
    std::string message;
    try {
        message = std::string(sqlock::to_string(event.reason)) + ": " + event.message;
    } catch (...) {
        // Out of memory for the message: the loss still counts.
    }
    {
        std::lock_guard lock(m_mutex);
        if (!m_lost)
            m_lost_message = std::move(message);
        m_lost = true;
    }
    wake_job_supervisor();
}

void lock_watch::risk(const sqlock::lock_at_risk_event& event) noexcept {
    try {
        std::lock_guard lock(m_mutex);
        if (event.at_risk) {
            m_last_risk =
                "lock \"" + event.name + "\" is at risk" +
                (event.message.empty() ? ": no renewal confirmed in time" : ": " + event.message);
            m_at_risk[event.token] = {event.lease_end, m_last_risk};
        } else
            m_at_risk.erase(event.token);
    } catch (...) {
        // Out of memory: the lease's loss, if it comes, still stops the job.
    }
    wake_job_supervisor();
}

void lock_watch::lost_at_release(std::string message) {
    std::lock_guard lock(m_mutex);
    if (!m_lost)
        m_lost_message = std::move(message);
    m_lost = true;
}

bool lock_watch::is_lost() const {
    std::lock_guard lock(m_mutex);
    return m_lost;
}

std::string lock_watch::lost_message() const {
    std::lock_guard lock(m_mutex);
    return m_lost_message;
}

std::optional<std::chrono::steady_clock::time_point> lock_watch::at_risk_until() const {
    std::lock_guard lock(m_mutex);
    std::optional<std::chrono::steady_clock::time_point> first;
    for (const auto& [token, lease] : m_at_risk)
        if (!first || lease.lease_end < *first)
            first = lease.lease_end;
    return first;
}

std::string lock_watch::risk_message() const {
    std::lock_guard lock(m_mutex);
    const at_risk_lease* first = nullptr;
    for (const auto& [token, lease] : m_at_risk)
        if (!first || lease.lease_end < first->lease_end)
            first = &lease;
    return first ? first->what : m_last_risk;
}

void lock_watch::note_stopped_at_risk() {
    std::lock_guard lock(m_mutex);
    m_stopped_at_risk = true;
}

bool lock_watch::stopped_at_risk() const {
    std::lock_guard lock(m_mutex);
    return m_stopped_at_risk;
}

} // namespace sqlock::cli
