// The job of `sqlock run` (see job_group.hpp). Three processes:
//   sqlock  holds the lock and renews it; tells the group to stop when the lock is lost;
//   guard   forked from sqlock (so it holds the same descriptors), vforks the job, reaps it,
//           and reports to sqlock over a socket pair; when that socket closes without a word
//           (sqlock died), it kills the job's group and waits for it before it exits;
//   job     the command, leader of a process group of its own.
// The guard runs between fork and _exit in a copy of a multi-threaded process: only
// async-signal-safe calls there (no allocation, no locks, no stdio).
#include "job_group.hpp"

#include "wakeup_pipe.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <iostream>
#include <optional>
#include <poll.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

namespace sqlock::cli {

namespace {

volatile sig_atomic_t g_job_pgid = 0; ///< the job's group, once the guard has said it
volatile sig_atomic_t g_link = -1;    ///< sqlock's end of the link to the guard, meanwhile
int g_guard_chld_pipe[2] = {-1, -1};  ///< in the guard: SIGCHLD and signals wake its wait

/// The signals sqlock passes on to the job, through the guard.
constexpr std::array forwarded{SIGINT, SIGTERM, SIGHUP};
/// In the guard: when it last received each of them itself (CLOCK_MONOTONIC, ns; 0: never),
/// and how many times.
volatile sig_atomic_t g_guard_got_s[forwarded.size()] = {};
volatile sig_atomic_t g_guard_got_ns[forwarded.size()] = {};
volatile sig_atomic_t g_guard_got_count[forwarded.size()] = {};
/// A signal sent to sqlock is passed on unless the guard got a copy of its own: then it was
/// sent to every process of the service (systemd's control-group kill, a kill of several
/// pids), and the job has its own copy too. Each copy of the guard's answers for one request,
/// if it came at most `same_signal_before_ms` before the request reached the guard (sqlock
/// may be slow to pass it on) or at most `same_signal_after_ms` after it (the guard is waited
/// for that long before the signal is passed on).
constexpr long same_signal_before_ms = 2000;
constexpr long same_signal_after_ms = 100;

/// The signals the guard ignores (only SIGKILL ends it) and whose disposition the job gets
/// back as sqlock found it.
constexpr std::array guard_ignored{SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGTSTP, SIGTTIN,
                                   SIGTTOU, SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM};

void write_byte(int fd, char c) noexcept {
    [[maybe_unused]] const auto n = write(fd, &c, 1);
}

long monotonic_ms() noexcept {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000 + now.tv_nsec / 1'000'000;
}

/// sqlock's handler: asks the guard to pass the signal on ("F<signal>"; see run_guard).
void forward_to_job(int sig) {
    const int saved = errno;
    if (g_link >= 0) { // the guard passes it on once the job exists
        char line[8] = {'F', static_cast<char>('0' + sig / 10), static_cast<char>('0' + sig % 10),
                        '\n'};
        // send(MSG_NOSIGNAL): a guard that died must not cost sqlock a SIGPIPE.
        [[maybe_unused]] const auto n = send(g_link, line, 4, MSG_NOSIGNAL);
    }
    errno = saved;
}

/// The guard's handler for the forwarded signals: notes when it got one, wakes its wait.
void guard_note_signal(int sig) {
    const int saved = errno;
    for (std::size_t i = 0; i < forwarded.size(); ++i)
        if (forwarded[i] == sig) {
            timespec now{};
            clock_gettime(CLOCK_MONOTONIC, &now);
            g_guard_got_s[i] = static_cast<sig_atomic_t>(now.tv_sec);
            g_guard_got_ns[i] = static_cast<sig_atomic_t>(now.tv_nsec);
            g_guard_got_count[i] = g_guard_got_count[i] + 1;
        }
    write_byte(g_guard_chld_pipe[1], 's');
    errno = saved;
}

/// When the guard last got `sig` itself (ms, CLOCK_MONOTONIC), or -1.
long guard_got_ms(int sig) noexcept {
    for (std::size_t i = 0; i < forwarded.size(); ++i)
        if (forwarded[i] == sig && (g_guard_got_s[i] != 0 || g_guard_got_ns[i] != 0))
            return static_cast<long>(g_guard_got_s[i]) * 1000 + g_guard_got_ns[i] / 1'000'000;
    return -1;
}

void wake_on_sigchld(int) {
    wake_job_supervisor('c');
}

void guard_wake_on_sigchld(int) {
    const int saved = errno;
    write_byte(g_guard_chld_pipe[1], 'c');
    errno = saved;
}

// ------------------------------------------------------------------ async-signal-safe helpers

/// Appends the decimal digits of `v` (>= 0) at `out`; returns the end.
char* put_number(char* out, long v) noexcept {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (n > 0)
        *out++ = digits[--n];
    return out;
}

/// Sends "<tag><number>\n" over the link.
void send_message(int link, char tag, long value) noexcept {
    char line[32];
    char* end = line;
    *end++ = tag;
    end = put_number(end, value);
    *end++ = '\n';
    [[maybe_unused]] const auto n = write(link, line, static_cast<std::size_t>(end - line));
}

/// True if a process other than a zombie is left in process group `pgid`. kill(-pgid, 0)
/// answers for the usual case (nobody left) without reading /proc; zombies (exited, not yet
/// reaped) count for kill but not here.
bool group_has_live_members(pid_t pgid) noexcept {
    if (kill(-pgid, 0) != 0)
        return errno == EPERM; // ESRCH: nobody left
    const int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return true; // cannot tell: assume a live one
    alignas(8) char buf[4096];
    bool live = false;
    long n = 0;
    while (!live && (n = getdents64(dir, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n && !live;) {
            const auto* d = reinterpret_cast<const dirent64*>(buf + off);
            off += d->d_reclen;
            if (d->d_name[0] < '1' || d->d_name[0] > '9')
                continue;
            char path[64] = "/proc/";
            std::size_t len = 6;
            for (const char* p = d->d_name; *p && len < 40; ++p)
                path[len++] = *p;
            std::memcpy(path + len, "/stat", 6);
            const int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                continue;
            char stat[512];
            const auto got = read(fd, stat, sizeof stat - 1);
            close(fd);
            if (got <= 0)
                continue;
            stat[got] = '\0';
            // "pid (comm) S ppid pgrp ...": comm may hold anything, so parse after the last ')'.
            const char* p = std::strrchr(stat, ')');
            if (p == nullptr || p[1] == '\0' || p[2] == '\0')
                continue;
            const char state = p[2];
            p += 3;
            long fields[2] = {0, 0}; // ppid, pgrp
            for (auto& field : fields) {
                while (*p == ' ')
                    ++p;
                while (*p >= '0' && *p <= '9')
                    field = field * 10 + (*p++ - '0');
            }
            live = fields[1] == pgid && state != 'Z' && state != 'X';
        }
    }
    close(dir);
    return live;
}

/// SIGKILLs process group `pgid` until no live process is left in it, reaping the children
/// and orphans this process has (it is a subreaper). Async-signal-safe.
void kill_group_and_wait(pid_t pgid) noexcept {
    while (group_has_live_members(pgid)) {
        kill(-pgid, SIGKILL);
        while (waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        const timespec pause{0, 2'000'000};
        nanosleep(&pause, nullptr);
    }
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
}

/// What the job needs, prepared before the fork (nothing may be allocated after it).
struct job_spec {
    const char* path = nullptr; ///< argv[0] resolved in PATH
    char* const* argv = nullptr;
    char* const* envp = nullptr;
    int tty = -1; ///< the terminal to hand to the job, or -1
    std::array<struct sigaction, guard_ignored.size()> dispositions{}; ///< as sqlock found them
    sigset_t mask{};              ///< sqlock's signal mask as found
    const char* exec_failed = ""; ///< "sqlock: cannot run <cmd>\n"
    std::size_t exec_failed_len = 0;
};

/// In the job's process, between the guard's vfork and exec: the guard is suspended meanwhile
/// and every signal is blocked (the guard's handlers must not run here, on its memory). The
/// job tells sqlock its group ("J<pgid>" on `link`) itself before it runs the command, so
/// sqlock can stop the command from its first instruction on, even if the guard dies.
[[noreturn]] void become_job(const job_spec& spec, int link) noexcept {
    setpgid(0, 0);
    if (spec.tty >= 0)
        tcsetpgrp(spec.tty, getpid()); // SIGTTOU is blocked here: allowed from the background
    send_message(link, 'J', getpid());
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD})
        sigaction(sig, &dfl, nullptr);
    for (std::size_t i = 0; i < guard_ignored.size(); ++i) {
        const int sig = guard_ignored[i];
        if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP)
            sigaction(sig, &spec.dispositions[i], nullptr);
    }
    sigprocmask(SIG_SETMASK, &spec.mask, nullptr);
    execve(spec.path, spec.argv, spec.envp);
    const int why = errno;
    [[maybe_unused]] const auto n = write(STDERR_FILENO, spec.exec_failed, spec.exec_failed_len);
    _exit(why == ENOENT ? 127 : 126);
}

/// The signals sqlock asked the guard to pass on to the job, each waiting (at most
/// same_signal_after_ms) to see whether the guard gets the same signal itself.
class pending_forwards {
public:
    /// sqlock got `sig` and asks to pass it on.
    void request(int sig) noexcept {
        const long now = monotonic_ms();
        for (std::size_t i = 0; i < forwarded.size(); ++i)
            if (forwarded[i] == sig && m_requested[i] < 0)
                m_requested[i] = now;
    }
    /// Passes on each request whose window ended without the guard's own copy, drops those
    /// the guard got itself. Returns ms until the next window ends, or -1 when none is open.
    int pass_on_due(pid_t job) noexcept {
        const long now = monotonic_ms();
        long next = -1;
        for (std::size_t i = 0; i < forwarded.size(); ++i) {
            if (m_requested[i] < 0)
                continue;
            const long got = guard_got_ms(forwarded[i]);
            const long count = g_guard_got_count[i];
            if (count > m_answered[i] && got >= m_requested[i] - same_signal_before_ms) {
                m_answered[i] = count; // sent to the guard too, so to the job as well
                m_requested[i] = -1;
            } else if (now >= m_requested[i] + same_signal_after_ms) {
                m_answered[i] = count; // older copies of the guard's answer for nothing now
                kill(-job, forwarded[i]);
                m_requested[i] = -1;
            } else {
                const long left = m_requested[i] + same_signal_after_ms - now;
                next = next < 0 ? left : std::min(next, left);
            }
        }
        return static_cast<int>(next);
    }

private:
    long m_requested[forwarded.size()] = {-1, -1, -1};
    long m_answered[forwarded.size()] = {0, 0, 0}; ///< the guard's copies used up so far
};

/// Reads sqlock's messages to the guard ("F<signal>\n": pass it on) without allocating.
class link_reader {
public:
    /// Reads what is there; false when the link is closed (sqlock is gone).
    bool read(int link, pending_forwards& forwards) noexcept {
        const auto n = ::read(link, m_buf + m_len, sizeof m_buf - m_len);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            return false;
        if (n > 0)
            m_len += static_cast<std::size_t>(n);
        std::size_t start = 0;
        for (std::size_t i = 0; i < m_len; ++i) {
            if (m_buf[i] != '\n')
                continue;
            if (m_buf[start] == 'F' && i - start == 3)
                forwards.request((m_buf[start + 1] - '0') * 10 + (m_buf[start + 2] - '0'));
            start = i + 1;
        }
        std::memmove(m_buf, m_buf + start, m_len - start);
        m_len -= start;
        if (m_len == sizeof m_buf)
            m_len = 0; // no line this long is ours: drop it
        return true;
    }

private:
    char m_buf[64] = {};
    std::size_t m_len = 0;
};

/// One wait of the guard's loop: until a child changed state (SIGCHLD), sqlock wrote on the
/// link, a forwarded signal is due, or a timeout. False when sqlock's end of the link closed
/// (sqlock is gone). Async-signal-safe, as everything in the guard.
bool guard_wait(int link, pid_t job, bool command_done, pending_forwards& forwards,
                link_reader& from_sqlock) noexcept {
    pollfd fds[2] = {{link, POLLIN, 0}, {g_guard_chld_pipe[0], POLLIN, 0}};
    // Waiting for the rest of the group after the command: look again every 20 ms. Never
    // longer than a second, so that a SIGCHLD whose handler did not run costs at most that
    // (ThreadSanitizer defers signals in this fork of a multi-threaded process: a guard
    // that relied on the handler alone slept forever beside its reaped job's zombie).
    const int forward_in = forwards.pass_on_due(job);
    int timeout = command_done && (forward_in < 0 || forward_in > 20) ? 20 : forward_in;
    if (timeout < 0 || timeout > 1000)
        timeout = 1000;
    poll(fds, 2, timeout);
    char drain[64];
    while (read(g_guard_chld_pipe[0], drain, sizeof drain) > 0) {
    }
    return fds[0].revents == 0 || from_sqlock.read(link, forwards);
}

/// The guard: forks the job, reports "J<pgid>", "S0" (stopped) and "E<status>" (the command
/// exited and its group is empty) to sqlock, and when the link closes first, kills the group.
[[noreturn]] void run_guard(int link, const job_spec& spec) noexcept {
    setpgid(0, 0); // neither in sqlock's group nor in the job's: a kill of either spares it
    prctl(PR_SET_CHILD_SUBREAPER, 1); // the job's orphans come here, to be reaped
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    for (const int sig : guard_ignored)
        sigaction(sig, &ign, nullptr);
    struct sigaction note {};
    note.sa_handler = guard_note_signal;
    sigemptyset(&note.sa_mask);
    note.sa_flags = SA_RESTART;
    for (const int sig : forwarded)
        sigaction(sig, &note, nullptr);
    struct sigaction chld {};
    chld.sa_handler = guard_wake_on_sigchld;
    sigemptyset(&chld.sa_mask);
    chld.sa_flags = SA_RESTART;
    if (pipe2(g_guard_chld_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        _exit(70);
    sigaction(SIGCHLD, &chld, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);

    // vfork: the job starts without a copy of the guard's page tables (a fork of sqlock),
    // which made up a good part of what `sqlock run -- true` costs over flock(1).
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    const pid_t job = vfork();
    if (job == 0)
        become_job(spec, link);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (job < 0) {
        send_message(link, 'E', W_EXITCODE(126, 0));
        _exit(0);
    }

    std::optional<int> status;
    int zombie_looks = 0;
    pending_forwards forwards;
    link_reader from_sqlock;
    for (;;) {
        int raw = 0;
        pid_t done = 0;
        while ((done = waitpid(-1, &raw, WNOHANG | WUNTRACED)) > 0) {
            if (done != job)
                continue; // an orphan of the job, reaped
            if (WIFSTOPPED(raw))
                send_message(link, 'S', 0);
            else
                status = raw;
        }
        // Done once nobody of the group is left, zombies included: they come here to be reaped
        // (a subreaper), each with a SIGCHLD. A zombie whose parent left the group is not ours
        // to reap: after a second of only such, done all the same.
        if (status && !group_has_live_members(job) &&
            ((kill(-job, 0) != 0 && errno == ESRCH) || ++zombie_looks > 50)) {
            send_message(link, 'E', *status);
            _exit(0);
        }
        if (!guard_wait(link, job, status.has_value(), forwards, from_sqlock)) {
            // Closed: sqlock is gone.
            kill_group_and_wait(job);
            _exit(0);
        }
    }
}

// ------------------------------------------------------------------ sqlock's side

/// argv[0] as execvp would find it; nullopt with errno set when it cannot.
std::optional<std::string> resolve_command(const std::string& name) {
    if (name.empty()) {
        errno = ENOENT;
        return std::nullopt;
    }
    if (name.find('/') != std::string::npos)
        return name;
    const char* path = std::getenv("PATH");
    const std::string dirs =
        path != nullptr && *path != '\0' ? path : "/usr/local/bin:/usr/bin:/bin";
    int error = ENOENT;
    std::size_t start = 0;
    for (;;) {
        const auto end = dirs.find(':', start);
        std::string dir = dirs.substr(start, end == std::string::npos ? end : end - start);
        const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        struct stat st {};
        if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(candidate.c_str(), X_OK) == 0)
                return candidate;
            error = EACCES;
        }
        if (end == std::string::npos)
            break;
        start = end + 1;
    }
    errno = error;
    return std::nullopt;
}

/// The terminal sqlock may hand to the job: stdin, when it is a terminal whose foreground
/// group is sqlock's own.
int own_terminal() {
    if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp())
        return STDIN_FILENO;
    return -1;
}

