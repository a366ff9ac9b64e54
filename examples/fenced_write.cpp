// Fencing inside your own transaction (SQLite flavour; PostgreSQL and MariaDB work the same way
// with sqlock_holds()). A worker takes a lease, then updates a row of *its own* table in *its
// own* transaction on *its own* connection, on condition that it still holds the lease with its
// token. Once the lease was lost and taken over, the same write changes nothing.
//   example_fenced_write [DB_FILE]    (default: fenced-example.db)
#include <iostream>
#include <sqlite3.h>
#include <sqlock/sqlock.hpp>
#include <string>

using namespace std::chrono_literals;

namespace {

/// The application's write: one row, only while `lock` is held with `token`.
int fenced_increment(sqlite3* app, const sqlock::database& locks, const std::string& lock,
                     std::int64_t token) {
    const std::string sql = "UPDATE counters SET value = value + 1 WHERE id = 1 AND " +
                            locks.fencing_condition("?1", "?2");
    sqlite3_exec(app, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(app, sql.c_str(), -1, &stmt, nullptr);
    sqlite3_bind_text(stmt, 1, lock.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(stmt, 2, token);
    sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    const int changed = sqlite3_changes(app);
    sqlite3_exec(app, "COMMIT", nullptr, nullptr, nullptr);
    return changed;
}

} // namespace

int main(int argc, char** argv) {
    const std::string file = argc > 1 ? argv[1] : "fenced-example.db";
    try {
        auto locks = sqlock::connect("sqlite:" + file);
        locks.migrate();

        sqlite3* app = nullptr; // the application's own connection to the same database
        sqlite3_open(file.c_str(), &app);
        sqlite3_busy_timeout(app, 5000);
        sqlite3_exec(app,
                     "CREATE TABLE IF NOT EXISTS counters (id INTEGER PRIMARY KEY, value INT);"
                     "INSERT OR IGNORE INTO counters VALUES (1, 0);",
                     nullptr, nullptr, nullptr);

        const sqlock::mutex_options lease{.strategy = sqlock::strategy::unique_key, .ttl = 1s};
        sqlock::mutex first(locks, "counter-writer", lease);
        first.lock();
        const auto token = first.token();
        std::cout << "holder 1 (token " << token
                  << ") writes: " << fenced_increment(app, locks, "counter-writer", token)
                  << " row\n";

        std::cout << "holder 1 stalls past its 1 s lease; holder 2 takes over...\n";
        sqlock::mutex second(locks, "counter-writer", lease);
        second.lock(); // waits until the first lease has expired
        std::cout << "holder 2 (token " << second.token()
                  << ") writes: " << fenced_increment(app, locks, "counter-writer", second.token())
                  << " row\n";
        std::cout << "holder 1 wakes up and writes with its old token: "
                  << fenced_increment(app, locks, "counter-writer", token) << " rows (fenced)\n";
        first.unlock();
        std::cout << "holder 1's release: " << first.last_error() << "\n";
        second.unlock();
        sqlite3_close(app);
    } catch (const sqlock::error& e) {
        std::cerr << "sqlock: " << e.what() << "\n";
        return 1;
    }
}
