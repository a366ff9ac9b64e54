// The waiter queue of one lock name on SQLite, ended by the kernel: see local_queue.hpp.
#include "backends/local_queue.hpp"

#include "base/io_wait.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <mutex>
#include <pthread.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

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

using std::chrono::steady_clock;

constexpr off_t counter_bytes = 8;
constexpr off_t holder_byte = 8;
constexpr off_t slot_base = 4096;
/// A counter past this (a torn write after a power loss) starts again from 0: no one can be
/// queued then, the locks having gone with the machine.
constexpr std::int64_t counter_limit = std::int64_t{1} << 60;
/// How long a helper thread with nothing to wait for stays for the next wait (a thread start
/// would otherwise sit on every handoff's path).
constexpr std::chrono::seconds idle_helper_keep{2};
/// How often a waiter on a fiber looks whether the range it waits for is free (it has no
/// helper thread): a handoff to it is late by up to this.
constexpr std::chrono::milliseconds fiber_look{1};

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

/// The type of a lock another open file description holds on [start, start + len) that
/// conflicts with a lock of type `as`: F_UNLCK when none, -1 when the kernel cannot tell. Asked
/// as F_RDLCK, it reports write locks only (queue positions, not helpers' brief read locks).
int conflicting(int fd, short as, off_t start, off_t len) noexcept {
    struct flock fl {};
    fl.l_type = as;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = len;
    fl.l_pid = 0;
    if (::fcntl(fd, F_OFD_GETLK, &fl) == -1)
        return -1;
    return fl.l_type;
}

struct file_key {
    std::uint64_t dev = 0;
    std::uint64_t inode = 0;
    auto operator<=>(const file_key&) const = default;
};

/// One wait in the kernel until no write lock is left on [start, start + len) of a queue file.
struct range_wait {
    enum class state { pending, freed, failed };
    std::string path;
    file_key file;
    off_t start = 0;
    off_t len = 0;
    std::mutex m;
    std::condition_variable cv;
    state outcome = state::pending; ///< guarded by m
};

/// The helper threads of this process that block in F_OFD_SETLKW for its waiters. A wait for
/// a range of a file reuses a pending wait for the same start and a range no longer than its
/// own (when that one ends, the caller looks again and, if need be, waits for the rest), so
/// abandoned waits (a caller's deadline passed while a process ahead is stopped) leave at most
/// one blocked thread per file and range start instead of one each. Threads stay idle for
/// idle_helper_keep for the next wait, then end. Never destroyed: detached threads use it up
/// to the process's exit.
class wait_threads {
public:
    static wait_threads& instance() {
        static auto* const threads = new wait_threads;
        return *threads;
    }

    /// A wait, pending or ended, that ends no later than [start, start + len) is free; nullptr
    /// when no thread could be started.
    std::shared_ptr<range_wait> wait_for(const std::string& path, file_key file, off_t start,
                                         off_t len) noexcept {
        try {
            std::unique_lock lock(m_mutex);
            std::shared_ptr<range_wait> best;
            for (auto it = m_pending.begin(); it != m_pending.end();) {
                auto& waits = it->second;
                std::erase_if(waits, [](const std::shared_ptr<range_wait>& w) {
                    std::lock_guard state(w->m);
                    return w->outcome != range_wait::state::pending;
                });
                if (waits.empty()) {
                    it = m_pending.erase(it);
                    continue;
                }
                if (it->first == file) {
                    for (const auto& w : waits)
                        if (w->start == start && w->len <= len && (!best || w->len > best->len))
                            best = w;
                }
                ++it;
            }
            if (best)
                return best;
            auto w = std::make_shared<range_wait>();
            w->path = path;
            w->file = file;
            w->start = start;
            w->len = len;
            m_jobs.push_back(w);
            const bool idle_thread = m_idle >= m_jobs.size();
            if (!idle_thread) {
                try {
                    std::thread([this] { run(); }).detach();
                } catch (...) {
                    m_jobs.pop_back();
                    return nullptr;
                }
            }
            m_pending[file].push_back(w);
            lock.unlock();
            // Outside the lock: the woken thread's first step is to take it (a handoff on
            // every wait, so an extra context switch each time would show).
            if (idle_thread)
                m_work.notify_one();
            return w;
        } catch (...) {
            return nullptr;
        }
    }

private:
    void run() noexcept {
        std::unique_lock lock(m_mutex);
        for (;;) {
            if (m_jobs.empty()) {
                ++m_idle;
                const bool work =
                    m_work.wait_for(lock, idle_helper_keep, [&] { return !m_jobs.empty(); });
                --m_idle;
                if (!work)
                    return;
            }
            const auto job = std::move(m_jobs.front());
            m_jobs.pop_front();
            lock.unlock();
            block_until_free(*job);
            lock.lock();
        }
    }

