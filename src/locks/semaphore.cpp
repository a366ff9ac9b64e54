// sqlock::semaphore: a permit_pool (locks/permits.hpp) of permits "NAME<0x1f>permit K".
#include "sqlock/semaphore.hpp"

#include "locks/handle_access.hpp"
#include "locks/mutex_access.hpp"
#include "locks/permits.hpp"

namespace sqlock {

namespace detail {

class semaphore_impl : public permit_pool {
public:
    using permit_pool::permit_pool;
};

} // namespace detail

semaphore::semaphore(database db, std::string name, std::int64_t permits, semaphore_options options)
    : m_impl(std::make_unique<detail::semaphore_impl>(std::move(db), std::move(name), permits,
                                                      options, "permit", "semaphore")) {}

semaphore::~semaphore() = default; // each permit's mutex gives back what it holds

void semaphore::lock() {
    try_lock_until_steady(std::chrono::steady_clock::time_point::max());
}

bool semaphore::try_lock() {
    return try_lock_until_steady(std::chrono::steady_clock::time_point::min());
}

bool semaphore::try_lock_until_steady(std::chrono::steady_clock::time_point deadline) {
    return m_impl->acquire(deadline);
}

void semaphore::unlock() noexcept {
    m_impl->release("unlock() of semaphore");
}

bool semaphore::owns_lock() const noexcept {
    const auto k = m_impl->held_by_me();
    return k && m_impl->permit(*k).owns_lock();
}

loss_reason semaphore::lost_reason() const noexcept {
    const auto k = m_impl->held_by_me();
    return k ? m_impl->permit(*k).lost_reason() : loss_reason::none;
}

std::stop_token semaphore::stop_token() const noexcept {
    const auto k = m_impl->held_by_me();
    return k ? m_impl->permit(*k).stop_token() : std::stop_token{};
}

std::int64_t semaphore::token() const {
    const auto k = m_impl->held_by_me();
    if (!k)
        throw error(errc::lock_lost, "token() of semaphore \"" + m_impl->name() +
                                         "\": the calling thread holds no permit");
    return m_impl->permit(*k).token();
}

std::int64_t semaphore::permit() const {
    const auto k = m_impl->held_by_me();
    if (!k)
        throw error(errc::lock_lost, "permit() of semaphore \"" + m_impl->name() +
                                         "\": the calling thread holds no permit");
    return static_cast<std::int64_t>(*k);
}

std::int64_t semaphore::hold_count() const noexcept {
    const auto k = m_impl->held_by_me();
    return k ? m_impl->permit(*k).hold_count() : 0;
}

const std::string& semaphore::name() const noexcept {
    return m_impl->name();
}

std::int64_t semaphore::permits() const noexcept {
    return static_cast<std::int64_t>(m_impl->size());
}

loss_reason semaphore::last_loss() const noexcept {
    const auto k = m_impl->last_released();
    return k ? m_impl->permit(*k).last_loss() : loss_reason::none;
}

std::string semaphore::last_error() const {
    return m_impl->last_error();
}

} // namespace sqlock

namespace sqlock::detail {

void handle_access::own_by_handle(semaphore& s) noexcept {
    s.m_impl->own_by_handle(nullptr);
}

bool handle_access::try_lock_cancellable(semaphore& s,
                                         std::chrono::steady_clock::time_point deadline,
                                         const std::stop_token& stop) {
    return s.m_impl->acquire(deadline, &stop);
}

std::chrono::steady_clock::time_point handle_access::lease_end(const semaphore& s) noexcept {
    const auto k = s.m_impl->held_by_me();
    return k ? mutex_access::lease_end(s.m_impl->permit(*k))
             : std::chrono::steady_clock::time_point::min();
}

} // namespace sqlock::detail