/// Gives the terminal to `pgid` (from the background: SIGTTOU blocked meanwhile).
void hand_terminal(int tty, pid_t pgid) {
    if (tty < 0)
        return;
    sigset_t ttou;
    sigset_t old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &old);
    tcsetpgrp(tty, pgid);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

/// The job stopped from the terminal (Ctrl-Z): sqlock takes the terminal back and stops too,
/// as a shell's job would; when continued, the job is continued (in the foreground again if
/// sqlock is).
void stop_with_job(int tty, pid_t pgid) {
    hand_terminal(tty, getpgrp());
    raise(SIGTSTP);
    if (tty >= 0 && tcgetpgrp(tty) == getpgrp())
        hand_terminal(tty, pgid);
    kill(-pgid, SIGCONT);
}

void install_handlers() {
    struct sigaction forward {};
    forward.sa_handler = forward_to_job;
    sigemptyset(&forward.sa_mask);
    for (const int sig : forwarded)
        sigaction(sig, &forward, nullptr);
    struct sigaction chld {};
    chld.sa_handler = wake_on_sigchld;
    sigemptyset(&chld.sa_mask);
    chld.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &chld, nullptr);
}

/// Reads the guard's messages (all of them, also when the link closed after them); returns
/// false when the link is closed.
bool read_messages(int link, std::string& pending, std::vector<std::pair<char, long>>& out) {
    char buf[256];
    bool open = true;
    for (;;) {
        const auto n = read(link, buf, sizeof buf);
        if (n > 0) {
            pending.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        open = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        break;
    }
    std::size_t eol = 0;
    while ((eol = pending.find('\n')) != std::string::npos) {
        if (eol > 0)
            out.emplace_back(pending[0], std::strtol(pending.c_str() + 1, nullptr, 10));
        pending.erase(0, eol + 1);
    }
    return open;
}

/// The argv, environment and messages of a job, kept alive while the guard and the job use
/// them (they may not allocate after the fork).
class prepared_job {
public:
    prepared_job(const std::vector<std::string>& exec, const std::vector<std::string>& env,
                 const std::string& path)
        : m_path(path), m_exec_failed("sqlock: cannot run " + exec.at(0) + "\n") {
        for (const auto& a : exec)
            m_argv.push_back(const_cast<char*>(a.c_str()));
        m_argv.push_back(nullptr);
        for (const auto& e : env)
            m_envp.push_back(const_cast<char*>(e.c_str()));
        m_envp.push_back(nullptr);
        m_spec.path = m_path.c_str();
        m_spec.argv = m_argv.data();
        m_spec.envp = m_envp.data();
        m_spec.tty = own_terminal();
        for (std::size_t i = 0; i < guard_ignored.size(); ++i)
            sigaction(guard_ignored[i], nullptr, &m_spec.dispositions[i]);
        pthread_sigmask(SIG_SETMASK, nullptr, &m_spec.mask);
        m_spec.exec_failed = m_exec_failed.c_str();
        m_spec.exec_failed_len = m_exec_failed.size();
    }
    const job_spec& spec() const { return m_spec; }

private:
    std::string m_path;
    std::string m_exec_failed;
    std::vector<char*> m_argv;
    std::vector<char*> m_envp;
    job_spec m_spec;
};

/// Forks the guard (which forks the job); returns its pid and sqlock's end of the link, or
/// -1 with `failure` set.
pid_t start_guard(const job_spec& spec, int& link_out, std::string& failure) {
    int link[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, link) != 0) {
        failure = std::string("socketpair: ") + std::strerror(errno);
        return -1;
    }
    // If the guard dies, the job's processes come to sqlock, which then reaps them.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    install_handlers();
    // From here a signal to sqlock goes to the guard, which may start the job before fork()
    // returns here. Blocked across the fork: the guard must not run sqlock's handler (it
    // installs its own, then unblocks); sqlock gets what came meanwhile after the fork.
    fcntl(link[0], F_SETFL, O_NONBLOCK);
    g_link = link[0];
    sigset_t all;
    sigset_t old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const pid_t guard = fork();
    if (guard == 0) {
        g_link = -1;
        close(link[0]);
        run_guard(link[1], spec);
    }
    const int fork_error = errno;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    close(link[1]);
    if (guard < 0) {
        g_link = -1;
        close(link[0]);
        failure = std::string("fork: ") + std::strerror(fork_error);
        return -1;
    }
    link_out = link[0];
    return guard;
}

