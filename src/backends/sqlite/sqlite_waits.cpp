// The SQLite backend's waits for other writers: see sqlite_waits.hpp.
#include "backends/sqlite/sqlite_waits.hpp"

#include "base/io_wait.hpp"
#include "sqlock/error.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <sqlite3.h>
#include <sys/eventfd.h>
#include <system_error>
#include <unistd.h>

namespace sqlock::detail {

namespace {

using clock = std::chrono::steady_clock;

/// The pause before try `count` + 1: short at first (most writers are done within a
/// millisecond or two), then at most 50 ms, so that a long wait costs few wakeups.
clock::duration busy_pause(int count) noexcept {
    return std::chrono::milliseconds(std::min(1 << std::min(count, 6), 50));
}

/// A wait for the turn that could not be made (no eventfd, the executor refused the wait): an
/// error of the backend, so that a release meeting it keeps its lease for the next lock() to
/// give back, as for any failed release statement (nothing ran).
[[noreturn]] void turn_wait_failed(const std::string& path, const std::string& why) {
    throw error(errc::backend,
                "sqlite: cannot wait for this process's turn on " + path + ": " + why +
                    " (no statement ran)",
                "sqlite");
}

} // namespace

busy_wait::busy_wait(sqlite3* db, int ms) noexcept : m_limit_ms(ms) {
    sqlite3_busy_handler(db, &busy_wait::on_busy, this);
}

int busy_wait::on_busy(void* self_ptr, int count) noexcept {
    auto& self = *static_cast<busy_wait*>(self_ptr);
    if (self.m_limit_ms <= 0)
        return 0;
    const auto now = clock::now();
    if (count == 0)
        self.m_began = now;
    const auto end = self.m_limit_ms == forever
                         ? clock::time_point::max()
                         : self.m_began + std::chrono::milliseconds(self.m_limit_ms);
    if (now >= end)
        return 0;
    // False when a fiber's waiter was stopped: the statement fails as busy, and the cancelled
    // acquire ends (an acquire's statement changes nothing when it fails).
    return pause_until(std::min(end, now + busy_pause(count))) ? 1 : 0;
}

std::shared_ptr<turn_gate> turn_gate::of(const std::string& path) {
    static std::mutex registry_mutex;
    static std::map<std::string, std::weak_ptr<turn_gate>> registry;
    std::error_code ec;
    auto key = std::filesystem::weakly_canonical(path, ec).string();
    if (ec)
        key = path;
    std::lock_guard lock(registry_mutex);
    auto& slot = registry[key];
    auto gate = slot.lock();
    if (!gate) {
        gate = std::make_shared<turn_gate>(key);
        slot = gate;
    }
    return gate;
}

void turn_gate::enter() {
    std::unique_lock lock(m_mutex);
    if (!m_taken) {
        m_taken = true;
        return;
    }
    waiter me;
    if (!on_fiber()) {
        m_line.push_back(&me);
        m_granted.wait(lock, [&] { return me.granted; });
        return;
    }
    me.fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (me.fd < 0)
        turn_wait_failed(m_path, "eventfd: " + std::generic_category().message(errno));
    m_line.push_back(&me);
    struct closer {
        int fd;
        ~closer() { ::close(fd); }
    } close_fd{me.fd}; // on every way out, the line no longer names `me` by then
    wait_on_fiber(lock, me);
}

void turn_gate::wait_on_fiber(std::unique_lock<std::mutex>& lock, waiter& me) {
    for (;;) {
        lock.unlock();
        io_wait::outcome how = io_wait::outcome::stopped;
        std::optional<std::string> failure;
        try {
            how = current_io_wait()->wait_fd(me.fd, io_wait::fd_event::readable,
                                             clock::time_point::max(), true);
        } catch (const std::exception& e) {
            failure = e.what();
        } catch (...) {
            failure = "unknown failure";
        }
        lock.lock();
        if (me.granted)
            return; // ours, whatever ended the wait
        if (how == io_wait::outcome::ready && !failure)
            continue; // not written yet: look again
        std::erase(m_line, &me);
        if (failure)
            turn_wait_failed(m_path, *failure);
        throw error(errc::timeout,
                    "sqlite: stopped while waiting for this process's turn on " + m_path +
                        " (the acquire was cancelled; no statement ran)",
                    "sqlite");
    }
}

void turn_gate::leave() noexcept {
    std::lock_guard lock(m_mutex);
    if (m_line.empty()) {
        m_taken = false;
        return;
    }
    waiter* next = m_line.front();
    m_line.pop_front();
    next->granted = true; // the turn passes on: m_taken stays true
    if (next->fd < 0) {
        m_granted.notify_all();
        return;
    }
    const std::uint64_t one = 1;
    // An eventfd's counter cannot overflow from one write; the waiter also sees `granted`.
    [[maybe_unused]] const auto written = ::write(next->fd, &one, sizeof one);
}

} // namespace sqlock::detail
