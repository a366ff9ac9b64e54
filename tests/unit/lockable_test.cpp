// sqlock::mutex and sqlock::semaphore are standard TimedLockable types, checked at compile
// time; the semaphore also has std::counting_semaphore's words.
#include <chrono>
#include <concepts>
#include <doctest/doctest.h>
#include <mutex>
#include <shared_mutex>
#include <sqlock/sqlock.hpp>

namespace {

template <class M>
concept timed_lockable = requires(M m, std::chrono::milliseconds d,
                                  std::chrono::steady_clock::time_point tp,
                                  std::chrono::system_clock::time_point sys) {
    {m.lock()};
    {m.unlock()};
    { m.try_lock() } -> std::convertible_to<bool>;
    { m.try_lock_for(d) } -> std::convertible_to<bool>;
    { m.try_lock_until(tp) } -> std::convertible_to<bool>;
    { m.try_lock_until(sys) } -> std::convertible_to<bool>;
};

static_assert(timed_lockable<sqlock::mutex>);
static_assert(timed_lockable<std::timed_mutex>); // the concept itself is right
static_assert(noexcept(std::declval<sqlock::mutex&>().unlock()));
static_assert(!std::copy_constructible<sqlock::mutex>);
static_assert(std::derived_from<sqlock::error, std::exception>);

static_assert(timed_lockable<sqlock::semaphore>);
static_assert(noexcept(std::declval<sqlock::semaphore&>().unlock()));
static_assert(noexcept(std::declval<sqlock::semaphore&>().release()));
static_assert(!std::copy_constructible<sqlock::semaphore>);
static_assert(requires(sqlock::semaphore s, std::chrono::milliseconds d,
                       std::chrono::system_clock::time_point tp) {
    {s.acquire()};
    { s.try_acquire() } -> std::same_as<bool>;
    { s.try_acquire_for(d) } -> std::same_as<bool>;
    { s.try_acquire_until(tp) } -> std::same_as<bool>;
    {s.release()};
});
template <class M>
concept shared_timed_lockable = timed_lockable<M> &&
    requires(M m, std::chrono::milliseconds d, std::chrono::steady_clock::time_point tp,
             std::chrono::system_clock::time_point sys) {
    {m.lock_shared()};
    {m.unlock_shared()};
    { m.try_lock_shared() } -> std::convertible_to<bool>;
    { m.try_lock_shared_for(d) } -> std::convertible_to<bool>;
    { m.try_lock_shared_until(tp) } -> std::convertible_to<bool>;
    { m.try_lock_shared_until(sys) } -> std::convertible_to<bool>;
};
static_assert(shared_timed_lockable<std::shared_timed_mutex>); // the concept itself is right
static_assert(shared_timed_lockable<sqlock::shared_mutex>);
static_assert(noexcept(std::declval<sqlock::shared_mutex&>().unlock()));
static_assert(noexcept(std::declval<sqlock::shared_mutex&>().unlock_shared()));
static_assert(!std::copy_constructible<sqlock::shared_mutex>);
static_assert(std::is_constructible_v<std::shared_lock<sqlock::shared_mutex>, sqlock::shared_mutex&,
                                      std::chrono::milliseconds>);
static_assert(std::is_constructible_v<std::unique_lock<sqlock::shared_mutex>, sqlock::shared_mutex&,
                                      std::chrono::milliseconds>);

// std::unique_lock and std::scoped_lock instantiate with it.
static_assert(std::is_constructible_v<std::unique_lock<sqlock::semaphore>, sqlock::semaphore&,
                                      std::chrono::milliseconds>);
static_assert(std::is_constructible_v<std::scoped_lock<sqlock::semaphore, sqlock::mutex>,
                                      sqlock::semaphore&, sqlock::mutex&>);

} // namespace

TEST_CASE("strategy names round-trip") {
    using sqlock::strategy;
    for (const auto s :
         {strategy::unique_key, strategy::select_for_update, strategy::optimistic_version})
        CHECK(sqlock::parse_strategy(sqlock::to_string(s)) == s);
    CHECK_THROWS_AS(sqlock::parse_strategy("advisory"), sqlock::error);
}
