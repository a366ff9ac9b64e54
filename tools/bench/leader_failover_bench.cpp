// leader_failover_bench: how long after a leader is killed with SIGKILL does the next leader's
// campaign() return? (sqlock::leader_election; README "Leader election", tools/bench/README.md)
//
//   sqlock_leader_failover_bench URL [KILLS=20] [TTL_MS=2000]
//
// Each round: a child process (this program, "lead" mode) campaigns and leads, renewing every
// ttl/3; this process campaigns for the same election on a thread, waits a random part of the
// TTL (so that the kill falls anywhere between two renewals), kills the child with SIGKILL and
// measures from the kill to its own campaign() returning. Then it resigns for the next round.
// Prints one line per round and a summary line:
//   leader_failover backend=B ttl_ms=T kills=N median_ms=M max_ms=X min_ms=Y
// Default leader_options otherwise (retry_max 200 ms: campaigners poll at most every 400 ms).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sqlock/sqlock.hpp>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

int lead(const std::string& url, const std::string& name, long ttl_ms, const std::string& file) {
    auto db = sqlock::connect(url);
    sqlock::leader_election e(db, name, {.ttl = std::chrono::milliseconds(ttl_ms)});
    const auto term = e.campaign();
    { std::ofstream(file + ".tmp") << term << "\n"; }
    std::rename((file + ".tmp").c_str(), file.c_str());
    pause(); // lead until killed
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    try {
        if (argc == 6 && std::string(argv[1]) == "lead")
            return lead(argv[2], argv[3], std::stol(argv[4]), argv[5]);
        if (argc < 2 || argc > 4) {
            std::cerr << "usage: sqlock_leader_failover_bench URL [KILLS=20] [TTL_MS=2000]\n";
            return 2;
        }
        const std::string url = argv[1];
        const int kills = argc > 2 ? std::stoi(argv[2]) : 20;
        const long ttl_ms = argc > 3 ? std::stol(argv[3]) : 2000;
        auto db = sqlock::connect(url);
        db.migrate();
        std::mt19937_64 rng{std::random_device{}()};
        const std::string name = "leader-failover-" + std::to_string(rng() % 1000000000);
        const std::string file = "/tmp/" + name + ".term";
        sqlock::leader_election me(db, name, {.ttl = std::chrono::milliseconds(ttl_ms)});
        std::vector<double> took_ms;
        std::int64_t last_term = 0;
        for (int i = 0; i < kills; ++i) {
            std::remove(file.c_str());
            const std::string ttl_text = std::to_string(ttl_ms); // no allocation after fork()
            const pid_t child = fork();
            if (child == 0) {
                execl("/proc/self/exe", argv[0], "lead", url.c_str(), name.c_str(),
                      ttl_text.c_str(), file.c_str(), static_cast<char*>(nullptr));
                _exit(127);
            }
            const auto give_up = clock_type::now() + std::chrono::seconds(30);
            while (!std::ifstream(file).good()) {
                if (clock_type::now() > give_up)
                    throw std::runtime_error("the child never led");
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
            std::int64_t child_term = 0;
            std::ifstream(file) >> child_term;
            if (child_term <= last_term)
                throw std::runtime_error("terms did not increase");
            std::atomic<bool> campaigning{false};
            std::int64_t term = 0;
            clock_type::time_point elected;
            std::thread campaigner([&] {
                campaigning = true;
                term = me.campaign();
                elected = clock_type::now();
            });
            while (!campaigning)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            // Kill at a random moment of the lease (relative to the leader's renewals).
            std::this_thread::sleep_for(std::chrono::milliseconds(
                std::uniform_int_distribution<long>(ttl_ms / 2, ttl_ms * 3 / 2)(rng)));
            const auto killed = clock_type::now();
            kill(child, SIGKILL);
            waitpid(child, nullptr, 0);
            campaigner.join();
            if (term <= child_term)
                throw std::runtime_error("the new term is not above the killed leader's");
            last_term = term;
            const double ms = std::chrono::duration<double, std::milli>(elected - killed).count();
            took_ms.push_back(ms);
            std::printf("kill %d: killed term %lld, new term %lld after %.0f ms\n", i + 1,
                        static_cast<long long>(child_term), static_cast<long long>(term), ms);
            std::fflush(stdout);
            me.resign();
        }
        std::remove(file.c_str());
        std::sort(took_ms.begin(), took_ms.end());
        const auto n = took_ms.size();
        const double median = n % 2 ? took_ms[n / 2] : (took_ms[n / 2 - 1] + took_ms[n / 2]) / 2;
        std::printf("leader_failover backend=%s ttl_ms=%ld kills=%zu median_ms=%.0f max_ms=%.0f "
                    "min_ms=%.0f\n",
                    std::string(sqlock::to_string(db.backend())).c_str(), ttl_ms, n, median,
                    took_ms.back(), took_ms.front());
    } catch (const std::exception& e) {
        std::cerr << "leader_failover_bench: " << e.what() << "\n";
        return 1;
    }
}
