// Callers of every kind on one lock name: a C program (c_contender.c, the C API), a C++ program
// (tests/support/contender.cpp, the C++ API) and `sqlock run`, at once, on the backend and
// strategy under test. Each proves exclusion in its critical section (a marker file created
// with O_EXCL) and logs its grant's token there: the log's tokens strictly increase.
#include "fixture.hpp"

#include <sstream>
#include <thread>

using namespace capi_test;

TEST_SUITE("contention") {

    TEST_CASE("a C, a C++ and a `sqlock run` process on one name: mutual exclusion, tokens "
              "strictly increase") {
        const auto& t = under_test();
        const auto name = unique_name("mixed");
        const auto log = t.scratch + "/" + name + ".log";
        const std::string iterations = "12";
        // The CLI's turn: the same critical section in the shell (noclobber: '>' refuses an
        // existing marker), ITERATIONS runs one after another.
        const std::string run_loop =
            "for i in $(seq " + iterations + "); do \"$0\" --url \"$1\" run \"$2\" --strategy " +
            t.strategy_name +
            " --ttl 30s -- sh -c 'set -C; : > \"$0.inside\" || exit 3; "
            "echo \"$SQLOCK_TOKEN $$\" >> \"$0\"; rm \"$0.inside\"' \"$3\" || exit $?; done";
        std::vector<pid_t> pids;
        for (int copy = 0; copy < 2; ++copy) {
            pids.push_back(
                spawn({c_contender_path(), t.url, name, "30000", iterations, log, t.strategy_name},
                      {}, {}, t.scratch + "/c-" + std::to_string(copy) + ".err"));
            pids.push_back(spawn(
                {cpp_contender_path(), t.url, name, "30000", iterations, log, t.strategy_name}, {},
                {}, t.scratch + "/cpp-" + std::to_string(copy) + ".err"));
        }
        pids.push_back(spawn({"/bin/sh", "-c", run_loop, cli_path(), t.url, name, log}, {}, {},
                             t.scratch + "/cli.err"));
        for (const auto pid : pids) {
            const int status = wait_exit(pid);
            CHECK_MESSAGE(status == 0, "a contender exited with "
                                           << status
                                           << "; c-0.err: " << read_file(t.scratch + "/c-0.err")
                                           << " cli.err: " << read_file(t.scratch + "/cli.err"));
        }
        std::istringstream lines(read_file(log));
        std::int64_t token = 0, last = 0;
        long pid = 0;
        int grants = 0;
        bool increasing = true;
        while (lines >> token >> pid) {
            ++grants;
            increasing = increasing && token > last;
            last = token;
        }
        CHECK(grants == 5 * std::stoi(iterations));
        CHECK_MESSAGE(increasing, "tokens out of order in " << log);
    }
}

TEST_SUITE("contention") {

    TEST_CASE("an operator's `sqlock release --force`: the C holder's on_lost runs, it owns "
              "nothing, its release reports the loss") {
        const auto& t = under_test();
        if (!lease_strategy() && t.backend != "postgresql")
            return; // select_for_update: only PostgreSQL can end the holder's session
        const auto name = unique_name("forced");
        signal_probe probe;
        auto o = opts(3000); // renewed every second
        o.renew = 1;
        probe.attach(o);
        mutex_handle h(name, o);
        std::int64_t token = 0;
        REQUIRE(sqlock_mutex_lock(h.m, 0, nullptr, &token, nullptr) == SQLOCK_OK);
        const auto out = t.scratch + "/" + name + ".release";
        const pid_t cli =
            spawn({cli_path(), "--url", t.url, "release", name, "--force"}, {}, out, out + ".err");
        REQUIRE_MESSAGE(wait_exit(cli) == 0, read_file(out + ".err"));
        // The next renewal (every ttl/3) finds it gone.
        REQUIRE(probe.wait_lost(std::chrono::seconds(10)));
        {
            std::lock_guard guard(probe.m);
            CHECK(probe.lost.token == token);
            CHECK(probe.lost.reason == SQLOCK_LOSS_LOST);
            CHECK(probe.lost_name == name);
        }
        CHECK(sqlock_mutex_owns(h.m) == 0);
        error_slot err;
        CHECK(sqlock_mutex_unlock(h.m, err.out()) == SQLOCK_E_LOCK_LOST);
    }
}