    static void block_until_free(range_wait& w) noexcept {
        auto outcome = range_wait::state::failed;
        // An open file description of its own: the caller's locks would not conflict with its
        // own wait, and closing it drops only the brief read lock below.
        const int fd = ::open(w.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd != -1) {
            struct stat st {};
            // A file replaced since the caller opened it is another queue: report failure
            // (the caller stops queueing) rather than a wait that ended on the wrong file.
            if (::fstat(fd, &st) == 0 && st.st_dev == w.file.dev && st.st_ino == w.file.inode &&
                ofd_lock(fd, F_OFD_SETLKW, F_RDLCK, w.start, w.len) == 0)
                outcome = range_wait::state::freed;
            ::close(fd);
        }
        {
            std::lock_guard lock(w.m);
            w.outcome = outcome;
        }
        w.cv.notify_all(); // after the unlock: the job (a shared_ptr) keeps w alive
    }

    std::mutex m_mutex;
    std::condition_variable m_work;
    std::deque<std::shared_ptr<range_wait>> m_jobs;                         ///< not yet taken up
    std::map<file_key, std::vector<std::shared_ptr<range_wait>>> m_pending; ///< taken or not
    std::size_t m_idle = 0; ///< threads waiting for a job
};

enum class wait_result { freed, timed_out, failed };

/// On a fiber, which must not block its thread (nor take one of a helper for each name it
/// waits on): asks the kernel through `fd` whether a write lock is left on [start, start + len)
/// every fiber_look, until none is or `until`.
wait_result poll_free(int fd, off_t start, off_t len, steady_clock::time_point until) noexcept {
    int held = F_WRLCK;
    const auto answered = [&] {
        held = conflicting(fd, F_RDLCK, start, len);
        return held == F_UNLCK || held == -1; // free, or the kernel cannot tell
    };
    if (!poll_on_fiber(answered, until, fiber_look))
        return wait_result::timed_out;
    return held == F_UNLCK ? wait_result::freed : wait_result::failed;
}

/// Waits until no write lock is left on [start, start + len) of the queue file (open as `fd`
/// by the caller, who holds no lock there), or `until`.
wait_result wait_free(const std::string& path, file_key file, int fd, off_t start, off_t len,
                      steady_clock::time_point until) noexcept {
    if (on_fiber())
        return poll_free(fd, start, len, until);
    const auto w = wait_threads::instance().wait_for(path, file, start, len);
    if (!w)
        return wait_result::failed;
    std::unique_lock lock(w->m);
    w->cv.wait_until(lock, until, [&] { return w->outcome != range_wait::state::pending; });
    switch (w->outcome) {
    case range_wait::state::freed:
        return wait_result::freed;
    case range_wait::state::failed:
        return wait_result::failed;
    case range_wait::state::pending:
        break;
    }
    return wait_result::timed_out;
}

/// Queue files this process opened and no longer uses, without locks, kept for the next call
/// on the same name: open() walks the path every time, a few microseconds on every lock().
/// At most `keep` of them, each reused only within `fresh` of being put back, so that a queue
/// file replaced meanwhile (its directory removed) is opened anew soon. A forked child drops
/// its copies (they share their open file descriptions, hence their locks, with the parent).
class spare_files {
public:
    static spare_files& instance() {
        static auto* const files = [] {
            auto* f = new spare_files;
            ::pthread_atfork([] { instance().m_mutex.lock(); }, [] { instance().m_mutex.unlock(); },
                             [] {
                                 auto& self = instance();
                                 for (const auto& e : self.m_files)
                                     ::close(e.fd);
                                 self.m_files.clear();
                                 self.m_mutex.unlock();
                             });
            return f;
        }();
        return *files;
    }

    /// A spare descriptor of `path`, or -1.
    int take(const std::string& path) noexcept {
        const auto now = steady_clock::now();
        std::lock_guard lock(m_mutex);
        for (auto it = m_files.rbegin(); it != m_files.rend(); ++it) {
            if (it->path != path)
                continue;
            const int fd = it->fd;
            const bool usable = now - it->since < fresh;
            m_files.erase(std::next(it).base());
            if (usable)
                return fd;
            ::close(fd);
            return -1;
        }
        return -1;
    }

