// Internal: noticing steps of the database server's wall clock (docs/site/guides/takeover.md).
//
// Leases never depend on the server's clock for takeover (base/sighting.hpp), but an operator
// wants to know when it stepped. Statements marked "-- sqlock: server-clock" return the
// server's wall clock (ms since the Unix epoch) as the last column of their rows; each such
// reply is fed to observe(). The server read its clock at some moment between our send and our
// receipt of the reply, so one reply bounds the offset (server clock - our monotonic clock) to
// an interval. Two replies whose intervals lie further apart than the threshold (plus 0.1 % of
// the time between them, for clock rates) show a step of at least that size: a clock that only
// runs can never produce it, however slow the network or the server was.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

namespace sqlock::detail {

class clock_watch {
public:
    using steady = std::chrono::steady_clock;

    /// Steps smaller than `threshold` are not reported; `on_step` (noexcept, may be empty) is
    /// called with each one, outside the lock, on the thread that noticed it.
    clock_watch(std::chrono::milliseconds threshold,
                std::function<void(std::chrono::milliseconds)> on_step)
        : m_threshold(threshold), m_on_step(std::move(on_step)) {}

    /// One reply: the server's clock read `server_ms` after `sent` and before `received` (our
    /// monotonic clock). Returns the step it revealed, if any: positive when the server's
    /// clock jumped forward, negative when back (the estimate between the two replies'
    /// midpoints; at least the threshold). Thread-safe; replies may come in any order.
    std::optional<std::chrono::milliseconds>
    observe(std::int64_t server_ms, steady::time_point sent, steady::time_point received) noexcept;

    struct summary {
        std::uint64_t steps = 0;              ///< steps noticed by this handle
        std::chrono::milliseconds last{0};    ///< the latest one (signed)
        std::chrono::milliseconds largest{0}; ///< the largest in size (signed)
    };
    summary seen() const;

    /// The latest step not yet written to the clock_steps table (and forgets it), at most one
    /// per `min_interval` so a flapping clock cannot flood the table.
    std::optional<std::chrono::milliseconds>
    take_unrecorded(std::chrono::milliseconds min_interval);

private:
    const std::chrono::milliseconds m_threshold;
    const std::function<void(std::chrono::milliseconds)> m_on_step;
    mutable std::mutex m_mutex;
    bool m_have_reference = false;
    std::int64_t m_lo = 0, m_hi = 0;     ///< offset interval of the reference reply, ms
    steady::time_point m_reference_at{}; ///< when it was received
    summary m_summary;
    std::optional<std::chrono::milliseconds> m_unrecorded;
    std::optional<steady::time_point> m_last_recorded;
};

} // namespace sqlock::detail
