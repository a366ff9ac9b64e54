// Test helper process: takes lock NAME ITERATIONS times and proves nobody else was inside.
//   sqlock_contender URL NAME TTL_MS ITERATIONS LOG STRATEGY
// While holding the lock it creates LOG.inside with O_EXCL (failing if another holder is in
// its critical section), appends "token pid" to LOG, and removes the marker before unlocking.
// Exit codes: 0 ok, 3 overlap seen, 4 unlock reported a failure, 2 usage, 1 other error.
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <iostream>
#include <random>
#include <sqlock/sqlock.hpp>
#include <string>
#include <thread>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc != 7) {
        std::cerr << "usage: sqlock_contender URL NAME TTL_MS ITERATIONS LOG STRATEGY\n";
        return 2;
    }
    try {
        auto db = sqlock::connect(argv[1]);
        sqlock::mutex_options o;
        o.ttl = std::chrono::milliseconds(std::stoll(argv[3]));
        o.strategy = sqlock::parse_strategy(argv[6]);
        sqlock::mutex m(db, argv[2], o);
        const int iterations = std::stoi(argv[4]);
        const std::string log = argv[5];
        const std::string marker = log + ".inside";
        std::mt19937 rng{std::random_device{}()};
        for (int i = 0; i < iterations; ++i) {
            m.lock();
            const int fd = open(marker.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
            if (fd < 0) {
                std::cerr << "OVERLAP: " << marker << " exists (errno " << errno << ")\n";
                return 3;
            }
            close(fd);
            const std::string line =
                std::to_string(m.token()) + " " + std::to_string(getpid()) + "\n";
            const int out = open(log.c_str(), O_CREAT | O_APPEND | O_WRONLY, 0644);
            if (out < 0 ||
                write(out, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
                return 1;
            close(out);
            std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 800));
            unlink(marker.c_str());
            m.unlock();
            if (!m.last_error().empty()) {
                std::cerr << "unlock failed: " << m.last_error() << "\n";
                return 4;
            }
        }
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "contender: " << e.what() << "\n";
        return 1;
    }
}