    /// Keeps `fd` (no locks left on it) for the next take(path); closes it when that fails.
    void give(const std::string& path, int fd) noexcept {
        try {
            std::lock_guard lock(m_mutex);
            m_files.push_back({path, fd, steady_clock::now()});
            if (m_files.size() > keep) {
                ::close(m_files.front().fd);
                m_files.erase(m_files.begin());
            }
        } catch (...) {
            ::close(fd);
        }
    }

private:
    static constexpr std::size_t keep = 16;
    static constexpr std::chrono::seconds fresh{1};
    struct spare {
        std::string path;
        int fd;
        steady_clock::time_point since;
    };
    std::mutex m_mutex;
    std::vector<spare> m_files; ///< the most recently given back last
};

} // namespace

std::unique_ptr<fair_turn> fair_turn::open(const std::string& file) noexcept {
#ifdef SQLOCK_NO_OFD_LOCKS
    (void)file;
    return nullptr; // no open-file-description locks (not Linux): poll as before
#else
    try {
        int fd = spare_files::instance().take(file);
        if (fd == -1)
            fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd == -1 && errno == ENOENT) {
            // The directory is missing (the first queue of this database): create it then,
            // rather than stat it on every lock().
            std::error_code ec;
            std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
            fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        }
        if (fd == -1)
            return nullptr;
        try {
            return std::unique_ptr<fair_turn>(new fair_turn(file, fd));
        } catch (...) {
            ::close(fd);
            return nullptr;
        }
    } catch (...) {
        return nullptr;
    }
#endif
}

std::vector<std::int64_t> tickets_in_line(const std::string& file) noexcept {
    std::vector<std::int64_t> tickets;
#ifndef SQLOCK_NO_OFD_LOCKS
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd == -1)
        return tickets;
    // F_OFD_GETLK reports the first conflicting lock of a range: step past each one found.
    // Asked as a read lock, it sees write locks only (the tickets' bytes, not helpers' waits).
    off_t from = slot_base + 1;
    for (int guard = 0; guard < 100000; ++guard) {
        struct flock fl {};
        fl.l_type = F_RDLCK;
        fl.l_whence = SEEK_SET;
        fl.l_start = from;
        fl.l_len = 0; // to the end of the file and beyond
        if (::fcntl(fd, F_OFD_GETLK, &fl) == -1 || fl.l_type == F_UNLCK)
            break;
        const off_t start = std::max(fl.l_start, from);
        const off_t end = fl.l_len == 0 ? start + 1 : fl.l_start + fl.l_len;
        try {
            for (off_t b = start; b < end; ++b)
                tickets.push_back(static_cast<std::int64_t>(b - slot_base));
        } catch (...) {
            break;
        }
        from = end;
    }
    ::close(fd);
#else
    (void)file;
#endif
    return tickets;
}

bool someone_in_line(const std::string& file) noexcept {
    const auto turn = fair_turn::open(file);
    return turn && !turn->idle();
}

bool fair_turn::idle() noexcept {
    return m_ticket == 0 && conflicting(m_fd, F_WRLCK, 0, 0) == F_UNLCK;
}

