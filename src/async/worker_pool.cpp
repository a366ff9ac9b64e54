#include "async/worker_pool.hpp"

#include "sqlock/async.hpp"
#include "sqlock/error.hpp"

#include <string>

namespace sqlock::detail {

job_lane::~job_lane() {
    std::vector<std::thread> threads;
    std::deque<std::function<void()>> dropped; // destroyed outside the lock
    {
        std::lock_guard lock(m_state->mutex);
        m_state->stopping = true;
        dropped.swap(m_state->jobs);
        threads.swap(m_state->threads);
    }
    m_state->cv.notify_all();
    for (auto& t : threads) {
        if (t.get_id() == std::this_thread::get_id())
            t.detach(); // our own job dropped the pool: the loop ends when the job returns
        else
            t.join();
    }
}

void job_lane::post(std::function<void()> job) {
    std::unique_lock lock(m_state->mutex);
    m_state->jobs.push_back(std::move(job));
    if (m_state->idle == 0 && m_state->threads.size() < m_state->limit) {
        try {
            m_state->threads.emplace_back([s = m_state] { run(s); });
        } catch (...) {
            if (m_state->threads.empty()) {
                m_state->jobs.pop_back();
                throw;
            }
            // The threads there are will get to it.
        }
    }
    lock.unlock();
    m_state->cv.notify_one();
}

void job_lane::run(const std::shared_ptr<state>& s) {
    std::unique_lock lock(s->mutex);
    for (;;) {
        ++s->idle;
        s->cv.wait(lock, [&] { return s->stopping || !s->jobs.empty(); });
        --s->idle;
        if (s->stopping)
            return;
        auto job = std::move(s->jobs.front());
        s->jobs.pop_front();
        lock.unlock();
        job();
        job = nullptr; // may drop the last reference to the pool (see ~job_lane)
        lock.lock();
    }
}

timer_lane::~timer_lane() {
    std::thread thread;
    decltype(state::jobs) dropped; // destroyed outside the lock
    {
        std::lock_guard lock(m_state->mutex);
        m_state->stopping = true;
        dropped.swap(m_state->jobs);
        thread.swap(m_state->thread);
    }
    m_state->cv.notify_all();
    if (!thread.joinable())
        return;
    if (thread.get_id() == std::this_thread::get_id())
        thread.detach(); // our own job dropped the pool: the loop ends when the job returns
    else
        thread.join();
}

void timer_lane::at(std::chrono::steady_clock::time_point when, std::function<void()> job) {
    std::unique_lock lock(m_state->mutex);
    m_state->jobs.emplace(when, std::move(job));
    if (!m_state->thread.joinable())
        m_state->thread = std::thread([s = m_state] { run(s); });
    lock.unlock();
    m_state->cv.notify_one();
}

void timer_lane::run(const std::shared_ptr<state>& s) {
    std::unique_lock lock(s->mutex);
    while (!s->stopping) {
        if (s->jobs.empty()) {
            s->cv.wait(lock);
            continue;
        }
        const auto first = s->jobs.begin();
        if (first->first > std::chrono::steady_clock::now()) {
            s->cv.wait_until(lock, first->first);
            continue;
        }
        auto job = std::move(first->second);
        s->jobs.erase(first);
        lock.unlock();
        job();
        job = nullptr; // may drop the last reference to the pool (see ~timer_lane)
        lock.lock();
    }
}

namespace {

std::size_t checked_size(std::size_t threads) {
    if (threads == 0 || threads > worker_pool::max_threads)
        throw error(errc::invalid_argument, "async_workers needs 1 to " +
                                                std::to_string(worker_pool::max_threads) +
                                                " threads, got " + std::to_string(threads));
    return threads;
}

} // namespace

worker_pool::worker_pool(std::size_t threads)
    : m_size(checked_size(threads)), m_acquires(m_size), m_releases(m_size) {}

const std::shared_ptr<worker_pool>& worker_pool::shared() {
    static const auto* pool = new std::shared_ptr<worker_pool>(
        std::make_shared<worker_pool>(async_workers::default_size));
    return *pool;
}

} // namespace sqlock::detail
