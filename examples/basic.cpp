// The README's API example, compiled in CI so it cannot rot.
//   example_basic [URL]   (default: sqlite:example-locks.db)
#include <iostream>
#include <mutex>
#include <sqlock/sqlock.hpp>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
    try {
        sqlock::database db = sqlock::connect(argc > 1 ? argv[1] : "sqlite:example-locks.db");
        db.migrate(); // create/upgrade the lock tables; idempotent

        sqlock::mutex m(db, "reports:nightly",
                        {.strategy = sqlock::strategy::unique_key, .ttl = 30s});
        {
            std::unique_lock lk(m, 5s); // waits up to 5 s
            if (!lk) {
                std::cout << "someone else is running the nightly report\n";
                return 0;
            }
            // Pass the fencing token to whatever the lock protects.
            std::cout << "holding reports:nightly with token " << m.token() << "\n";
        } // released here; unlock() never throws
        std::cout << "purged " << db.reap() << " expired lock rows\n";
    } catch (const sqlock::error& e) {
        std::cerr << "sqlock error (" << sqlock::to_string(e.code()) << "): " << e.what() << "\n";
        return 1;
    }
}
