// `sqlock run` started from a terminal, and signalled from outside (tools/sqlock/job_group.hpp):
// the job reads the terminal, one Ctrl-C is one SIGINT for it, Ctrl-Z stops the job and sqlock
// and SIGCONT continues both, and a SIGTERM sent to sqlock (or, as systemd's control-group
// kill does, to sqlock, its guard and the job at once) reaches the job once. Real processes on
// a pseudo-terminal: a small "shell" (a session leader owning the terminal) starts sqlock in a
// process group of its own in the terminal's foreground, as an interactive shell does.
// The behaviour is the CLI's, not the database's: the suite runs on SQLite only.
#include "backend_fixture.hpp"

#include <cerrno>
#include <cstdlib>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <signal.h>
#include <sstream>
#include <string_view>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

extern char** environ;

using namespace std::chrono_literals;

namespace {

std::string url_env() {
    return "SQLOCK_URL=" + test::backend().url;
}

std::string strategy_arg() {
    return std::string(sqlock::to_string(test::strategy()));
}

/// A directory of the test's own for the job's files.
struct job_dir {
    std::string dir;
    explicit job_dir(const std::string& name) : dir(test::backend().scratch_dir + "/" + name) {
        std::filesystem::create_directories(dir);
    }
    std::string operator/(const std::string& file) const { return dir + "/" + file; }
};

/// The job's pid, once it has written it (with its newline) to `ready`; 0 before.
pid_t pid_in(const std::string& ready) {
    const auto text = test::read_file(ready);
    if (text.empty() || text.back() != '\n')
        return 0;
    return static_cast<pid_t>(std::stol(text));
}

/// How many lines of `file` are exactly `line`.
int lines_equal_to(const std::string& file, const std::string& line) {
    std::istringstream in(test::read_file(file));
    int n = 0;
    for (std::string l; std::getline(in, l);)
        n += l == line ? 1 : 0;
    return n;
}

/// The state letter of /proc/PID/stat ('R', 'S', 'T', 'Z', ...), or 0 when there is none.
char state_of(pid_t pid) {
    const auto stat = test::read_file("/proc/" + std::to_string(pid) + "/stat");
    const auto close = stat.rfind(')');
    return close == std::string::npos || close + 2 >= stat.size() ? 0 : stat[close + 2];
}

/// Reaps `pid` if it exits within `timeout`: its exit status (128+N when killed by signal N).
std::optional<int> exit_within(pid_t pid, std::chrono::milliseconds timeout) {
    std::optional<int> code;
    test::eventually(
        [&] {
            int status = 0;
            const pid_t r = waitpid(pid, &status, WNOHANG);
            if (r == pid)
                code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            return r != 0;
        },
        timeout);
    return code;
}

/// A job (for `sh -c`) that appends "<SIG>" to `count` for each SIGINT, SIGTERM and SIGUSR1 it
/// handles, writes its pid to `ready`, and waits for `done` (at most a minute: a failed test
/// leaves no endless process behind), then exits 3. It waits with the `wait` builtin, which a
/// trapped signal interrupts: each signal's trap runs as soon as it arrives, so two deliveries
/// give two lines (unless they meet before the shell runs: then the kernel keeps one).
/// A test that counts sends SIGUSR1 once the first line is there and awaits its line: a second
/// copy sent before has been handled by then (the shell runs the traps of all its pending
/// signals together), and the count is read once sqlock has exited.
std::string counting_job(const job_dir& d) {
    const auto count = d / "COUNT";
    std::string job;
    for (const char* sig : {"INT", "TERM", "USR1"})
        job += std::string("trap 'echo ") + sig + " >> \"" + count + "\"' " + sig + "; ";
    job += "echo $$ > '" + d / "READY" + "'; i=0; while [ ! -e '" + d / "DONE" +
           "' ] && [ $i -lt 1200 ]; do sleep 0.05 & wait $!; i=$((i+1)); done; exit 3";
    return job;
}

/// `sqlock run NAME -- sh -c JOB` started as an interactive shell starts a command: on a
/// pseudo-terminal that is the controlling terminal of a session, whose leader (standing for the
/// shell) puts sqlock in a process group of its own and makes it the terminal's foreground
/// group. The leader exits with sqlock's exit status. What is left is killed at the end.
class terminal_run {
public:
    terminal_run(const std::string& name, const std::string& job) {
        m_master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        REQUIRE(m_master >= 0);
        REQUIRE(grantpt(m_master) == 0);
        REQUIRE(unlockpt(m_master) == 0);
        char slave[128];
        REQUIRE(ptsname_r(m_master, slave, sizeof slave) == 0);

        // Everything the forked processes use is made before the fork (nothing allocated
        // after it).
        const std::vector<std::string> argv{test::cli_path(), "run",          name,
                                            "--strategy",     strategy_arg(), "--",
                                            "/bin/sh",        "-c",           job};
        std::vector<char*> args;
        for (const auto& a : argv)
            args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        std::vector<std::string> env_storage;
        for (char** e = environ; *e; ++e)
            env_storage.emplace_back(*e);
        env_storage.push_back(url_env());
        std::vector<char*> env;
        for (auto& e : env_storage)
            env.push_back(e.data());
        env.push_back(nullptr);
        int report[2];
        REQUIRE(pipe2(report, O_CLOEXEC) == 0);

        m_leader = fork();
        REQUIRE(m_leader >= 0);
        if (m_leader == 0)
            run_leader(slave, report[1], args.data(), env.data());
        close(report[1]);
        pid_t cli = 0;
        ssize_t got = 0;
        while ((got = read(report[0], &cli, sizeof cli)) < 0 && errno == EINTR) {
        }
        close(report[0]);
        REQUIRE_MESSAGE(got == static_cast<ssize_t>(sizeof cli),
                        "the session leader failed: exit " << test::wait_exit(m_leader));
        m_cli = cli;
    }

