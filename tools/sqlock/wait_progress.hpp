// The line `sqlock run` shows on a terminal while it waits for its lock.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace sqlock {
class database;
}

namespace sqlock::cli {

/// `sqlock run` waiting for its lock on a terminal: one line on stderr, rewritten every second
/// (\r), that says how long it has waited and (a mutex) who holds the lock and for how long;
/// cleared when the wait ends (destructor). Nothing when stderr is not a terminal, and nothing
/// for a wait that ends within the first second.
class wait_progress {
public:
    /// Starts showing the wait for lock `name` of `db` (which must outlive this); with
    /// `show_holder`, asks the database who holds it every second.
    wait_progress(sqlock::database& db, const std::string& name, bool show_holder);
    /// Stops, and clears the line if one was shown.
    ~wait_progress();
    wait_progress(const wait_progress&) = delete;
    wait_progress& operator=(const wait_progress&) = delete;

private:
    /// The thread: rewrites the line every second until told to stop.
    void show(sqlock::database& db, const std::string& name, bool show_holder);

    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_stop = false;
    bool m_shown = false;
    std::thread m_thread; ///< last: started once the rest is ready
};

} // namespace sqlock::cli
