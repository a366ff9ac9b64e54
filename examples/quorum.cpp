// A quorum lock over three databases, and a fenced write in the caller's own database. No
// single member can prove that a majority holds the lock, so the resource fences for itself: it
// keeps the highest token that wrote it and refuses lower ones, in the statement that writes
// (docs: guides/quorum.md). SQLite members keep the example self-contained; a real quorum's
// members are independent PostgreSQL or MariaDB servers.
#include <cstdint>
#include <iostream>
#include <sqlite3.h>
#include <sqlock/sqlock.hpp>
#include <vector>

using namespace std::chrono_literals;

/// The caller's own table: one row holding the value and the highest token that wrote it.
/// A write with a token below that changes nothing.
bool fenced_write(sqlite3* own, std::int64_t token, const char* value) {
    sqlite3_stmt* update = nullptr;
    sqlite3_prepare_v2(own, "UPDATE report SET value = ?1, token = ?2 WHERE id = 1 AND token <= ?2",
                       -1, &update, nullptr);
    sqlite3_bind_text(update, 1, value, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(update, 2, token);
    const bool written = sqlite3_step(update) == SQLITE_DONE && sqlite3_changes(own) == 1;
    sqlite3_finalize(update);
    return written;
}

int main() {
    std::vector<sqlock::database> members;
    for (const char* url : {"sqlite:quorum-a.db", "sqlite:quorum-b.db", "sqlite:quorum-c.db"}) {
        members.push_back(sqlock::connect(url));
        members.back().migrate();
    }
    sqlite3* own = nullptr;
    sqlite3_open("quorum-resource.db", &own);
    sqlite3_exec(own,
                 "CREATE TABLE IF NOT EXISTS report (id INTEGER PRIMARY KEY, value TEXT, "
                 "token INTEGER NOT NULL); INSERT OR IGNORE INTO report VALUES (1, '', 0);",
                 nullptr, nullptr, nullptr);

    const sqlock::quorum_options lease{.ttl = 600ms, .member_timeout = 200ms};
    sqlock::quorum_mutex slow(members, "report", lease);
    slow.lock();
    const auto stale_token = slow.token(); // ... and then it pauses past its lease

    sqlock::quorum_mutex fast(members, "report", lease);
    fast.lock(); // granted once the slow holder's rows stood unchanged for its TTL
    std::cout << "new holder writes:   " << fenced_write(own, fast.token(), "fresh") << "\n";
    std::cout << "stale holder writes: " << fenced_write(own, stale_token, "stale")
              << " (refused)\n";
    fast.unlock();
    slow.unlock(); // its rows are the new holder's now: nothing is given back
    sqlite3_close(own);
}
