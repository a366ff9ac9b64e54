// `sqlock run`: the job never outlives its lock (tools/sqlock/job_group.hpp). Real processes:
// a job with a grandchild that both write timestamps, a second host waiting, and the CLI (or
// its guard process) killed with SIGKILL, or the lease released by force.
#include "backend_fixture.hpp"
#include "tcp_relay.hpp"

#include <cerrno>
#include <doctest/doctest.h>
#include <filesystem>
#include <signal.h>
#include <sstream>

using namespace std::chrono_literals;

namespace {

std::string url_env() {
    return "SQLOCK_URL=" + test::backend().url;
}

std::string strategy_arg() {
    return std::string(sqlock::to_string(test::strategy()));
}

/// A job whose shell and a grandchild both append the wall clock (ns) to `beats` every 50 ms
/// for at most a minute (a failed test leaves no endless process behind), after writing the
/// shell's pid (the job's process group) to `pgid_file`.
std::string beating_job(const std::string& pgid_file, const std::string& beats) {
    const std::string beat = "i=0; while [ $i -lt 1200 ]; do date +%s%N >> '" + beats +
                             "'; sleep 0.05; i=$((i+1)); done";
    return "echo $$ > '" + pgid_file + "'; (" + beat + ") & " + beat;
}

long long last_beat(const std::string& beats) {
    std::istringstream in(test::read_file(beats));
    long long t = 0;
    long long last = 0;
    while (in >> t)
        last = std::max(last, t);
    return last;
}

bool group_gone(pid_t pgid) {
    return kill(-pgid, 0) != 0 && errno == ESRCH;
}

/// The guard of a `sqlock run` (its child process named sqlock), or 0.
pid_t guard_of(pid_t cli) {
    const auto guards = test::children_of(cli, "sqlock");
    return guards.empty() ? 0 : guards.front();
}

struct job_files {
    std::string dir;
    std::string pgid;
    std::string beats;
    std::string started;
};

job_files files_for(const std::string& name) {
    job_files f;
    f.dir = test::backend().scratch_dir + "/" + name;
    std::filesystem::create_directories(f.dir);
    f.pgid = f.dir + "/pgid";
    f.beats = f.dir + "/beats";
    f.started = f.dir + "/second-started";
    return f;
}

/// `sqlock run NAME --ttl TTL -- <beating job>`, started and awaited until its job has said its
/// process group; what is left of the job is killed when the test ends (nothing, if it passed).
struct beating_holder {
    std::string name;
    job_files f;
    pid_t cli = 0;
    pid_t pgid = 0;

    /// Through `url` when given (default: the backend's).
    beating_holder(const std::string& base, const std::string& ttl, const std::string& url = {})
        : name(test::unique_name(base)), f(files_for(name)) {
        cli = test::spawn({test::cli_path(), "run", name, "--strategy", strategy_arg(), "--ttl",
                           ttl, "--", "/bin/sh", "-c", beating_job(f.pgid, f.beats)},
                          {url.empty() ? url_env() : "SQLOCK_URL=" + url});
        REQUIRE(test::eventually([&] { return !test::read_file(f.pgid).empty(); }, 10s));
        pgid = static_cast<pid_t>(std::stol(test::read_file(f.pgid)));
    }
    ~beating_holder() {
        if (pgid > 0)
            kill(-pgid, SIGKILL);
    }
    beating_holder(const beating_holder&) = delete;
    beating_holder& operator=(const beating_holder&) = delete;
};

} // namespace

