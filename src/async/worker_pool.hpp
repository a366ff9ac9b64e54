// Internal: the bounded thread pool behind sqlock::async_workers. Asynchronous lock operations
// run the blocking parts of their work here (drivers without a non-blocking interface, waits in
// SQLite's file locks): acquires on `size` threads in the order they came, releases on up to
// `size` threads of their own, so that a release never waits behind acquires (which may wait
// for it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace sqlock::detail {

/// A FIFO of jobs run by up to `limit` threads, started as jobs arrive and no thread is idle.
class job_lane {
public:
    explicit job_lane(std::size_t limit) : m_state(std::make_shared<state>(limit)) {}
    /// Stops the threads once their current job ends and joins them; a thread of this lane
    /// that destroys it (its job dropped the last reference) is detached instead. Jobs still
    /// queued are dropped unrun.
    ~job_lane();
    job_lane(const job_lane&) = delete;
    job_lane& operator=(const job_lane&) = delete;

    /// Queues `job` (which must not throw); starts a thread if none is idle and the limit
    /// allows. Throws std::system_error when a thread cannot be started and none runs.
    void post(std::function<void()> job);

private:
    struct state {
        explicit state(std::size_t n) : limit(n) {}
        const std::size_t limit;
        std::mutex mutex;
        std::condition_variable cv;
        std::deque<std::function<void()>> jobs;
        std::vector<std::thread> threads;
        std::size_t idle = 0;
        bool stopping = false;
    };
    /// A thread's loop: runs jobs until the lane stops.
    static void run(const std::shared_ptr<state>& s);

    std::shared_ptr<state> m_state;
};

/// One thread that runs jobs at their times (steady clock), started on first use.
class timer_lane {
public:
    timer_lane() : m_state(std::make_shared<state>()) {}
    /// Stops the thread and joins it (detaches it when it is the caller); jobs not yet due are
    /// dropped unrun.
    ~timer_lane();
    timer_lane(const timer_lane&) = delete;
    timer_lane& operator=(const timer_lane&) = delete;

    /// Runs `job` (which must not throw) at `when` or soon after. Throws std::system_error when
    /// the thread cannot be started.
    void at(std::chrono::steady_clock::time_point when, std::function<void()> job);

private:
    struct state {
        std::mutex mutex;
        std::condition_variable cv;
        std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> jobs;
        std::thread thread;
        bool stopping = false;
    };
    static void run(const std::shared_ptr<state>& s);

    std::shared_ptr<state> m_state;
};

/// The pool: one lane for acquires, one for releases (as many threads, started as releases
/// come), one thread for the deadlines of acquires waiting in a local line (local_line.hpp).
class worker_pool {
public:
    /// `threads` for acquires: 1 to max_threads (errc::invalid_argument otherwise).
    explicit worker_pool(std::size_t threads);

    std::size_t size() const noexcept { return m_size; }
    /// Runs `job` (which must not throw) on an acquire thread, after those queued before it.
    void run_acquire(std::function<void()> job) { m_acquires.post(std::move(job)); }
    /// Runs `job` (which must not throw) on a release thread, after those queued before it
    /// started.
    void run_release(std::function<void()> job) { m_releases.post(std::move(job)); }
    /// Runs `job` (which must not throw) at `when` on the timer thread.
    void run_at(std::chrono::steady_clock::time_point when, std::function<void()> job) {
        m_timers.at(when, std::move(job));
    }

    /// The process-wide pool (async_workers::default_size threads), never destroyed: an exit
    /// does not wait for its threads.
    static const std::shared_ptr<worker_pool>& shared();

    static constexpr std::size_t max_threads = 1024;

private:
    std::size_t m_size;
    job_lane m_acquires;
    job_lane m_releases;
    timer_lane m_timers;
};

} // namespace sqlock::detail
