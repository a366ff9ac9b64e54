// sqlock::mutex is a standard TimedLockable type, checked at compile time.
#include <chrono>
#include <concepts>
#include <doctest/doctest.h>
#include <mutex>
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

} // namespace

TEST_CASE("strategy names round-trip") {
    using sqlock::strategy;
    for (const auto s :
         {strategy::unique_key, strategy::select_for_update, strategy::optimistic_version})
        CHECK(sqlock::parse_strategy(sqlock::to_string(s)) == s);
    CHECK_THROWS_AS(sqlock::parse_strategy("advisory"), sqlock::error);
}
