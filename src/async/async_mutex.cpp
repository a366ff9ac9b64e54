// The compiled members of sqlock/async.hpp's classes: the pool handle, the guard's readers and
// background release, and async_mutex's set-up and cancellation.
#include "async/lockable.hpp"
#include "async/primitive_slots.hpp"
#include "locks/leader_terms.hpp"
#include "sqlock/async.hpp"

namespace sqlock {

async_workers::async_workers() : m_pool(detail::worker_pool::shared()) {}

async_workers::async_workers(std::size_t threads)
    : m_pool(std::make_shared<detail::worker_pool>(threads)) {}

std::size_t async_workers::size() const noexcept {
    return m_pool->size();
}

// --- async_guard ---------------------------------------------------------------------------------

namespace {

/// Gives `grant` back in the background, as outstanding work of `executor` until it is done, so
/// that the guard's io_context::run() does not return (and the program end) before the release.
void release_in_background(std::shared_ptr<detail::async_grant> grant,
                           const asio::any_io_executor& executor) noexcept {
    std::function<void(loss_reason)> done;
    try {
        if (executor)
            done = [work = detail::tracked(executor)](loss_reason) {
            };
    } catch (...) {
        // released all the same, only not waited for
    }
    detail::async_calls::release(std::move(grant), std::move(done));
}

/// The executor whose fibers may run a lock's acquires and releases: none (worker threads)
/// when the caller asked for workers.
asio::any_io_executor fiber_host(const async_options& async,
                                 const asio::any_io_executor& executor) {
    return async.on_workers ? asio::any_io_executor{} : executor;
}

} // namespace

async_guard& async_guard::operator=(async_guard&& other) noexcept {
    if (this != &other) {
        if (m_grant)
            release_in_background(std::move(m_grant), m_executor);
        m_grant = std::move(other.m_grant);
        m_executor = std::move(other.m_executor);
    }
    return *this;
}

async_guard::~async_guard() {
    if (m_grant)
        release_in_background(std::move(m_grant), m_executor);
}

bool async_guard::owns_lock() const noexcept {
    return m_grant && m_grant->owns_lock();
}

std::int64_t async_guard::token() const {
    if (!m_grant)
        throw error(errc::lock_lost, "token() of an empty sqlock::async_guard");
    return m_grant->token();
}

loss_reason async_guard::lost_reason() const noexcept {
    return m_grant ? m_grant->lost_reason() : loss_reason::none;
}

std::stop_token async_guard::stop_token() const noexcept {
    return m_grant ? m_grant->stop_token() : std::stop_token{};
}

std::chrono::steady_clock::time_point async_guard::lease_end() const noexcept {
    return m_grant ? m_grant->lease_end() : std::chrono::steady_clock::time_point::min();
}

const std::string& async_guard::name() const noexcept {
    static const std::string none;
    return m_grant ? m_grant->name() : none;
}

// --- async_mutex ---------------------------------------------------------------------------------

async_mutex::async_mutex(executor_type executor, database db, std::string name,
                         mutex_options options, async_options async)
    : m_executor(std::move(executor)),
      m_lockable(detail::make_mutex_lockable(std::move(db), std::move(name), std::move(options),
                                             detail::async_access::pool(async.workers),
                                             fiber_host(async, m_executor))) {}

async_mutex::~async_mutex() {
    m_lockable->cancel_all();
}

const std::string& async_mutex::name() const noexcept {
    return m_lockable->name();
}

void async_mutex::cancel() noexcept {
    m_lockable->cancel_all();
}

// --- async_leader_election -----------------------------------------------------------------------

async_leader_election::async_leader_election(executor_type executor, database db, std::string name,
                                             leader_options options, async_options async)
    : m_executor(std::move(executor)),
      m_lockable(detail::make_mutex_lockable(
          std::move(db), std::move(name), detail::term_options(options),
          detail::async_access::pool(async.workers), fiber_host(async, m_executor))) {}

async_leader_election::~async_leader_election() {
    m_lockable->cancel_all();
}

const std::string& async_leader_election::name() const noexcept {
    return m_lockable->name();
}

void async_leader_election::cancel() noexcept {
    m_lockable->cancel_all();
}

} // namespace sqlock

namespace sqlock {

// --- async_semaphore -----------------------------------------------------------------------------

async_semaphore::async_semaphore(executor_type executor, database db, std::string name,
                                 std::int64_t permits, semaphore_options options,
                                 async_options async)
    : m_executor(std::move(executor)),
      m_lockable(detail::make_semaphore_lockable(
          std::move(db), std::move(name), permits, std::move(options),
          detail::async_access::pool(async.workers), fiber_host(async, m_executor))),
      m_permits(permits) {}

async_semaphore::~async_semaphore() {
    m_lockable->cancel_all();
}

const std::string& async_semaphore::name() const noexcept {
    return m_lockable->name();
}

void async_semaphore::cancel() noexcept {
    m_lockable->cancel_all();
}

// --- async_shared_mutex --------------------------------------------------------------------------

async_shared_mutex::async_shared_mutex(executor_type executor, database db, std::string name,
                                       mutex_options options, std::int64_t max_readers,
                                       async_options async)
    : m_executor(std::move(executor)),
      m_lockable(detail::make_shared_mutex_lockable(
          std::move(db), std::move(name), std::move(options), max_readers,
          detail::async_access::pool(async.workers), fiber_host(async, m_executor))),
      m_max_readers(max_readers) {}

async_shared_mutex::~async_shared_mutex() {
    m_lockable->cancel_all();
}

const std::string& async_shared_mutex::name() const noexcept {
    return m_lockable->name();
}

void async_shared_mutex::cancel() noexcept {
    m_lockable->cancel_all();
}

} // namespace sqlock
