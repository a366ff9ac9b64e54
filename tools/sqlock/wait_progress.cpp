// The progress line of a wait for a lock, on a terminal (wait_progress.hpp).
#include "wait_progress.hpp"

#include "cli.hpp"
#include "command.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <sqlock/database.hpp>
#include <unistd.h>

namespace sqlock::cli {

wait_progress::wait_progress(sqlock::database& db, const std::string& name, bool show_holder) {
    if (isatty(STDERR_FILENO) != 1)
        return;
    m_thread = std::thread([this, &db, name, show_holder] { show(db, name, show_holder); });
}

wait_progress::~wait_progress() {
    if (!m_thread.joinable())
        return;
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    m_thread.join();
    if (m_shown) {
        std::fputs("\r\033[K", stderr);
        std::fflush(stderr);
    }
}

void wait_progress::show(sqlock::database& db, const std::string& name, bool show_holder) {
    const auto start = steady::now();
    auto next = start + std::chrono::seconds(1);
    std::unique_lock lock(m_mutex);
    while (!m_wake.wait_until(lock, next, [&] { return m_stop; })) {
        lock.unlock();
        std::string holder;
        if (show_holder) {
            try {
                if (const auto h = db.find(name); h && h->held())
                    holder = "; held by " + escape_control(h->host) + ":" + std::to_string(h->pid) +
                             " for " + human_ms(h->held_for.count());
            } catch (const std::exception&) {
                // Who holds it is a courtesy; the wait goes on.
            }
        }
        lock.lock();
        if (m_stop)
            break;
        const auto waited =
            std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start);
        const std::string line = "\r\033[Ksqlock: waiting for lock \"" + readable_lock_name(name) +
                                 "\" for " + human_ms(waited.count()) + holder;
        std::fputs(line.c_str(), stderr);
        std::fflush(stderr);
        m_shown = true;
        next += std::chrono::seconds(1);
    }
}

} // namespace sqlock::cli
