// What `sqlock run` knows about the lock its job runs under, told by the lock's callbacks
// (on_lost, on_at_risk, from sqlock's background thread) and read by the job's supervisor
// (job_group.cpp), which it wakes on every change.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <sqlock/mutex.hpp>
#include <string>

namespace sqlock::cli {

/// How long before a lease's local end the job's group gets SIGKILL when renewals fail: time
/// for the kernel to end it (ttl/20, at most 250 ms).
std::chrono::milliseconds kill_margin(std::chrono::milliseconds ttl);

/// The longest --grace that fits `ttl`: a lease is at risk once half its TTL is left without a
/// renewal, and the job must have been sent SIGTERM, given its grace and killed before the
/// lease's local end (ttl/2 - kill_margin).
std::chrono::milliseconds max_grace(std::chrono::milliseconds ttl);

/// --grace when not given: 10 s, at most ttl/4 (leaving a renewal ttl/4 to get through after
/// the lease became at risk before the job is told to stop).
std::chrono::milliseconds default_grace(std::chrono::milliseconds ttl);

class lock_watch {
public:
    /// on_lost: the lock is gone. Wakes the supervisor.
    void lost(const sqlock::lock_lost_event& event) noexcept;
    /// on_at_risk: one lease of the lock is at risk, or safe again. Wakes the supervisor.
    void risk(const sqlock::lock_at_risk_event& event) noexcept;
    /// Lost at release (force-released, found only then), with why.
    void lost_at_release(std::string message);

    bool is_lost() const;
    std::string lost_message() const;
    /// The earliest local end of a lease at risk now, if any.
    std::optional<std::chrono::steady_clock::time_point> at_risk_until() const;
    /// "lock "NAME" is at risk: WHY" for the lease that ends first, for messages (the last
    /// one told, once none is at risk any more).
    std::string risk_message() const;
    /// The supervisor stopped the job because a lease was at risk.
    void note_stopped_at_risk();
    bool stopped_at_risk() const;

private:
    struct at_risk_lease {
        std::chrono::steady_clock::time_point lease_end;
        std::string what;
    };
    mutable std::mutex m_mutex;
    bool m_lost = false;
    std::string m_lost_message;
    std::map<std::int64_t, at_risk_lease> m_at_risk; ///< by fencing token
    std::string m_last_risk;                         ///< the last at-risk message told
    bool m_stopped_at_risk = false;
};

} // namespace sqlock::cli
