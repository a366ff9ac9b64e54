#include "sqlock/reaper.hpp"

#include "sqlock/error.hpp"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace sqlock {

struct reaper::state {
    state(database d, std::chrono::milliseconds every, reap_options o)
        : db(std::move(d)), interval(every), options(o) {}

    database db;
    std::chrono::milliseconds interval;
    reap_options options;
    mutable std::mutex mutex;
    std::condition_variable cv;
    bool stopping = false;
    std::size_t deleted = 0;
    std::size_t passes = 0;
    std::string last_error;
    std::thread thread;

    void run() {
        std::unique_lock lock(mutex);
        std::optional<std::chrono::steady_clock::time_point> pruned;
        while (!stopping) {
            lock.unlock();
            std::string failure;
            std::size_t n = 0;
            try {
                // The run ledger's retention is days: prune it once every 10 minutes, not at
                // every (possibly very frequent) pass over the leases.
                auto pass = options;
                const auto now = std::chrono::steady_clock::now();
                pass.prune_history =
                    options.prune_history && (!pruned || now - *pruned >= std::chrono::minutes(10));
                if (pass.prune_history)
                    pruned = now;
                n = db.reap(pass).deleted;
            } catch (const std::exception& e) {
                failure = e.what();
            }
            lock.lock();
            deleted += n;
            ++passes;
            last_error = failure;
            cv.wait_for(lock, interval, [this] { return stopping; });
        }
    }
};

reaper::reaper(database db, std::chrono::milliseconds interval, reap_options options)
    : m_state(std::make_unique<state>(std::move(db), interval, options)) {
    if (interval.count() <= 0)
        throw error(errc::invalid_argument, "reaper interval must be positive");
    m_state->thread = std::thread([s = m_state.get()] { s->run(); });
}

reaper::~reaper() {
    {
        std::lock_guard lock(m_state->mutex);
        m_state->stopping = true;
    }
    m_state->cv.notify_all();
    m_state->thread.join();
}

std::size_t reaper::total_deleted() const {
    std::lock_guard lock(m_state->mutex);
    return m_state->deleted;
}

std::size_t reaper::passes() const {
    std::lock_guard lock(m_state->mutex);
    return m_state->passes;
}

std::string reaper::last_error() const {
    std::lock_guard lock(m_state->mutex);
    return m_state->last_error;
}

} // namespace sqlock
