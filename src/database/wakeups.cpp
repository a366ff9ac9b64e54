// Wake-ups: waiters of this process learn of local releases through the wake_hub and of
// other processes' releases through notifications on their own session (PostgreSQL); local
// turnstiles queue a process's own waiters for one name.
#include "database/wakeups.hpp"

#include "base/io_wait.hpp"

#include <algorithm>
#include <utility>

namespace sqlock::detail {

std::uint64_t wake_hub::generation(const std::string& name) {
    std::lock_guard lock(m_mutex);
    const auto it = m_generations.find(name);
    return it == m_generations.end() ? 0 : it->second;
}

void wake_hub::wake(const std::string& name) {
    {
        std::lock_guard lock(m_mutex);
        ++m_generations[name];
    }
    m_cv.notify_all();
}

void wake_hub::wait(const std::string& name, std::uint64_t seen,
                    std::chrono::steady_clock::time_point until) {
    if (on_fiber()) { // a fiber must not block its thread: it looks again every fiber_poll
        poll_on_fiber([&] { return generation(name) != seen; }, until, fiber_poll);
        return;
    }
    std::unique_lock lock(m_mutex);
    m_cv.wait_until(lock, until, [&] {
        const auto it = m_generations.find(name);
        return it != m_generations.end() && it->second != seen;
    });
}

bool listen_on(session& s, const std::string& channel) noexcept {
    if (s.listening())
        return true;
    try {
        return s.usable() && s.listen(channel);
    } catch (...) {
        return false; // the next attempt on this session reports what broke
    }
}

void wake_hub::await(session* s, const std::string& name, std::uint64_t seen,
                     std::chrono::steady_clock::time_point until, bool any_starting_with) {
    if (!s || !s->listening()) {
        wait(name, seen, until);
        return;
    }
    // Notifications arrive on `s`; a local unlock only moves the generation: look at both,
    // in slices short enough that a local hand-over is not delayed noticeably.
    constexpr auto slice = std::chrono::milliseconds(50);
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= until || generation(name) != seen || fiber_stopped())
            return; // (a stopped fiber's notification waits end at once: no spinning here)
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now);
        try {
            for (const auto& released : s->wait_notifications(std::min(left, slice)))
                if (released == name || (any_starting_with && released.starts_with(name)))
                    return;
        } catch (...) {
            return;
        }
    }
}

bool turnstile::enter_on_fiber(std::chrono::steady_clock::time_point deadline) {
    const auto take = [this] {
        std::lock_guard lock(m_mutex);
        return !std::exchange(m_busy, true);
    };
    return poll_on_fiber(take, deadline, fiber_poll);
}

bool turnstile::enter(std::chrono::steady_clock::time_point deadline) {
    if (on_fiber())
        return enter_on_fiber(deadline);
    std::unique_lock lock(m_mutex);
    const auto free = [this] {
        return !m_busy;
    };
    if (deadline == std::chrono::steady_clock::time_point::max())
        m_cv.wait(lock, free);
    else if (!m_cv.wait_until(lock, deadline, free))
        return false;
    m_busy = true;
    return true;
}

void turnstile::leave() noexcept {
    {
        std::lock_guard lock(m_mutex);
        m_busy = false;
    }
    m_cv.notify_one();
}

std::shared_ptr<turnstile> gate_table::gate(const std::string& name) {
    std::lock_guard lock(m_mutex);
    auto& slot = m_gates[name];
    auto gate = slot.lock();
    if (!gate) {
        gate = std::make_shared<turnstile>();
        slot = gate;
    }
    if (m_gates.size() > 1024) // forget names nobody waits for any more
        std::erase_if(m_gates, [](const auto& entry) { return entry.second.expired(); });
    return gate;
}

} // namespace sqlock::detail