    ~terminal_run() {
        if (m_leader > 0) {
            // A failed test: sqlock's guard takes the job down with it.
            kill(m_cli, SIGKILL);
            kill(m_leader, SIGKILL);
            test::wait_exit(m_leader);
        }
        close(m_master);
    }
    terminal_run(const terminal_run&) = delete;
    terminal_run& operator=(const terminal_run&) = delete;

    /// What the user types.
    void type(std::string_view keys) {
        REQUIRE(write(m_master, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size()));
    }

    /// The terminal's foreground process group.
    pid_t foreground() const { return tcgetpgrp(m_master); }

    pid_t cli() const { return m_cli; }

    /// sqlock's exit status if it exits within `timeout`.
    std::optional<int> exit_within(std::chrono::milliseconds timeout) {
        const auto code = ::exit_within(m_leader, timeout);
        if (code)
            m_leader = 0;
        return code;
    }

private:
    /// The forked session leader: async-signal-safe calls only (the test process may have
    /// threads).
    [[noreturn]] static void run_leader(const char* slave, int report, char* const* argv,
                                        char* const* envp) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        if (setsid() < 0)
            _exit(90);
        const int tty = open(slave, O_RDWR);
        if (tty < 0 || ioctl(tty, TIOCSCTTY, 0) != 0)
            _exit(91);
        for (int fd = 0; fd < 3; ++fd)
            dup2(tty, fd);
        if (tty > 2)
            close(tty);
        // As an interactive shell: job-control signals and the terminal's SIGINT/SIGQUIT do
        // not touch the shell; its command gets them back.
        constexpr int shell_ignores[] = {SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU};
        struct sigaction ign {};
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        struct sigaction dfl = ign;
        dfl.sa_handler = SIG_DFL;
        for (const int sig : shell_ignores)
            sigaction(sig, &ign, nullptr);
        const pid_t cli = fork();
        if (cli == 0) {
            setpgid(0, 0);
            tcsetpgrp(STDIN_FILENO, getpid()); // SIGTTOU ignored: allowed from the background
            for (const int sig : shell_ignores)
                sigaction(sig, &dfl, nullptr);
            execve(argv[0], argv, envp);
            _exit(127);
        }
        if (cli < 0)
            _exit(92);
        setpgid(cli, cli); // also here: whichever runs first
        tcsetpgrp(STDIN_FILENO, cli);
        [[maybe_unused]] const auto n = write(report, &cli, sizeof cli);
        close(report);
        int status = 0;
        while (waitpid(cli, &status, 0) < 0)
            if (errno != EINTR)
                _exit(93);
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }

    int m_master = -1;
    pid_t m_leader = 0;
    pid_t m_cli = 0;
};

} // namespace

