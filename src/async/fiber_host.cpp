// The fiber host of fiber_host.hpp: one fiber_task per fiber, the wait hook it installs
// while its fiber runs, and the Asio operations that resume it.
#include "async/fiber_host.hpp"

// Asio's scheduler, inlined here (posting from a handler), trips GCC 12's flow-based
// -Wnull-dereference on its thread-info pointer, which it checks before use.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "async/fiber.hpp"
#include "base/io_wait.hpp"
#include "base/session.hpp"
#include "database/lock_context.hpp"

#include <asio/bind_executor.hpp>
#include <asio/dispatch.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <cstdint>
#include <memory>
#include <optional>

namespace sqlock::detail {

namespace {

/// The thread-locals a fiber keeps across its waits (fiber_host.hpp): installed while it runs,
/// put aside while it is suspended. (postgres_session's handle capture is not among them: it
/// is set only around libpqxx's adoption of a connected handle, which sends nothing.)
struct carried_state {
    io_wait* hook = nullptr;
    wait_scopes scopes;
    route_scope* route = nullptr;
};

/// Installs `next` on the calling thread and returns what it had. Each exchange is a call to
/// another unit: a thread-local's address is never kept from before a switch.
carried_state exchange_carried(const carried_state& next) noexcept {
    carried_state previous;
    previous.hook = exchange_io_wait(next.hook);
    previous.scopes = exchange_wait_scopes(next.scopes);
    previous.route = route_scope::exchange_innermost(next.route);
    return previous;
}

class fiber_task final : public io_wait, public std::enable_shared_from_this<fiber_task> {
public:
    using strand_type = asio::strand<asio::any_io_executor>;

    fiber_task(const asio::any_io_executor& executor, std::stop_token stop,
               std::function<void()> body)
        : m_strand(asio::make_strand(executor)), m_stop(std::move(stop)), m_fiber(std::move(body)) {
        m_carried.hook = this;
    }

    /// Keeps itself alive until its fiber ends, and makes its first step.
    void start(bool inline_ok) {
        m_keep = shared_from_this();
        m_on_stop.emplace(m_stop, [weak = weak_from_this()] {
            if (auto self = weak.lock())
                asio::post(self->m_strand, [self] { self->wake_on_stop(); });
        });
        auto first = [self = shared_from_this()] {
            self->step();
        };
        if (inline_ok)
            asio::dispatch(m_strand, std::move(first));
        else
            asio::post(m_strand, std::move(first));
    }

    outcome wait_fd(int fd, fd_event event, time_point deadline, bool interruptible) override;
    outcome pause_until(time_point until) override;
    bool stop_requested() const noexcept override { return m_stop.stop_requested(); }

private:
    /// On the strand: runs the fiber until it waits or ends, its thread-locals installed.
    void step() noexcept;
    /// On the strand: ends the armed wait `id` with `how` and runs the fiber on.
    void wake(std::uint64_t id, outcome how) noexcept;
    /// On the strand, after a stop request: ends the armed wait if it is interruptible.
    void wake_on_stop() noexcept;
    /// On the fiber: arms a wait (its operations started), suspends until wake(), disarms.
    outcome suspend_armed(bool interruptible);
    /// The completion handler of a wait's operation: `how` when it completed, nothing when it
    /// was cancelled (the wait ended otherwise).
    auto on_complete(outcome how) {
        return [self = shared_from_this(), id = m_next_id, how](const std::error_code& ec) {
            if (ec != asio::error::operation_aborted)
                self->wake(id, how);
        };
    }

    strand_type m_strand;
    std::stop_token m_stop;
    std::optional<std::stop_callback<std::function<void()>>> m_on_stop;
    fiber m_fiber;
    std::shared_ptr<fiber_task> m_keep; ///< itself, until its fiber ended
    carried_state m_carried;            ///< the fiber's, while it is suspended
    // The armed wait (strand and fiber only, never at once): its id, whether a stop ends it,
    // and how it ended.
    std::uint64_t m_next_id = 1;
    std::uint64_t m_armed = 0;
    bool m_interruptible = false;
    outcome m_woken = outcome::ready;
};

void fiber_task::step() noexcept {
    const auto host = exchange_carried(m_carried);
    bool ended = true;
    try {
        ended = m_fiber.resume();
    } catch (...) {
        // run_on_fiber's bodies do not throw; nothing to tell if one did
    }
    m_carried = exchange_carried(host);
    if (ended) {
        m_on_stop.reset();
        m_keep.reset(); // the last step: `this` may go once the handlers holding it are done
    }
}

void fiber_task::wake(std::uint64_t id, outcome how) noexcept {
    if (m_armed == 0 || m_armed != id)
        return; // a wait that ended already
    m_armed = 0;
    m_woken = how;
    step();
}

void fiber_task::wake_on_stop() noexcept {
    if (m_armed != 0 && m_interruptible)
        wake(m_armed, outcome::stopped);
}

io_wait::outcome fiber_task::suspend_armed(bool interruptible) {
    m_armed = m_next_id++;
    m_interruptible = interruptible;
    if (interruptible && m_stop.stop_requested()) {
        m_armed = 0; // stopped before the wait: its operations are cancelled by the caller
        return outcome::stopped;
    }
    m_fiber.suspend(); // step() returns; wake() continues here
    return m_woken;
}

io_wait::outcome fiber_task::wait_fd(int fd, fd_event event, time_point deadline,
                                     bool interruptible) {
    if (deadline <= std::chrono::steady_clock::now())
        return outcome::timed_out;
    // libpq owns the descriptor: registered for this wait only, released (never closed).
    asio::posix::stream_descriptor socket(m_strand, fd);
    struct releaser {
        asio::posix::stream_descriptor& s;
        ~releaser() { (void)s.release(); } // cancels the wait if it is still pending
    } release_it{socket};
    const auto kind = event == fd_event::readable ? asio::posix::stream_descriptor::wait_read
                                                  : asio::posix::stream_descriptor::wait_write;
    socket.async_wait(kind, on_complete(outcome::ready));
    std::optional<asio::steady_timer> timer;
    if (deadline != time_point::max()) {
        timer.emplace(m_strand, deadline);
        timer->async_wait(on_complete(outcome::timed_out));
    }
    return suspend_armed(interruptible);
}

io_wait::outcome fiber_task::pause_until(time_point until) {
    if (until <= std::chrono::steady_clock::now())
        return m_stop.stop_requested() ? outcome::stopped : outcome::timed_out;
    asio::steady_timer timer(m_strand, until);
    timer.async_wait(on_complete(outcome::timed_out));
    return suspend_armed(true);
}

} // namespace

void run_on_fiber(const asio::any_io_executor& executor, std::stop_token stop,
                  std::function<void()> body) {
    const bool inline_ok = !on_fiber(); // never a fiber inside a fiber's step
    auto task = std::make_shared<fiber_task>(executor, std::move(stop), std::move(body));
    task->start(inline_ok);
}

} // namespace sqlock::detail