bool fair_turn::join(steady_clock::time_point until) noexcept {
    if (m_ticket != 0)
        return true;
    struct stat st {};
    if (::fstat(m_fd, &st) == -1)
        return false;
    m_dev = static_cast<std::uint64_t>(st.st_dev);
    m_inode = static_cast<std::uint64_t>(st.st_ino);
    // The counter, with a deadline: try, and while another holds it wait in the kernel for it
    // to go (then try again: another joiner may have been quicker).
    while (ofd_lock(m_fd, F_OFD_SETLK, F_WRLCK, 0, counter_bytes) == -1) {
        if ((errno != EAGAIN && errno != EACCES) ||
            wait_free(m_file, {m_dev, m_inode}, m_fd, 0, counter_bytes, until) !=
                wait_result::freed)
            return false;
    }
    std::int64_t counter = 0;
    const auto got = ::pread(m_fd, &counter, sizeof counter, 0);
    if (got != static_cast<ssize_t>(sizeof counter) || counter < 0 || counter >= counter_limit)
        counter = 0;
    // Nobody in line (no ticket's byte locked): take the last ticket's number again and leave
    // the counter as it is. Safe: every earlier ticket is gone, and a later joiner reads the
    // same counter and takes the next number, behind this one. Why: a write changes the file's
    // mtime, and that dirty inode (in the same inode table block as the database's, as often
    // as not) made the next commit's fdatasync write it too: ~45 us more per lock() here.
    const bool alone = counter >= 1 && conflicting(m_fd, F_RDLCK, slot_base + 1, 0) == F_UNLCK;
    const std::int64_t ticket = alone ? counter : counter + 1;
    // Own slot first, then publish the counter: a later ticket always finds it locked.
    const bool ok =
        ofd_lock(m_fd, F_OFD_SETLK, F_WRLCK, slot_base + ticket, 1) == 0 &&
        (alone || ::pwrite(m_fd, &ticket, sizeof ticket, 0) == static_cast<ssize_t>(sizeof ticket));
    if (!ok) {
        ofd_lock(m_fd, F_OFD_SETLK, F_UNLCK, 0, 0); // no half-taken ticket left behind
        return false;
    }
    ofd_lock(m_fd, F_OFD_SETLK, F_UNLCK, 0, counter_bytes);
    m_ticket = ticket;
    m_first = alone;
    return true;
}

fair_turn::~fair_turn() {
    // Drops this ticket's locks (the next in line goes ahead) and keeps the descriptor.
    if (ofd_lock(m_fd, F_OFD_SETLK, F_UNLCK, 0, 0) == 0)
        spare_files::instance().give(m_file, m_fd);
    else
        ::close(m_fd);
}

bool fair_turn::first() noexcept {
    if (m_first || m_ticket <= 1)
        return m_first = true;
    const int held = conflicting(m_fd, F_RDLCK, slot_base + 1, m_ticket - 1);
    m_first = held != F_WRLCK; // -1: cannot tell, behave as without a queue
    return m_first;
}

bool fair_turn::wait_first(steady_clock::time_point until) noexcept {
    // Each round blocks in the kernel; it ends early only when a range became free, after
    // which first() looks at the whole range again (a shared wait may cover only part of it).
    while (!first()) {
        switch (wait_free(m_file, {m_dev, m_inode}, m_fd, slot_base + 1, m_ticket - 1, until)) {
        case wait_result::freed:
            continue;
        case wait_result::timed_out:
            return false;
        case wait_result::failed:
            return m_first = true; // no wait in the kernel possible: behave as without a queue
        }
    }
    return true;
}

void fair_turn::mark_holding() noexcept {
    // The holder byte first, then out of the line: the next in line finds the lock taken.
    // A read lock on it is a helper's (someone's wait for the previous holder, ending): it goes
    // within microseconds, so try again briefly. A write lock is a holder whose hold was lost
    // and not yet unlocked: not worth waiting for; without the byte, the next in line polls.
    const auto give_up = steady_clock::now() + std::chrono::milliseconds(1);
    while (ofd_lock(m_fd, F_OFD_SETLK, F_WRLCK, holder_byte, 1) == -1 &&
           conflicting(m_fd, F_WRLCK, holder_byte, 1) == F_RDLCK && steady_clock::now() < give_up)
        std::this_thread::yield();
    if (m_ticket != 0)
        ofd_lock(m_fd, F_OFD_SETLK, F_UNLCK, slot_base + m_ticket, 1);
}

bool fair_turn::try_hold() noexcept {
    const auto give_up = steady_clock::now() + std::chrono::milliseconds(1);
    for (;;) {
        if (ofd_lock(m_fd, F_OFD_SETLK, F_WRLCK, holder_byte, 1) == 0)
            return true;
        // A read lock is a helper's wait for the previous holder, gone within microseconds.
        if (conflicting(m_fd, F_WRLCK, holder_byte, 1) != F_RDLCK || steady_clock::now() >= give_up)
            return false;
        std::this_thread::yield();
    }
}

bool fair_turn::holder_present() noexcept {
    return conflicting(m_fd, F_RDLCK, holder_byte, 1) == F_WRLCK;
}

void fair_turn::wait_holder_gone(steady_clock::time_point until) noexcept {
    if (!holder_present() ||
        wait_free(m_file, {m_dev, m_inode}, m_fd, holder_byte, 1, until) == wait_result::failed)
        // No queued holder to wait for (a try_lock() holder, an older sqlock), or no helper:
        // the caller's backoff pause, as when polling.
        pause_until(until);
}

} // namespace sqlock::detail
