// The wait hook (io_wait.hpp): thread-local, consulted at every wait. Its accessors are out of
// line on purpose: a fiber may resume on another thread, and a thread-local's address must be
// computed afresh after every wait, never kept from before it.
#include "base/io_wait.hpp"

#include <algorithm>
#include <cerrno>
#include <poll.h>
#include <system_error>
#include <thread>

namespace sqlock::detail {

namespace {
thread_local io_wait* t_io_wait = nullptr;
} // namespace

io_wait* current_io_wait() noexcept {
    return t_io_wait;
}

io_wait* exchange_io_wait(io_wait* hook) noexcept {
    io_wait* const previous = t_io_wait;
    t_io_wait = hook;
    return previous;
}

bool wait_for_fd(int fd, io_wait::fd_event event, io_wait::time_point deadline,
                 bool interruptible) {
    if (io_wait* hook = current_io_wait())
        return hook->wait_fd(fd, event, deadline, interruptible) == io_wait::outcome::ready;
    pollfd p{};
    p.fd = fd;
    p.events = event == io_wait::fd_event::readable ? POLLIN : POLLOUT;
    int timeout = -1; // deadline max(): no bound
    if (deadline != io_wait::time_point::max()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        timeout = static_cast<int>(std::clamp<long long>(left.count(), 0, 60'000));
    }
    const int ready = ::poll(&p, 1, timeout);
    if (ready < 0 && errno != EINTR)
        throw std::system_error(errno, std::generic_category(), "poll");
    return ready > 0;
}

bool pause_until(io_wait::time_point until) {
    if (io_wait* hook = current_io_wait())
        return hook->pause_until(until) != io_wait::outcome::stopped;
    std::this_thread::sleep_until(until);
    return true;
}

bool pause_for(std::chrono::steady_clock::duration d) {
    return pause_until(std::chrono::steady_clock::now() + d);
}

interruptible_waits::interruptible_waits(bool active) noexcept
    : m_inner(active ? current_io_wait() : nullptr) {
    if (m_inner)
        exchange_io_wait(this); // the fiber host carries it across the fiber's suspensions
}

interruptible_waits::~interruptible_waits() {
    if (m_inner)
        exchange_io_wait(m_inner);
}

io_wait::outcome interruptible_waits::wait_fd(int fd, fd_event event, time_point deadline,
                                              bool /*interruptible*/) {
    return m_inner->wait_fd(fd, event, deadline, true);
}

io_wait::outcome interruptible_waits::pause_until(time_point until) {
    return m_inner->pause_until(until);
}

bool interruptible_waits::stop_requested() const noexcept {
    return m_inner->stop_requested();
}

} // namespace sqlock::detail
