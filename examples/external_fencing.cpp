// Fencing a resource outside the database: the resource remembers the highest token it has
// seen and refuses writes that carry a lower one. `sqlock run` hands the token to a command as
// $SQLOCK_TOKEN; a library user gets it from mutex::token().
//
// The rule, for any storage you control (object store metadata, a file header, another
// service): accept a write with token T only if T >= the highest token accepted so far, and
// record T atomically with the write. A holder that paused, lost its lease and woke up after a
// newer holder wrote is then refused, even though it still believes it holds the lock.
#include <cstdint>
#include <iostream>
#include <mutex>
#include <sqlock/sqlock.hpp>
#include <string>

using namespace std::chrono_literals;

/// A stand-in for the external resource. In real life the check-and-record happens where the
/// data lives (a conditional put, a compare-and-swap, a row with the last token).
class fenced_store {
public:
    bool write(std::int64_t token, const std::string& value) {
        std::lock_guard guard(m_mutex);
        if (token < m_highest_token)
            return false; // a newer holder has written: this one is stale
        m_highest_token = token;
        m_value = value;
        return true;
    }

private:
    std::mutex m_mutex;
    std::int64_t m_highest_token = 0;
    std::string m_value;
};

int main() {
    auto db = sqlock::connect("sqlite:external-fencing-example.db");
    db.migrate();
    fenced_store store;

    const sqlock::mutex_options lease{.ttl = 500ms};
    sqlock::mutex slow(db, "report", lease);
    slow.lock();
    const auto stale_token = slow.token();

    sqlock::mutex fast(db, "report", lease);
    fast.lock(); // granted once the slow holder's lease ran out
    std::cout << "new holder writes:   " << store.write(fast.token(), "fresh") << "\n";
    std::cout << "stale holder writes: " << store.write(stale_token, "stale") << " (refused)\n";
    fast.unlock();
    slow.unlock(); // reports the loss in last_error(), never throws
}
