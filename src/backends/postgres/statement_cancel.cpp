#include "backends/postgres/statement_cancel.hpp"

#include <atomic>
#include <cstdint>
#include <new>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>

namespace sqlock::detail {

struct statement_cancel::shared_state {
    explicit shared_state(int fd) : done_fd(fd) {}
    ~shared_state() { ::close(done_fd); } // by the last of the fiber and the thread
    shared_state(const shared_state&) = delete;
    shared_state& operator=(const shared_state&) = delete;

    const int done_fd; ///< eventfd: readable once the request went out (or failed)
    std::atomic<bool> done{false};
};

bool statement_cancel::start(PGconn* conn) noexcept {
    if (m_state)
        return true;
    PGcancel* cancel = PQgetCancel(conn); // a copy of what the request needs: the
    if (!cancel)                          // connection may close before the thread runs
        return false;
    const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) {
        PQfreeCancel(cancel);
        return false;
    }
    std::shared_ptr<shared_state> state;
    try {
        state = std::make_shared<shared_state>(fd);
    } catch (...) {
        ::close(fd);
        PQfreeCancel(cancel);
        return false;
    }
    try {
        std::thread([state, cancel] {
            char why[256];
            // Whether the server took it or not (the statement may have ended meanwhile), the
            // statement's result tells what happened to it.
            PQcancel(cancel, why, sizeof why);
            PQfreeCancel(cancel);
            state->done.store(true);
            const std::uint64_t one = 1;
            [[maybe_unused]] const auto written = ::write(state->done_fd, &one, sizeof one);
        }).detach();
    } catch (...) {
        PQfreeCancel(cancel); // no thread: state (and with it the eventfd) goes here
        return false;
    }
    m_state = std::move(state);
    return true;
}

bool statement_cancel::finish(io_wait::time_point deadline) noexcept {
    if (!m_state)
        return true;
    while (!m_state->done.load()) {
        try {
            if (!wait_for_fd(m_state->done_fd, io_wait::fd_event::readable, deadline) &&
                std::chrono::steady_clock::now() >= deadline)
                break;
        } catch (...) {
            break; // cannot wait on it: treat it as still on its way
        }
    }
    return m_state->done.load();
}

} // namespace sqlock::detail
