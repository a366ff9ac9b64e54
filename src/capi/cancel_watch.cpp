// The cancel watcher (cancel_watch.hpp): a pipe written from sqlock_cancel_request() (also in a
// signal handler) and the thread that turns its bytes into stop requests.
#include "capi/cancel_watch.hpp"

#include <cerrno>
#include <fcntl.h>
#include <set>
#include <signal.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace sqlock::capi {

namespace {

/// The write end of the watcher's pipe; -1 until the first token starts the watcher.
std::atomic<int> g_wake_fd{-1};

struct watcher;
watcher& the_watcher();

struct watcher {
    std::mutex mutex; // guards what follows
    std::set<sqlock_cancel*> tokens;
    int read_fd = -1;
    pid_t pid = 0; ///< the process whose thread reads read_fd (a forked child starts its own)

    /// Never destroyed (tokens may be freed by threads running at exit). A fork() holds the
    /// registry's lock, so that the child's copy is consistent.
    watcher() {
        ::pthread_atfork([] { the_watcher().mutex.lock(); }, [] { the_watcher().mutex.unlock(); },
                         [] { the_watcher().mutex.unlock(); });
    }

    /// Under `mutex`: starts the pipe and the thread unless this process has them (a forked
    /// child has its parent's pipe, not its thread: it makes its own). Throws
    /// std::system_error.
    void ensure_running() {
        if (pid == ::getpid())
            return;
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0)
            throw std::system_error(errno, std::generic_category(), "sqlock cancel watcher pipe");
        ::fcntl(fds[1], F_SETFL, O_NONBLOCK); // a full pipe already wakes the watcher
        try {
            std::thread([this, fd = fds[0]] { run(fd); }).detach();
        } catch (...) {
            ::close(fds[0]);
            ::close(fds[1]);
            throw;
        }
        const int old_read = read_fd, old_write = g_wake_fd.exchange(fds[1]);
        read_fd = fds[0];
        pid = ::getpid();
        if (old_read >= 0) { // the parent's pipe, in a child
            ::close(old_read);
            ::close(old_write);
        }
    }

    /// Reads wake-ups until the process ends; after each, requests the stop of every token
    /// whose flag is set (outside the registry's lock: request_stop runs the waits' callbacks).
    void run(int fd) noexcept {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, nullptr); // signals go to the application's threads
        char buffer[64];
        for (;;) {
            const auto n = ::read(fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return;
            for (auto& source : requested_sources())
                source.request_stop();
        }
    }

    std::vector<std::stop_source> requested_sources() noexcept {
        std::vector<std::stop_source> out;
        std::lock_guard lock(mutex);
        for (auto* t : tokens) {
            std::lock_guard token_lock(t->mutex);
            if (t->requested.load(std::memory_order_acquire) && !t->source.stop_requested()) {
                try {
                    out.push_back(t->source);
                } catch (...) {
                    // no memory: the waits notice the flag at their end (see wait_for_grant)
                }
            }
        }
        return out;
    }
};

watcher& the_watcher() {
    static auto* w = new watcher;
    return *w;
}

} // namespace

void watch(sqlock_cancel& cancel) {
    auto& w = the_watcher();
    std::lock_guard lock(w.mutex);
    w.ensure_running();
    w.tokens.insert(&cancel);
}

void ensure_watcher() {
    auto& w = the_watcher();
    std::lock_guard lock(w.mutex);
    w.ensure_running();
}

void unwatch(sqlock_cancel& cancel) noexcept {
    auto& w = the_watcher(); // exists: watch() made it
    std::lock_guard lock(w.mutex);
    w.tokens.erase(&cancel);
}

void wake_watcher() noexcept {
    const int fd = g_wake_fd.load(std::memory_order_acquire);
    if (fd < 0)
        return;
    const int saved = errno;
    const char byte = 1;
    [[maybe_unused]] const auto n = ::write(fd, &byte, 1); // EAGAIN: a wake-up is pending anyway
    errno = saved;
}

std::stop_token stop_token_of(sqlock_cancel& cancel) noexcept {
    std::lock_guard lock(cancel.mutex);
    return cancel.source.get_token();
}

void reset(sqlock_cancel& cancel) {
    std::lock_guard lock(cancel.mutex);
    const bool was_requested = cancel.requested.exchange(false, std::memory_order_acq_rel);
    // The watcher may hold a copy of this generation's source already (taken while the flag was
    // set) and request its stop after this reset: a generation that saw a request is never
    // used again, whether the watcher got to it yet or not.
    if (was_requested || cancel.source.stop_requested())
        cancel.source = std::stop_source();
}

} // namespace sqlock::capi
