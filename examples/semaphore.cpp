// The README's semaphore example, compiled and run in CI so it cannot rot: eight workers (one
// thread each here; processes on many hosts in real life) share 3 permits of "exports".
//   example_semaphore [URL]   (default: sqlite:example-semaphore.db)
#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <sqlock/sqlock.hpp>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
    try {
        sqlock::database db = sqlock::connect(argc > 1 ? argv[1] : "sqlite:example-semaphore.db");
        db.migrate();

        std::atomic<int> running{0};
        std::atomic<int> most{0};
        std::vector<std::thread> workers;
        for (int w = 0; w < 8; ++w) {
            workers.emplace_back([&] {
                // README-BEGIN semaphore
                sqlock::semaphore exports(db, "exports", 3, {.ttl = 30s, .renew = true});
                std::unique_lock permit(exports); // waits for one of the 3 permits, in turn
                // exports.permit() is 0, 1 or 2; exports.token() fences what this holder writes.
                // README-END semaphore
                const int now = ++running;
                int seen = most.load();
                while (now > seen && !most.compare_exchange_weak(seen, now)) {
                }
                std::this_thread::sleep_for(50ms); // the export
                --running;
            }); // the permit goes back here
        }
        for (auto& w : workers)
            w.join();
        std::cout << "8 exports ran, at most " << most.load() << " at once\n";
    } catch (const sqlock::error& e) {
        std::cerr << "sqlock error (" << sqlock::to_string(e.code()) << "): " << e.what() << "\n";
        return 1;
    }
}
