// Test helper process for sqlock::leader_election.
//
//   sqlock_elector rounds URL NAME TTL_MS ROUNDS LOG
// ROUNDS times: campaign(), then while leading create LOG.inside with O_EXCL (failing if
// another leader is inside), append "TERM PID" to LOG, check is_leader() for a few ms, remove
// the marker and resign(). Exit codes: 0 ok, 3 two leaders at once, 4 not leader while it
// should be, 2 usage, 1 other error.
//
//   sqlock_elector lead URL NAME TTL_MS FILE
// campaign(), write "TERM" to FILE, then lead until killed (the test kills it with SIGKILL).
// Exits 5 if leadership is lost meanwhile.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <sqlock/sqlock.hpp>
#include <string>
#include <thread>
#include <unistd.h>

namespace {

sqlock::leader_options options(const char* ttl_ms) {
    sqlock::leader_options o;
    o.ttl = std::chrono::milliseconds(std::stoll(ttl_ms));
    o.retry_max = std::chrono::milliseconds(20);
    return o;
}

int rounds(char** argv) {
    auto db = sqlock::connect(argv[2]);
    sqlock::leader_election e(db, argv[3], options(argv[4]));
    const int n = std::stoi(argv[5]);
    const std::string log = argv[6];
    const std::string marker = log + ".inside";
    for (int i = 0; i < n; ++i) {
        const auto term = e.campaign();
        const int fd = open(marker.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0) {
            std::cerr << "elector " << getpid() << ": another leader is inside (term " << term
                      << ")\n";
            return 3;
        }
        close(fd);
        {
            std::ofstream out(log, std::ios::app);
            out << term << " " << getpid() << "\n";
        }
        for (int k = 0; k < 3; ++k) {
            if (!e.is_leader() || e.term() != term)
                return 4;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        std::remove(marker.c_str());
        e.resign();
    }
    return 0;
}

int lead(char** argv) {
    auto db = sqlock::connect(argv[2]);
    sqlock::leader_election e(db, argv[3], options(argv[4]));
    const auto term = e.campaign();
    {
        const std::string tmp = std::string(argv[5]) + ".tmp";
        std::ofstream(tmp) << term << "\n";
        std::rename(tmp.c_str(), argv[5]);
    }
    const auto stop = e.stop_token();
    while (!stop.stop_requested())
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return 5;
}

} // namespace

int main(int argc, char** argv) {
    try {
        const std::string mode = argc > 1 ? argv[1] : "";
        if (mode == "rounds" && argc == 7)
            return rounds(argv);
        if (mode == "lead" && argc == 6)
            return lead(argv);
        std::cerr << "usage: sqlock_elector rounds URL NAME TTL_MS ROUNDS LOG\n"
                     "       sqlock_elector lead URL NAME TTL_MS FILE\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "sqlock_elector: " << e.what() << "\n";
        return 1;
    }
}