TEST_SUITE("common") {

    TEST_CASE("sqlock run killed with SIGKILL: no process of its job writes after the next "
              "holder's job starts") {
        // What the OOM killer does to the CLI alone: its guard stops the job and its
        // grandchild before what keeps the lock (the lease's renewals, the session) is gone.
        const bool lease = test::strategy() != sqlock::strategy::select_for_update;
        // (3 s: a 1 s lease whose renewal came 170 ms late on a loaded host had its job
        // stopped at risk, as it must, before the test could kill the CLI.)
        const beating_holder h("run-kill9", lease ? "3s" : "30s");
        const auto& f = h.f;
        REQUIRE(test::eventually([&] { return last_beat(f.beats) > 0; }, 10s));
        const pid_t second =
            test::spawn({test::cli_path(), "run", h.name, "--strategy", strategy_arg(), "--wait",
                         "30s", "--", "/bin/sh", "-c", "date +%s%N > '" + f.started + "'"},
                        {url_env()});
        kill(h.cli, SIGKILL); // the CLI only: not its group, not its guard
        CHECK(test::wait_exit(h.cli) == 128 + SIGKILL);
        CHECK(test::wait_exit(second) == 0);
        const auto started = std::stoll(test::read_file(f.started));
        CHECK(test::eventually([&] { return group_gone(h.pgid); }, 5s));
        CHECK_MESSAGE(last_beat(f.beats) < started, "the killed holder's job wrote "
                                                        << (last_beat(f.beats) - started) / 1000000
                                                        << " ms after the next job started");
    }

    TEST_CASE("sqlock run: its guard killed with SIGKILL stops the job, then the lock is free") {
        const beating_holder h("run-guard9", "30s");
        pid_t guard = 0;
        REQUIRE(test::eventually([&] { return (guard = guard_of(h.cli)) > 0; }, 5s));
        kill(guard, SIGKILL);
        CHECK(test::wait_exit(h.cli) == 70); // the command was stopped: a failure, said so
        CHECK(test::eventually([&] { return group_gone(h.pgid); }, 5s));
        const auto beats_after = last_beat(h.f.beats);
        sqlock::mutex after(test::db(), h.name, test::opts());
        CHECK(after.try_lock_for(5s)); // released by the CLI once the job was gone
        CHECK(last_beat(h.f.beats) == beats_after);
    }
}

TEST_SUITE("lease") {

    TEST_CASE("sqlock run: a lease lost to release --force stops the job's grandchildren too") {
        // A 3 s lease renewed every second: the loss is found within about a second.
        const beating_holder h("run-forced", "3s");
        const pid_t release =
            test::spawn({test::cli_path(), "release", h.name, "--force"}, {url_env()});
        CHECK(test::wait_exit(release) == 0);
        CHECK(test::wait_exit(h.cli) == 76);
        CHECK(test::eventually([&] { return group_gone(h.pgid); }, 5s));
    }
}

TEST_SUITE("cut_off") { // servers, every strategy

    TEST_CASE("sqlock run cut off from the database past its TTL: its job and grandchild are "
              "gone before the next holder's job starts (default --grace)") {
        // A partition of the holder's host alone: its connections go through a relay that
        // stops passing anything, while the second host reaches the server directly. The
        // renewals go unanswered; the lease is at risk once half its TTL is left, and the job
        // gets SIGTERM, its grace (default: a quarter of the TTL) and SIGKILL before the
        // lease's local end, which comes before anyone else can be granted it.
        test::tcp_relay relay(test::server_port());
        const beating_holder h("run-cut-off", "4s", relay.relayed(test::backend().url));
        const auto& f = h.f;
        REQUIRE(test::eventually([&] { return last_beat(f.beats) > 0; }, 10s));
        relay.freeze();
        const pid_t second =
            test::spawn({test::cli_path(), "run", h.name, "--strategy", strategy_arg(), "--wait",
                         "30s", "--", "/bin/sh", "-c", "date +%s%N > '" + f.started + "'"},
                        {url_env()});
        CHECK(test::wait_exit(second) == 0);
        const auto started = std::stoll(test::read_file(f.started));
        CHECK(group_gone(h.pgid));
        CHECK_MESSAGE(last_beat(f.beats) < started, "the cut-off holder's job wrote "
                                                        << (last_beat(f.beats) - started) / 1000000
                                                        << " ms after the next job started");
        relay.thaw(); // its release (which finds the lock gone) can go through now
        CHECK(test::wait_exit(h.cli) == 76);
    }
}

TEST_SUITE("run_session_end") { // servers, select_for_update

    TEST_CASE("sqlock run: a select_for_update session killed on the server gets the job "
              "stopped within a second") {
        // The row lock went with the session: another host may hold it at once, so the job
        // gets SIGKILL without a grace (only fencing covers the moment in between).
        const beating_holder h("run-session-killed", "30s");
        REQUIRE(test::eventually([&] { return last_beat(h.f.beats) > 0; }, 10s));
        const auto sessions = test::server_sessions_of(h.cli);
        REQUIRE_FALSE(sessions.empty());
        const auto killed_at = std::chrono::steady_clock::now();
        for (const auto id : sessions)
            test::kill_session(test::db(), id);
        CHECK(test::eventually([&] { return group_gone(h.pgid); }, 1s));
        CHECK(std::chrono::steady_clock::now() - killed_at < 1s);
        CHECK(test::wait_exit(h.cli) == 76);
    }
}
