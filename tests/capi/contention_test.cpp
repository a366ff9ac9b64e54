// Callers of every kind on one lock name: a C program (c_contender.c, the C API), a C++ program
// (tests/support/contender.cpp, the C++ API) and `sqlock run`, at once, on the backend and
// strategy under test. Each proves exclusion in its critical section (a marker file created
// with O_EXCL) and logs its grant's token there: the log's tokens strictly increase.
#include "fixture.hpp"

#include <sstream>

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