/// When the supervisor stops the job's group: SIGTERM at `term_at`, SIGKILL at `kill_at`.
struct stop_times {
    std::optional<std::chrono::steady_clock::time_point> term_at;
    std::optional<std::chrono::steady_clock::time_point> kill_at;
};

/// The lock lost: SIGKILL now (someone else may hold it already). A lease at risk: SIGTERM so
/// that the grace fits before SIGKILL at its local end less the kill margin. A SIGTERM sent:
/// SIGKILL once the grace has passed, whatever became of the lock.
stop_times plan_stop(const lock_watch& watch, const job_limits& limits,
                     std::optional<std::chrono::steady_clock::time_point> term_sent) {
    const auto now = std::chrono::steady_clock::now();
    if (watch.is_lost())
        return {now, now};
    stop_times t;
    if (const auto end = watch.at_risk_until()) {
        t.kill_at = *end - limits.kill_margin;
        t.term_at = *t.kill_at - limits.grace;
    }
    if (term_sent)
        t.kill_at =
            std::min(t.kill_at.value_or(*term_sent + limits.grace), *term_sent + limits.grace);
    return t;
}

/// Milliseconds from now until `at` for poll(), at least 1 (0 when it has passed), at most a
/// minute.
int poll_timeout(std::chrono::steady_clock::time_point at) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(at - std::chrono::steady_clock::now());
    return static_cast<int>(std::clamp<long long>(left.count(), 0, 60'000));
}

/// sqlock's side while the job runs: follows the guard's messages, stops the group as
/// plan_stop() says, stops it itself when the guard dies. Returns the command's status, or -1.
int follow_job(int link, pid_t guard, int tty, const job_limits& limits, lock_watch& watch,
               std::string& failure) {
    pid_t pgid = 0;
    std::optional<std::chrono::steady_clock::time_point> term_sent;
    std::string pending;
    for (;;) {
        std::vector<std::pair<char, long>> messages;
        const bool guard_gone = !read_messages(link, pending, messages);
        for (const auto& [tag, value] : messages) {
            if (tag == 'J')
                g_job_pgid = pgid = static_cast<pid_t>(value);
            else if (tag == 'S' && pgid > 0 && tty >= 0)
                stop_with_job(tty, pgid); // stopped by someone else: renewals go on
            else if (tag == 'E')
                return static_cast<int>(value);
        }
        if (guard_gone) { // without a word: it died, so sqlock stops the job itself
            if (pgid > 0)
                kill_group_and_wait(pgid);
            failure = "the guard process " + std::to_string(guard) +
                      " of the command died: the command was stopped";
            return -1;
        }
        int timeout_ms = -1;
        if (pgid > 0) {
            const auto plan = plan_stop(watch, limits, term_sent);
            const auto now = std::chrono::steady_clock::now();
            if (plan.kill_at && now >= *plan.kill_at) {
                kill(-pgid, SIGKILL); // again until the guard says the group is empty
                timeout_ms = 20;
            } else {
                if (plan.term_at && now >= *plan.term_at && !term_sent) {
                    std::cerr << "sqlock: " << watch.risk_message()
                              << "; stopping the command before its lease ends (SIGTERM, "
                                 "SIGKILL in "
                              << limits.grace.count() << " ms)\n";
                    kill(-pgid, SIGTERM);
                    term_sent = now;
                    watch.note_stopped_at_risk();
                    continue; // plan again with the SIGTERM sent
                }
                for (const auto& at : {plan.term_at, plan.kill_at})
                    if (at && (!term_sent || at == plan.kill_at))
                        timeout_ms = timeout_ms < 0 ? poll_timeout(*at)
                                                    : std::min(timeout_ms, poll_timeout(*at));
            }
        }
        pollfd fds[2] = {{wakeup_fd(), POLLIN, 0}, {link, POLLIN, 0}};
        poll(fds, 2, timeout_ms);
        drain_wakeups();
    }
}

} // namespace

int run_job_group(const std::vector<std::string>& exec, const std::vector<std::string>& env,
                  const job_limits& limits, lock_watch& watch, std::string& failure) {
    const auto path = resolve_command(exec.at(0));
    if (!path) {
        const int why = errno;
        std::cerr << "sqlock: cannot run " << exec[0] << ": " << std::strerror(why) << "\n";
        return W_EXITCODE(why == ENOENT ? 127 : 126, 0);
    }
    const prepared_job job(exec, env, *path);
    int link = -1;
    const pid_t guard = start_guard(job.spec(), link, failure);
    if (guard < 0)
        return -1;
    const int status = follow_job(link, guard, job.spec().tty, limits, watch, failure);
    g_job_pgid = 0; // the signal handler no longer writes to the link
    g_link = -1;
    close(link);
    while (waitpid(guard, nullptr, 0) < 0 && errno == EINTR) {
    }
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
        // A process of the job that the guard left behind (sqlock is a subreaper too).
    }
    hand_terminal(job.spec().tty, getpgrp());
    return status;
}

} // namespace sqlock::cli
