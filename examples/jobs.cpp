// A job that every instance of a service fires from its own timer, run once per slot across
// all of them (README "Scheduled jobs on a fleet"). Here three "instances" (threads) fire the
// same hourly job; it runs once, and the ledger shows the run.
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <sqlock/sqlock.hpp>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

int main() {
    std::filesystem::remove("jobs-example.db");
    sqlock::database db = sqlock::connect("sqlite:jobs-example.db");
    db.migrate();

    std::atomic<int> runs{0};
    std::vector<std::thread> instances;
    for (int i = 0; i < 3; ++i) {
        instances.emplace_back([&] {
            sqlock::job hourly(db, "rebuild-search-index", {.period = 1h});
            const sqlock::job_result r = hourly.run([&](std::int64_t token, std::stop_token stop) {
                // Pass `token` to whatever the job writes (fencing); end early when `stop` is
                // requested: the lock was lost and another instance may take over.
                (void)token;
                if (!stop.stop_requested())
                    ++runs;
            });
            std::printf("instance: %s (slot %s)\n", std::string(to_string(r.outcome)).c_str(),
                        r.slot.c_str());
        });
    }
    for (auto& t : instances)
        t.join();

    for (const auto& run : sqlock::job_history(db, "rebuild-search-index"))
        std::printf("ledger: slot %s %s by %s:%lld, token %lld\n", run.slot.c_str(),
                    run.outcome.c_str(), run.host.c_str(), static_cast<long long>(run.pid),
                    static_cast<long long>(run.token));
    std::printf("ran %d time(s)\n", runs.load());
    return runs == 1 ? 0 : 1;
}
