// A FIFO of lock() calls for one name on SQLite, ended by the kernel: see fair_queue.hpp.
#include "core/fair_queue.hpp"

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#ifndef F_OFD_SETLKW
// No open-file-description locks (not Linux): join() returns nullptr, so nothing below is ever
// called; these only let it compile.
#define SQLOCK_NO_OFD_LOCKS 1
#define F_OFD_GETLK F_GETLK
#define F_OFD_SETLK F_SETLK
#define F_OFD_SETLKW F_SETLKW
#endif

namespace sqlock::detail {

namespace {

constexpr off_t counter_bytes = 8;
constexpr off_t holder_byte = 8; ///< held by the queued caller that holds the lock
constexpr off_t slot_base = 4096;
/// A counter past this (a torn write after a power loss) starts again from 0: no one can be
/// queued then, the locks having gone with the machine.
constexpr std::int64_t counter_limit = std::int64_t{1} << 60;

int ofd_lock(int fd, int cmd, short type, off_t start, off_t len) noexcept {
    struct flock fl {};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = len;
    fl.l_pid = 0; // required for OFD locks
    int rc;
    do
        rc = ::fcntl(fd, cmd, &fl);
    while (rc == -1 && errno == EINTR);
    return rc;
}

} // namespace

struct fair_turn::waiter {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
};

std::unique_ptr<fair_turn> fair_turn::join(const std::string& file) noexcept {
#ifdef SQLOCK_NO_OFD_LOCKS
    (void)file;
    return nullptr; // no open-file-description locks (not Linux): poll as before
#else
    try {
        std::error_code ec;
        std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
        const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd == -1)
            return nullptr;
        auto fail = [fd] {
            ::close(fd);
            return std::unique_ptr<fair_turn>();
        };
        if (ofd_lock(fd, F_OFD_SETLKW, F_WRLCK, 0, counter_bytes) == -1)
            return fail();
        std::int64_t counter = 0;
        const auto got = ::pread(fd, &counter, sizeof counter, 0);
        if (got != static_cast<ssize_t>(sizeof counter) || counter < 0 || counter >= counter_limit)
            counter = 0;
        const std::int64_t ticket = counter + 1;
        // Own slot first, then publish the counter: a later ticket always finds it locked.
        if (ofd_lock(fd, F_OFD_SETLK, F_WRLCK, slot_base + ticket, 1) == -1 ||
            ::pwrite(fd, &ticket, sizeof ticket, 0) != static_cast<ssize_t>(sizeof ticket))
            return fail(); // closing drops both locks
        ofd_lock(fd, F_OFD_SETLK, F_UNLCK, 0, counter_bytes);
        return std::unique_ptr<fair_turn>(new fair_turn(file, fd, ticket));
    } catch (...) {
        return nullptr;
    }
#endif
}

fair_turn::~fair_turn() {
    if (m_fd != -1)
        ::close(m_fd);
}

bool fair_turn::first() noexcept {
    if (m_first)
        return true;
    if (m_waiter) {
        std::lock_guard lock(m_waiter->m);
        m_first = m_waiter->done;
        return m_first;
    }
    if (m_ticket <= 1)
        return m_first = true;
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = slot_base + 1;
    fl.l_len = m_ticket - 1;
    if (::fcntl(m_fd, F_OFD_GETLK, &fl) == -1)
        return m_first = true; // cannot tell: behave as without a queue
    m_first = fl.l_type == F_UNLCK;
    return m_first;
}

std::shared_ptr<fair_turn::waiter> fair_turn::spawn(off_t start, off_t len) noexcept {
    try {
        auto w = std::make_shared<waiter>();
        // The helper waits on its own open file description, so that a caller giving up
        // (closing its descriptor) leaves it nothing to undo but its own brief lock.
        std::thread([w, file = m_file, start, len] {
            const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
            if (fd != -1) {
                ofd_lock(fd, F_OFD_SETLKW, F_WRLCK, start, len);
                ::close(fd); // drops that lock at once
            }
            std::lock_guard lock(w->m);
            w->done = true;
            w->cv.notify_all();
        }).detach();
        return w;
    } catch (...) {
        return nullptr; // no thread: the caller behaves as without a queue
    }
}

bool fair_turn::await(const std::shared_ptr<waiter>& w,
                      std::chrono::steady_clock::time_point until) noexcept {
    std::unique_lock lock(w->m);
    w->cv.wait_until(lock, until, [&] { return w->done; });
    return w->done;
}

bool fair_turn::wait_first(std::chrono::steady_clock::time_point until) noexcept {
    if (first())
        return true;
    if (!m_waiter)
        m_waiter = spawn(slot_base + 1, m_ticket - 1);
    m_first = !m_waiter || await(m_waiter, until);
    return m_first;
}

void fair_turn::mark_holding() noexcept {
    // The holder byte first, then out of the line: the next in line finds the lock taken.
    ofd_lock(m_fd, F_OFD_SETLK, F_WRLCK, holder_byte, 1); // held by a lost holder: skip it
    ofd_lock(m_fd, F_OFD_SETLK, F_UNLCK, slot_base + m_ticket, 1);
}

void fair_turn::wait_holder_gone(std::chrono::steady_clock::time_point until) noexcept {
    if (!m_holder_waiter) {
        struct flock fl {};
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        fl.l_start = holder_byte;
        fl.l_len = 1;
        if (::fcntl(m_fd, F_OFD_GETLK, &fl) == -1 || fl.l_type == F_UNLCK) {
            // No queued holder to wait for (a try_lock() holder, an older sqlock): poll.
            std::this_thread::sleep_until(until);
            return;
        }
        m_holder_waiter = spawn(holder_byte, 1);
        if (!m_holder_waiter) {
            std::this_thread::sleep_until(until);
            return;
        }
    }
    if (await(m_holder_waiter, until))
        m_holder_waiter.reset(); // that holder is gone; the next wait looks again
}

} // namespace sqlock::detail