TEST_SUITE("run_terminal") {

    TEST_CASE("sqlock run from a terminal: the job reads the terminal") {
        const auto name = test::unique_name("tty-read");
        const job_dir d(name);
        terminal_run run(name, "echo $$ > '" + d / "READY" +
                                   "'; read line; echo \"got:$line\" > '" + d / "OUT" + "'");
        pid_t job = 0;
        REQUIRE(test::eventually([&] { return (job = pid_in(d / "READY")) > 0; }, 10s));
        CHECK(run.foreground() == job); // the job's group (it leads it)
        run.type("hello\n");
        // A job outside the terminal's foreground would be stopped by SIGTTIN instead.
        CHECK(test::eventually([&] { return test::read_file(d / "OUT") == "got:hello\n"; }, 10s));
        CHECK(run.exit_within(10s) == 0);
    }

    TEST_CASE("sqlock run from a terminal: one Ctrl-C is one SIGINT for the job") {
        const auto name = test::unique_name("tty-ctrl-c");
        const job_dir d(name);
        terminal_run run(name, counting_job(d));
        pid_t job = 0;
        REQUIRE(test::eventually([&] { return (job = pid_in(d / "READY")) > 0; }, 10s));
        REQUIRE(run.foreground() == job);
        run.type("\x03"); // ISIG: the terminal sends SIGINT to its foreground group
        REQUIRE(test::eventually([&] { return lines_equal_to(d / "COUNT", "INT") > 0; }, 10s));
        REQUIRE(kill(job, SIGUSR1) == 0); // after a second SIGINT, if any (see counting_job)
        REQUIRE(test::eventually([&] { return lines_equal_to(d / "COUNT", "USR1") > 0; }, 10s));
        std::ofstream(d / "DONE").close();
        CHECK(run.exit_within(10s) == 3); // the job's status
        CHECK(test::read_file(d / "COUNT") == "INT\nUSR1\n");
    }

    TEST_CASE("sqlock run from a terminal: Ctrl-Z stops the job and sqlock, SIGCONT to sqlock "
              "continues both") {
        const auto name = test::unique_name("tty-ctrl-z");
        const job_dir d(name);
        terminal_run run(name, counting_job(d));
        pid_t job = 0;
        REQUIRE(test::eventually([&] { return (job = pid_in(d / "READY")) > 0; }, 10s));
        REQUIRE(run.foreground() == job);
        run.type("\x1a"); // ISIG: SIGTSTP to the foreground group
        CHECK(test::eventually([&] { return state_of(job) == 'T'; }, 10s));
        CHECK(test::eventually([&] { return state_of(run.cli()) == 'T'; }, 10s));
        CHECK(run.foreground() == run.cli()); // sqlock took the terminal back, as a shell does
        // What `fg` does (sqlock's group is the terminal's foreground already).
        REQUIRE(kill(run.cli(), SIGCONT) == 0);
        CHECK(test::eventually([&] { return state_of(run.cli()) != 'T'; }, 10s));
        CHECK(test::eventually([&] { return state_of(job) != 'T'; }, 10s));
        CHECK(test::eventually([&] { return run.foreground() == job; }, 10s));
        // The job runs again: it handles a signal and finishes when told.
        REQUIRE(kill(job, SIGUSR1) == 0);
        CHECK(test::eventually([&] { return lines_equal_to(d / "COUNT", "USR1") > 0; }, 10s));
        std::ofstream(d / "DONE").close();
        CHECK(run.exit_within(10s) == 3);
    }

    TEST_CASE("sqlock run: a SIGTERM sent to sqlock alone reaches the job once") {
        const auto name = test::unique_name("tty-term");
        const job_dir d(name);
        terminal_run run(name, counting_job(d));
        pid_t job = 0;
        REQUIRE(test::eventually([&] { return (job = pid_in(d / "READY")) > 0; }, 10s));
        REQUIRE(kill(run.cli(), SIGTERM) == 0);
        REQUIRE(test::eventually([&] { return lines_equal_to(d / "COUNT", "TERM") > 0; }, 10s));
        REQUIRE(kill(job, SIGUSR1) == 0); // after a second SIGTERM, if any (see counting_job)
        REQUIRE(test::eventually([&] { return lines_equal_to(d / "COUNT", "USR1") > 0; }, 10s));
        std::ofstream(d / "DONE").close();
        CHECK(run.exit_within(10s) == 3);
        CHECK(test::read_file(d / "COUNT") == "TERM\nUSR1\n");
    }

    TEST_CASE("sqlock run: a SIGTERM sent at once to sqlock, its guard and the job (systemd's "
              "control-group kill) reaches the job once") {
        // No terminal here, as under systemd.
        const auto name = test::unique_name("cgroup-term");
        const job_dir d(name);
        const pid_t cli = test::spawn({test::cli_path(), "run", name, "--strategy", strategy_arg(),
                                       "--", "/bin/sh", "-c", counting_job(d)},
                                      {url_env()}, d / "stdout", d / "stderr");
        std::optional<int> code;
        const struct reaper {
            pid_t pid;
            std::optional<int>& code;
            ~reaper() {
                if (!code) { // a failed test: sqlock's guard takes the job down with it
                    kill(pid, SIGKILL);
                    test::wait_exit(pid);
                }
            }
        } reap{cli, code};
        pid_t job = 0;
        REQUIRE(test::eventually([&] { return (job = pid_in(d / "READY")) > 0; }, 10s));
        const auto guards = test::children_of(cli, "sqlock");
        REQUIRE(guards.size() == 1);
        const pid_t guard = guards.front();
        REQUIRE(test::children_of(guard) == std::vector<pid_t>{job}); // the job is the guard's
        // Two copies of a signal that meet before the job's shell runs count once: rounds, in
        // systemd's order (the main process, then the rest of the group) and in the reverse.
        const int rounds = 10;
        std::string expected;
        for (int round = 1; round <= rounds; ++round) {
            const auto order = round % 2 == 1 ? std::vector<pid_t>{cli, guard, job}
                                              : std::vector<pid_t>{job, guard, cli};
            for (const pid_t p : order)
                REQUIRE(kill(p, SIGTERM) == 0);
            REQUIRE(test::eventually([&] { return lines_equal_to(d / "COUNT", "TERM") >= round; },
                                     10s));
            REQUIRE(kill(job, SIGUSR1) == 0); // after a second SIGTERM, if any (see counting_job)
            REQUIRE(test::eventually([&] { return lines_equal_to(d / "COUNT", "USR1") >= round; },
                                     10s));
            expected += "TERM\nUSR1\n";
        }
        std::ofstream(d / "DONE").close();
        code = exit_within(cli, 10s);
        CHECK(code == 3);
        CHECK(test::read_file(d / "COUNT") == expected);
    }
}
