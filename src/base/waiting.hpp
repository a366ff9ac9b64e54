// Internal: how a lock wait paces its attempts (mutex, semaphore).
#pragma once

#include "sqlock/error.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

namespace sqlock::detail {

/// Jittered exponential backoff: a random sleep in [d, 2d), d doubling up to max.
class backoff {
public:
    backoff(std::chrono::milliseconds min, std::chrono::milliseconds max)
        : m_next(min), m_max(max) {}
    std::chrono::microseconds next() {
        thread_local std::mt19937_64 rng{std::random_device{}()};
        const auto base = std::chrono::duration_cast<std::chrono::microseconds>(m_next);
        std::uniform_int_distribution<std::int64_t> jitter(0, base.count());
        m_next = std::min(m_next * 2, m_max);
        return base + std::chrono::microseconds(jitter(rng));
    }

private:
    std::chrono::milliseconds m_next;
    std::chrono::milliseconds m_max;
};

/// Backoff while the server refuses connections for lack of slots (is_server_full): a random
/// pause in [d/2, 3d/2), d from 50 ms doubling to 2 s. Slower than the lock's polling, so that
/// a crowd of waiters does not hammer a full server with connection attempts, and jittered so
/// that they do not come back in step when a slot frees up.
class full_server_backoff {
public:
    std::chrono::microseconds next() {
        thread_local std::mt19937_64 rng{std::random_device{}()};
        const auto base = std::chrono::duration_cast<std::chrono::microseconds>(m_next);
        std::uniform_int_distribution<std::int64_t> jitter(0, base.count());
        m_next = std::min(m_next * 2, max);
        return base / 2 + std::chrono::microseconds(jitter(rng));
    }
    void reset() noexcept { m_next = min; }

    static constexpr std::chrono::milliseconds min{50};
    static constexpr std::chrono::milliseconds max{2000};

private:
    std::chrono::milliseconds m_next = min;
};

/// "1.5 s", for messages.
inline std::string seconds_text(std::chrono::steady_clock::duration d) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms) / 1000);
    return text;
}

/// The deadline of a lock wait passed while the server refused connections for lack of slots:
/// errc::timeout that says so (and keeps the refusal's backend, code and SQLSTATE, so that
/// is_server_full() still recognises it). `last` carries the fix (raise the limit, a pooler).
inline error server_full_timeout(const std::string& name, const error& last,
                                 std::chrono::steady_clock::duration refused_for) {
    return error(errc::timeout,
                 "lock \"" + name +
                     "\" was not granted in time: the database server refused "
                     "new connections for " +
                     seconds_text(refused_for) + " until the deadline (" + last.what() + ")",
                 last.backend(), last.native_code(), last.sqlstate());
}

} // namespace sqlock::detail
