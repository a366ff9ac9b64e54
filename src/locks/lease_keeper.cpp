#include "locks/hold.hpp"

#include <algorithm>
#include <condition_variable>

namespace sqlock::detail {

bool active_hold::mark_lost(loss_reason why, const std::string& what) {
    lock_lost_event event;
    {
        std::lock_guard lock(state_mutex);
        if (reason != loss_reason::none || released || releasing)
            return false;
        reason = why;
        message = what;
        event = lock_lost_event{name, current.token, why, what};
    }
    stop.request_stop();
    if (on_lost) {
        try {
            on_lost(event);
        } catch (...) {
            // A throwing callback must not take the keeper thread down.
        }
    }
    return true;
}

bool active_hold::valid(std::chrono::steady_clock::time_point now) const {
    std::lock_guard lock(state_mutex);
    return reason == loss_reason::none && !released && now < current.valid_until;
}

std::chrono::steady_clock::time_point
active_hold::update_risk(std::chrono::steady_clock::time_point now) {
    lock_at_risk_event event;
    auto look_again = std::chrono::steady_clock::time_point::max();
    {
        std::lock_guard lock(state_mutex);
        if (reason != loss_reason::none || released || releasing)
            return look_again;
        const auto risk_from = current.valid_until - ttl / 2;
        const bool at_risk = last_renewal_failed || now >= risk_from;
        if (!at_risk)
            look_again = risk_from;
        if (at_risk == told_at_risk)
            return look_again;
        told_at_risk = at_risk;
        event = lock_at_risk_event{name, current.token, at_risk, current.valid_until,
                                   last_renewal_failed ? message : std::string()};
    }
    if (on_at_risk) {
        try {
            on_at_risk(event);
        } catch (...) {
            // A throwing callback must not take the keeper thread down.
        }
    }
    return look_again;
}

lease_keeper& lease_keeper::instance() {
    // Never destroyed: its threads run for the life of the process (detached), so no static
    // destructor has to join them while other static objects are torn down.
    static lease_keeper* keeper = new lease_keeper();
    return *keeper;
}

void lease_keeper::track(const std::shared_ptr<active_hold>& hold) {
    std::chrono::steady_clock::time_point renew_at;
    std::chrono::steady_clock::time_point watch_at;
    {
        std::lock_guard state(hold->state_mutex);
        renew_at = hold->next_renewal;
        watch_at = hold->current.valid_until;
        if (hold->current.pinned) // the session monitor looks sooner
            watch_at = std::min(watch_at, std::chrono::steady_clock::now() +
                                              std::min<std::chrono::milliseconds>(
                                                  hold->ttl / 10, std::chrono::milliseconds(200)));
    }
    std::lock_guard lock(m_mutex);
    std::erase_if(m_holds, [](const auto& w) { return w.expired(); });
    m_holds.push_back(hold);
    start_locked();
    // Wake a thread only when this grant needs it before it would wake anyway: waking both on
    // every grant cost context switches on the hot path.
    // A thread that is mid-pass (wake == min) may have missed this hold: mark it dirty so it
    // looks again before sleeping.
    const auto awake = std::chrono::steady_clock::time_point::min();
    if (hold->renew && (m_renew_wake == awake || renew_at < m_renew_wake)) {
        m_renew_dirty = true;
        m_renew_cv.notify_all();
    }
    if (m_watch_wake == awake || watch_at < m_watch_wake) {
        m_watch_dirty = true;
        m_watch_cv.notify_all();
    }
}

void lease_keeper::poke() {
    std::lock_guard lock(m_mutex);
    m_renew_dirty = true;
    m_watch_dirty = true;
    m_renew_cv.notify_all();
    m_watch_cv.notify_all();
}

void lease_keeper::wake_watch() {
    std::lock_guard lock(m_mutex);
    m_watch_dirty = true;
    m_watch_cv.notify_all();
}

void lease_keeper::start_locked() {
    if (m_started)
        return;
    m_started = true;
    std::thread([this] { renew_loop(); }).detach();
    std::thread([this] { watch_loop(); }).detach();
}

namespace {

/// The holds still alive and not finished, copied out so no lock is held while working.
std::vector<std::shared_ptr<active_hold>> live(std::vector<std::weak_ptr<active_hold>>& holds) {
    std::vector<std::shared_ptr<active_hold>> out;
    std::erase_if(holds, [](const auto& w) { return w.expired(); });
    for (const auto& w : holds) {
        if (auto h = w.lock()) {
            std::lock_guard lock(h->state_mutex);
            if (!h->released && h->reason == loss_reason::none)
                out.push_back(std::move(h));
        }
    }
    return out;
}

constexpr auto idle_wait = std::chrono::seconds(60);

} // namespace

void lease_keeper::note_failed_renewal(active_hold& h, const std::string& what,
                                       std::chrono::steady_clock::time_point& next) {
    {
        std::lock_guard state(h.state_mutex);
        h.renewal_in_flight = false;
        h.last_renewal_failed = true;
        h.message = what;
        h.next_renewal = std::chrono::steady_clock::now() + h.ttl / 10;
        next = std::min(next, h.next_renewal);
    }
    wake_watch();
}

void lease_keeper::note_renewal(active_hold& h, const grant& renewed,
                                std::chrono::steady_clock::time_point& next) {
    bool was_at_risk = false;
    {
        std::lock_guard state(h.state_mutex);
        h.renewal_in_flight = false;
        h.current.valid_until = renewed.valid_until;
        h.next_renewal = std::chrono::steady_clock::now() + h.ttl / 3;
        h.last_renewal_failed = false;
        next = std::min(next, h.next_renewal);
        was_at_risk = h.told_at_risk;
    }
    if (was_at_risk)
        wake_watch(); // it tells on_at_risk that the lease is safe again
}

void lease_keeper::renew_if_due(const std::shared_ptr<active_hold>& h,
                                std::chrono::steady_clock::time_point& next) {
    using clock = std::chrono::steady_clock;
    clock::time_point due;
    {
        std::lock_guard state(h->state_mutex);
        due = h->next_renewal;
    }
    if (clock::now() < due) {
        next = std::min(next, due);
        return;
    }
    std::unique_lock op(h->op_mutex, std::try_to_lock);
    if (!op) { // the owner is busy with it right now; look again soon
        next = std::min(next, clock::now() + h->ttl / 30);
        return;
    }
    grant held;
    bool too_late = false;
    {
        std::lock_guard state(h->state_mutex);
        if (h->released || h->reason != loss_reason::none)
            return;
        held = h->current;
        // Past the lease's local end a waiter may have dropped it already; a renewal now
        // would not bring back what owns_lock() has reported lost.
        too_late = clock::now() >= held.valid_until;
        h->renewal_in_flight = !too_late; // a hung server keeps it so: "unknown"
    }
    if (too_late) {
        op.unlock();
        h->mark_lost(h->last_renewal_failed ? loss_reason::unknown : loss_reason::lost,
                     "lock \"" + h->name + "\": its lease ended before it was renewed");
        return;
    }
    try {
        note_renewal(*h, h->strategy->renew(*h->db, h->request(), held), next);
    } catch (const error& e) {
        {
            std::lock_guard state(h->state_mutex);
            h->renewal_in_flight = false;
        }
        if (e.code() == errc::lock_lost) {
            op.unlock();
            h->mark_lost(loss_reason::lost, e.what());
            return;
        }
        // The database did not answer: try again soon; the watchdog says the lease is at risk
        // now, and declares the loss (reason unknown) at its local end if no renewal gets
        // through.
        note_failed_renewal(*h, e.what(), next);
    } catch (const std::exception& e) {
        note_failed_renewal(*h, e.what(), next);
    }
}

void lease_keeper::renew_loop() {
    using clock = std::chrono::steady_clock;
    std::unique_lock lock(m_mutex);
    for (;;) {
        auto holds = live(m_holds);
        lock.unlock();
        auto next = clock::now() + idle_wait;
        for (const auto& h : holds)
            if (h->renew)
                renew_if_due(h, next);
        holds.clear(); // hold nothing while idle: a finished hold (and its database) must go
        lock.lock();
        m_renew_wake = next;
        m_renew_cv.wait_until(lock, next, [this] { return m_renew_dirty; });
        m_renew_dirty = false;
        m_renew_wake = clock::time_point::min(); // awake: new holds set the dirty flag
    }
}

void lease_keeper::watch_loop() {
    using clock = std::chrono::steady_clock;
    std::unique_lock lock(m_mutex);
    for (;;) {
        auto holds = live(m_holds);
        lock.unlock();
        auto next = clock::now() + idle_wait;
        const auto now = clock::now();
        for (const auto& h : holds) {
            clock::time_point deadline;
            bool unreachable = false;
            std::string last_error;
            {
                std::lock_guard state(h->state_mutex);
                deadline = h->current.valid_until;
                unreachable = h->last_renewal_failed || h->renewal_in_flight;
                last_error = h->message;
            }
            if (now < deadline) {
                next = std::min({next, deadline, h->update_risk(now)});
                // select_for_update: notice a killed session promptly (a non-blocking check
                // where the backend has one: PostgreSQL sees the server's goodbye on the
                // socket). Skipped while the owner or the renewer is using the session.
                std::shared_ptr<session> pinned;
                {
                    std::lock_guard state(h->state_mutex);
                    pinned = h->current.pinned;
                }
                if (pinned) {
                    next = std::min(next, now + std::min<std::chrono::milliseconds>(
                                                    h->ttl / 10, std::chrono::milliseconds(200)));
                    std::unique_lock op(h->op_mutex, std::try_to_lock);
                    if (op && !pinned->usable()) {
                        op.unlock();
                        h->mark_lost(loss_reason::lost,
                                     "lock \"" + h->name + "\": its database session ended");
                    }
                }
                continue;
            }
            if (h->renew && unreachable) {
                h->mark_lost(loss_reason::unknown,
                             "lock \"" + h->name +
                                 "\": no renewal was confirmed before its lease "
                                 "ended (" +
                                 last_error + ")");
            } else {
                h->mark_lost(loss_reason::lost,
                             "lock \"" + h->name + "\": its lease ended" +
                                 (h->renew ? " before a renewal was confirmed"
                                           : " (renewal is off; ttl was " +
                                                 std::to_string(h->ttl.count()) + " ms)"));
            }
        }
        holds.clear();
        lock.lock();
        m_watch_wake = next;
        m_watch_cv.wait_until(lock, next, [this] { return m_watch_dirty; });
        m_watch_dirty = false;
        m_watch_wake = clock::time_point::min();
    }
}

} // namespace sqlock::detail
