// Time bounds of `sqlock run --wait D` and `--connect-timeout` (issue 31, item 5; item 6's
// progress line and "a timed-out wait leaves nothing behind"): real CLI processes against the
// server under test, and against a server that accepts TCP connections but never answers (a
// plain listening socket of the test's own that never accepts: the kernel completes the
// handshake, nobody replies).
#include "backend_fixture.hpp"
#include "silent_server.hpp"

#include <cerrno>
#include <chrono>
#include <doctest/doctest.h>
#include <poll.h>
#include <pty.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

struct outcome {
    int status = -1;
    std::chrono::milliseconds took{0};
    /// start_and_exit() measured just before: an upper bound allows that much more.
    std::chrono::milliseconds overhead{0};
    std::string err;
};

/// How long this build's CLI takes for what is not waiting: start, connect, a free lock, `true`
/// and exit (`sqlock run FREE-NAME -- true` on the backend under test, the faster of two): a
/// few ms, but up to a second under a sanitizer's runtime, which the bounds below are not about.
std::chrono::milliseconds start_and_exit() {
    auto fastest = std::chrono::milliseconds::max();
    for (int i = 0; i < 2; ++i) {
        const auto start = steady::now();
        REQUIRE(test::wait_exit(test::spawn({test::cli_path(), "--url", test::backend().url, "run",
                                             test::unique_name("tb-free"), "--", "true"},
                                            {}, "/dev/null")) == 0);
        fastest = std::min(
            fastest, std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start));
    }
    return fastest;
}

/// Runs the CLI with `args` (stdout and stderr to files), timed from spawn to exit, with the
/// build's start_and_exit() beside it.
outcome run_cli(const std::vector<std::string>& args, const std::string& tag) {
    const auto overhead = start_and_exit();
    std::vector<std::string> argv{test::cli_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto err = test::backend().scratch_dir + "/time_bounds-" + tag + ".err";
    const auto start = steady::now();
    const pid_t pid = test::spawn(argv, {}, "/dev/null", err);
    outcome o;
    o.status = test::wait_exit(pid);
    o.took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start);
    o.overhead = overhead;
    o.err = test::read_file(err);
    return o;
}

std::string strategy_arg() {
    return std::string(sqlock::to_string(test::strategy()));
}

bool server_backend() {
    return test::backend().kind != sqlock::backend_kind::sqlite;
}

/// connect_timeout's resolution on the backend under test (what --help documents): PostgreSQL
/// to the millisecond, MariaDB whole seconds rounded up.
std::chrono::milliseconds resolved(std::chrono::milliseconds timeout) {
    if (test::backend().kind == sqlock::backend_kind::mysql)
        return std::chrono::ceil<std::chrono::seconds>(timeout);
    return timeout;
}

} // namespace

