// sqlock_handoff_waiter — the C++ side of tools/bench/asyncio_bench.py's handoff comparison: a
// process that waits for one lock with sqlock::mutex::lock() whenever it is told to, and says
// when it got it (CLOCK_MONOTONIC, one clock for every process of the host).
//
//   sqlock_handoff_waiter URL NAME STRATEGY
//
// Reads commands on stdin, one per line: "go" prints "waiting", then locks (blocking, no
// deadline), prints "granted <steady ns> <token>", unlocks and prints "released"; "quit" (or
// the end of input) exits. Errors go to stderr with exit status 1.
#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <sqlock/sqlock.hpp>
#include <stdexcept>
#include <string>

namespace {

sqlock::strategy strategy_of(const std::string& name) {
    if (name == "select_for_update")
        return sqlock::strategy::select_for_update;
    if (name == "optimistic_version")
        return sqlock::strategy::optimistic_version;
    if (name == "unique_key")
        return sqlock::strategy::unique_key;
    throw std::invalid_argument("unknown strategy " + name);
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::cerr << "usage: sqlock_handoff_waiter URL NAME STRATEGY\n";
        return 2;
    }
    try {
        auto db = sqlock::connect(argv[1]);
        sqlock::mutex m(db, argv[2], {.strategy = strategy_of(argv[3])});
        std::string command;
        while (std::getline(std::cin, command) && command == "go") {
            std::cout << "waiting" << std::endl;
            m.lock();
            // steady_clock is CLOCK_MONOTONIC here (libstdc++ on Linux), as Python's
            // time.monotonic_ns() in the driver.
            const auto granted = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count();
            const std::int64_t token = m.token();
            m.unlock();
            std::cout << "granted " << granted << " " << token << "\nreleased" << std::endl;
        }
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "sqlock_handoff_waiter: " << e.what() << "\n";
        return 1;
    }
}
