#include "base/clock_watch.hpp"

#include <cstdlib>
#include <utility>

namespace sqlock::detail {

namespace {
std::int64_t ms_of(clock_watch::steady::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
} // namespace

std::optional<std::chrono::milliseconds>
clock_watch::observe(std::int64_t server_ms, steady::time_point sent,
                     steady::time_point received) noexcept {
    // The server's reading is whole milliseconds, rounded down: its true time is up to 1 ms on.
    const std::int64_t lo = server_ms - ms_of(received) - 1;
    const std::int64_t hi = server_ms - ms_of(sent) + 1;
    std::optional<std::chrono::milliseconds> step;
    {
        std::lock_guard lock(m_mutex);
        if (m_have_reference) {
            const auto apart =
                received > m_reference_at ? received - m_reference_at : m_reference_at - received;
            const std::int64_t allowance =
                m_threshold.count() +
                std::chrono::duration_cast<std::chrono::milliseconds>(apart).count() / 1000;
            if (lo > m_hi + allowance || hi < m_lo - allowance) {
                const std::int64_t size = (lo + hi) / 2 - (m_lo + m_hi) / 2;
                step = std::chrono::milliseconds(size);
                ++m_summary.steps;
                m_summary.last = *step;
                if (std::llabs(size) > std::llabs(m_summary.largest.count()))
                    m_summary.largest = *step;
                m_unrecorded = step;
            }
        }
        // The newest reply is the reference from now on: comparing neighbours only keeps slow
        // drift (NTP slewing) from ever adding up to a "step".
        if (!m_have_reference || step || received >= m_reference_at) {
            m_have_reference = true;
            m_lo = lo;
            m_hi = hi;
            m_reference_at = received;
        }
    }
    if (step && m_on_step)
        m_on_step(*step);
    return step;
}

clock_watch::summary clock_watch::seen() const {
    std::lock_guard lock(m_mutex);
    return m_summary;
}

std::optional<std::chrono::milliseconds>
clock_watch::take_unrecorded(std::chrono::milliseconds min_interval) {
    std::lock_guard lock(m_mutex);
    if (!m_unrecorded)
        return std::nullopt;
    const auto now = steady::now();
    if (m_last_recorded && now - *m_last_recorded < min_interval)
        return std::nullopt;
    m_last_recorded = now;
    return std::exchange(m_unrecorded, std::nullopt);
}

} // namespace sqlock::detail