TEST_SUITE("time_bounds") {

    TEST_CASE("run --wait 2s against a held lock: exit 75 within 3 s, nothing of its own left") {
        const auto name = test::unique_name("tb-held");
        sqlock::mutex holder(test::db(), name, test::opts());
        holder.lock();
        const auto o = run_cli({"--url", test::backend().url, "run", name, "--strategy",
                                strategy_arg(), "--wait", "2s", "--", "true"},
                               "held");
        CHECK(o.status == 75);
        CHECK(o.took >= 1900ms);
        CHECK(o.took < 3s + o.overhead);
        INFO(o.err);
        CHECK(o.err.find("not granted within 2.0s") != std::string::npos);
        // stderr is not a terminal: no progress line.
        CHECK(o.err.find("waiting for lock") == std::string::npos);
        CHECK(o.err.find('\r') == std::string::npos);
        // Nothing of the timed-out process is left: the only row of the name is the holder's
        // (queue seats and leases of others would show as rows of their own).
        for (const auto& row : test::db().list()) {
            if (row.primitive_name() != name)
                continue;
            CHECK(row.pid == static_cast<std::int64_t>(getpid()));
        }
        const auto row = test::row_of(name);
        REQUIRE(row);
        CHECK(row->held());
        CHECK(row->pid == static_cast<std::int64_t>(getpid()));
        holder.unlock();
        // ... and the lock is free for the next one at once.
        sqlock::mutex next(test::db(), name, test::opts());
        CHECK(next.try_lock());
        next.unlock();
    }

    TEST_CASE("run --wait 2s against a server that accepts but never answers: exit 75 within 3 s") {
        if (!server_backend())
            return; // SQLite has no server: the held-lock case above is its bound
        const test::silent_server silent;
        const auto o = run_cli({"--url", silent.url(), "run", test::unique_name("tb-silent"),
                                "--strategy", strategy_arg(), "--wait", "2s", "--", "true"},
                               "silent");
        INFO(o.err);
        CHECK(o.status == 75);
        CHECK(o.took >= 1900ms);
        CHECK(o.took < 3s + o.overhead);
        CHECK(o.err.find("abandoned") != std::string::npos);
        CHECK(o.err.find("not granted within --wait (waited ") != std::string::npos);
        CHECK(o.err.find("secret") == std::string::npos);
    }

    TEST_CASE("run --wait 0 against a silent server: one try, exit 75 within 1 s") {
        if (!server_backend())
            return;
        const test::silent_server silent;
        const auto o = run_cli({"--url", silent.url(), "run", test::unique_name("tb-silent0"),
                                "--strategy", strategy_arg(), "--wait", "0", "--", "true"},
                               "silent0");
        INFO(o.err);
        CHECK(o.status == 75);
        CHECK(o.took < 1500ms + o.overhead);
        CHECK(o.err.find("abandoned") != std::string::npos);
    }

    TEST_CASE(
        "--connect-timeout 500ms against a silent server: honoured to the driver's resolution") {
        if (!server_backend())
            return;
        const test::silent_server silent;
        const auto o = run_cli({"--url", silent.url(), "--connect-timeout", "500ms", "reap"},
                               "connect-timeout");
        INFO(o.err);
        CHECK(o.status == 69);
        const auto bound = resolved(500ms);
        CHECK(o.took >= bound - 100ms);
        CHECK(o.took < bound + 500ms + o.overhead);
        // The connect's own timeout, in the driver's words (is_connect_unanswered recognises both).
        CHECK((o.err.find("timeout expired") != std::string::npos ||
               o.err.find("system error: 110") != std::string::npos));
    }

    TEST_CASE("run waiting on a terminal shows who holds the lock on one line, cleared when done") {
        const auto name = test::unique_name("tb-progress");
        sqlock::mutex holder(test::db(), name, test::opts());
        holder.lock();
        int master = -1;
        const auto url = test::backend().url;
        const auto strategy = strategy_arg();
        const std::string cli = test::cli_path();
        const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
        REQUIRE(pid >= 0);
        if (pid == 0) {
            execl(cli.c_str(), cli.c_str(), "--url", url.c_str(), "run", name.c_str(), "--strategy",
                  strategy.c_str(), "--wait", "3s", "--", "true", static_cast<char*>(nullptr));
            _exit(127);
        }
        // Read the terminal until the child closes it (it exits).
        std::string screen;
        for (;;) {
            pollfd p{master, POLLIN, 0};
            if (poll(&p, 1, 10'000) <= 0)
                break;
            char buf[512];
            const auto n = read(master, buf, sizeof buf);
            if (n <= 0)
                break; // EIO: the child's side is closed
            screen.append(buf, static_cast<std::size_t>(n));
        }
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        close(master);
        holder.unlock();
        INFO(screen);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 75);
        const auto shown = screen.find("waiting for lock \"" + name + "\" for ");
        REQUIRE(shown != std::string::npos);
        CHECK(screen.find("held by ", shown) != std::string::npos);
        // Rewritten in place (\r, no newline between refreshes), cleared before the final message.
        const auto cleared = screen.rfind("\r\033[K");
        const auto final_message = screen.find("not granted within 3.0s");
        REQUIRE(final_message != std::string::npos);
        CHECK(cleared < final_message);
        CHECK(screen.substr(shown, final_message - shown).find('\n') == std::string::npos);
    }

} // TEST_SUITE
