#include "async/acquire.hpp"

#include "async/fiber_host.hpp"
#include "async/local_line.hpp"
#include "base/io_wait.hpp"

#include <algorithm>

namespace sqlock::detail {

void async_acquire::start() {
    m_lockable->track(shared_from_this());
    try {
        auto& line = m_lockable->line();
        if (m_deadline <= std::chrono::steady_clock::now()) {
            run_call([self = shared_from_this()] { self->run(); });
            return;
        }
        if (m_deadline != std::chrono::steady_clock::time_point::max())
            arm_deadline();
        line.join(shared_from_this(), m_lockable->units(m_mode));
    } catch (...) {
        auto expected = phase::queued;
        if (m_phase.compare_exchange_strong(expected, phase::finished))
            report({acquire_result::outcome::failed, std::current_exception(), nullptr});
    }
}

void async_acquire::arm_deadline() {
    const auto* executor = m_lockable->fibers();
    if (!executor) {
        m_lockable->workers().run_at(m_deadline, [weak = weak_from_this()] {
            if (auto self = weak.lock())
                self->expire();
        });
        return;
    }
    // On the lock's executor rather than the pool's timer thread: no thread for PostgreSQL.
    auto timer = std::make_shared<asio::steady_timer>(*executor, m_deadline);
    {
        std::lock_guard lock(m_timer_mutex);
        m_timer = timer;
    }
    timer->async_wait([weak = weak_from_this()](const std::error_code& ec) {
        if (auto self = weak.lock(); self && !ec)
            self->expire();
    });
}

void async_acquire::disarm_deadline() noexcept {
    std::shared_ptr<asio::steady_timer> timer;
    {
        std::lock_guard lock(m_timer_mutex);
        timer = std::move(m_timer);
    }
    if (!timer)
        return;
    try {
        // Cancelled on its executor (a timer is not thread-safe): its wait is outstanding
        // work, which must not keep io_context::run() going until the deadline.
        asio::post(timer->get_executor(), [timer] { timer->cancel(); });
    } catch (...) {
        // It fires at the deadline instead, and finds this acquire over.
    }
}

bool async_acquire::claim() noexcept {
    auto expected = phase::queued;
    return m_phase.compare_exchange_strong(expected, phase::claimed);
}

void async_acquire::run_call(std::function<void()> call) {
    if (const auto* executor = m_lockable->fibers())
        run_on_fiber(*executor, m_stop.get_token(), std::move(call));
    else
        m_lockable->workers().run_acquire(std::move(call));
}

void async_acquire::run_claimed() noexcept {
    try {
        run_call([self = shared_from_this()] { self->run_head(); });
    } catch (...) {
        auto expected = phase::claimed;
        if (!m_phase.compare_exchange_strong(expected, phase::finished))
            return; // cancelled or timed out meanwhile: reported, and the line told
        m_lockable->line().head_done();
        report({acquire_result::outcome::failed, std::current_exception(), nullptr});
    }
}

void async_acquire::run_head() noexcept {
    auto expected = phase::claimed;
    if (!m_phase.compare_exchange_strong(expected, phase::running))
        return; // ended while it waited for this thread (end_waiting told the line)
    auto result = attempt();
    m_phase.store(phase::finished);
    m_lockable->line().head_done(); // the next in line may ask now
    report(std::move(result));
}

void async_acquire::end_waiting(acquire_result::outcome how) noexcept {
    auto expected = phase::queued;
    if (m_phase.compare_exchange_strong(expected, phase::finished)) {
        report({how, nullptr, nullptr});
        m_lockable->line().kick(); // it may have held up those behind it
        return;
    }
    expected = phase::claimed;
    if (m_phase.compare_exchange_strong(expected, phase::finished)) {
        report({how, nullptr, nullptr});
        m_lockable->line().head_done(); // it was the head: the next may ask
    }
    // Otherwise in the lock call (which looks at the stop request and the deadline), or over.
}

void async_acquire::expire() noexcept {
    end_waiting(acquire_result::outcome::timed_out);
}

void async_acquire::cancel() noexcept {
    m_stop.request_stop(); // a running lock call looks at it
    end_waiting(acquire_result::outcome::cancelled);
}

void async_acquire::run() noexcept {
    auto expected = phase::queued;
    if (!m_phase.compare_exchange_strong(expected, phase::running))
        return; // cancelled while it waited for this thread
    auto result = attempt();
    m_phase.store(phase::finished);
    report(std::move(result));
}

acquire_result async_acquire::attempt() noexcept {
    using how = acquire_result::outcome;
    const auto stop = m_stop.get_token();
    try {
        auto grant = m_lockable->acquire(m_mode, m_deadline, stop);
        if (stop.stop_requested()) {
            if (grant)
                grant->release(); // the grant raced the cancel: never leave it held
            return {how::cancelled, nullptr, nullptr};
        }
        if (!grant)
            return {how::timed_out, nullptr, nullptr};
        return {how::granted, nullptr, std::move(grant)};
    } catch (...) {
        // A cancel abandons a connect in flight (io_wait.hpp), which fails the attempt: the
        // caller asked for no more than "cancelled" (nothing is held after a throw).
        if (stop.stop_requested())
            return {how::cancelled, nullptr, nullptr};
        return {how::failed, std::current_exception(), nullptr};
    }
}

void async_acquire::report(acquire_result r) noexcept {
    disarm_deadline();
    auto done = std::move(m_done);
    m_done = nullptr;
    try {
        done(std::move(r));
    } catch (...) {
        // The header's completion only posts to an executor; nothing to tell if that failed.
    }
}

void async_lockable::track(const std::shared_ptr<async_acquire>& op) {
    std::lock_guard lock(m_mutex);
    if (m_in_flight.size() >= m_sweep_at) { // now and then, so that many waiters cost O(n)
        std::erase_if(m_in_flight, [](const auto& w) {
            const auto p = w.lock();
            return !p || p->finished();
        });
        m_sweep_at = std::max<std::size_t>(16, 2 * m_in_flight.size());
    }
    m_in_flight.push_back(op);
}

void async_lockable::cancel_all() noexcept {
    std::vector<std::shared_ptr<async_acquire>> ops;
    {
        std::lock_guard lock(m_mutex);
        for (const auto& w : m_in_flight)
            if (auto p = w.lock())
                ops.push_back(std::move(p));
        m_in_flight.clear();
    }
    for (const auto& op : ops)
        op->cancel();
}

// --- the header's entry points ---------------------------------------------------------------

std::shared_ptr<async_acquire> async_calls::prepare(const std::shared_ptr<async_lockable>& lockable,
                                                    acquire_mode mode,
                                                    std::chrono::steady_clock::time_point deadline,
                                                    acquire_done done) {
    return std::make_shared<async_acquire>(lockable, mode, deadline, std::move(done));
}

void async_calls::start(const std::shared_ptr<async_acquire>& op) {
    op->start();
}

void async_calls::cancel(async_acquire& op) noexcept {
    op.cancel();
}

void async_calls::cancel_all(async_lockable& lockable) noexcept {
    lockable.cancel_all();
}

const std::string& async_calls::name(const async_lockable& lockable) noexcept {
    return lockable.name();
}

std::chrono::steady_clock::time_point async_calls::lease_end(const async_grant& grant) noexcept {
    return grant.lease_end();
}

void async_calls::release(std::shared_ptr<async_grant> grant,
                          std::function<void(loss_reason)> done) noexcept {
    const auto finish = [](std::shared_ptr<async_grant>& g,
                           const std::function<void(loss_reason)>& tell) noexcept {
        const auto how = g->release();
        g.reset(); // the grant's slot goes back before the caller hears of it
        if (tell) {
            try {
                tell(how);
            } catch (...) {
                // The header's completion only posts to an executor.
            }
        }
    };
    try {
        // PostgreSQL: on a fiber of the lock's executor, as its acquires; else a release thread.
        if (const auto* executor = grant->fibers())
            run_on_fiber(*executor, {}, [grant, done, finish]() mutable { finish(grant, done); });
        else
            grant->workers().run_release([grant, done, finish]() mutable { finish(grant, done); });
    } catch (...) {
        finish(grant, done); // no thread could be started: here rather than leave it held
    }
}

} // namespace sqlock::detail
