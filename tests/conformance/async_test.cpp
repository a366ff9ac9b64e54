// The asynchronous locks (sqlock/async.hpp) on every backend x strategy: grant, timed try,
// cancellation (never a lock left held), loss cancelling the work it guards, fencing across
// sync and async holders, and a grant that moves between threads.
#include "backend_fixture.hpp"

#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <atomic>
#include <doctest/doctest.h>
#include <future>
#include <sqlock/async.hpp>
#include <thread>

using namespace std::chrono_literals;
using test::db;
using test::unique_name;

namespace {

/// An io_context run by a thread of its own for the length of a test. Its end waits for the
/// work still outstanding (a completion a worker thread is posting counts as work until the
/// post returned), rather than stopping the io_context under it.
struct io_thread {
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::thread thread{[this] {
        io.run();
    }};
    ~io_thread() {
        work.reset();
        thread.join();
    }
};

// A completion's exception is looked at on the thread that ran the handler, and only what it
// said reaches the test's thread: the exception object may be freed by whichever thread drops
// its last reference, through counts inside libstdc++ that ThreadSanitizer cannot see.

/// How an operation ended, read in its completion handler.
struct fate {
    bool failed = false;  ///< it completed with an exception
    bool aborted = false; ///< ... std::system_error(operation_aborted)
    std::string message;  ///< ... its what()
};

fate fate_of(const std::exception_ptr& e) {
    fate f;
    try {
        if (e)
            std::rethrow_exception(e);
    } catch (const std::system_error& s) {
        f = {true, s.code() == asio::error::operation_aborted, s.what()};
    } catch (const std::exception& x) {
        f = {true, false, x.what()};
    }
    return f;
}

/// What an acquire's callback completion delivered.
struct outcome {
    fate how;
    sqlock::async_guard guard;
};

/// True when another handle takes `name` at once (one attempt), then gives it back.
bool free_now(const std::string& name) {
    sqlock::mutex other(db(), name, test::opts());
    if (!other.try_lock())
        return false;
    other.unlock();
    return true;
}

/// asio::use_future, completing on `ctx` rather than on Asio's system_context (use_future's
/// own executor), whose threads outlive the test and whose teardown at exit ThreadSanitizer
/// reports as racing with the last post to it.
template <class Context>
auto future_on(Context& ctx) {
    return asio::bind_executor(ctx, asio::use_future);
}

/// Runs `coro` on `io` and waits for it (for coroutines that do not throw: see below).
template <class T>
T run_on(asio::io_context& io, asio::awaitable<T> coro) {
    return asio::co_spawn(io, std::move(coro), future_on(io)).get();
}

// Completions that carry an exception are taken by callbacks here, never through use_future
// (see fate).

/// A callback that stores an acquire's outcome in `p`.
auto into(std::promise<outcome>& p) {
    return [&p](std::exception_ptr e, sqlock::async_guard g) {
        p.set_value({fate_of(e), std::move(g)});
    };
}

/// Runs `coro` on `io` and returns how it ended.
fate fate_of(asio::io_context& io, asio::awaitable<void> coro) {
    std::promise<fate> done;
    asio::post(io, [&] {
        asio::co_spawn(io, std::move(coro),
                       [&](std::exception_ptr e) { done.set_value(fate_of(e)); });
    });
    return done.get_future().get();
}

bool lease_strategy() {
    return test::strategy() != sqlock::strategy::select_for_update;
}

} // namespace

TEST_SUITE("async") {
    TEST_CASE("async_lock grants; the guard fences, owns and releases; async_unlock reports") {
        io_thread t;
        const auto name = unique_name("async-grant");
        sqlock::async_mutex m(t.io.get_executor(), db(), name, test::opts());
        auto guard = m.async_lock(future_on(t.io)).get();
        REQUIRE(guard);
        CHECK(guard.owns_lock());
        CHECK(guard.token() > 0);
        CHECK(guard.name() == name);
        CHECK(guard.lease_end() > std::chrono::steady_clock::now());
        CHECK_FALSE(free_now(name));
        CHECK(guard.async_unlock(future_on(t.io)).get() == sqlock::loss_reason::none);
        CHECK_FALSE(guard);
        CHECK(free_now(name));
    }

    TEST_CASE("an acquire is outstanding work: io_context::run() returns after its completion") {
        asio::io_context io; // no work guard: only the operation keeps run() going
        const auto name = unique_name("async-work");
        sqlock::async_mutex m(io.get_executor(), db(), name, test::opts());
        std::int64_t token = 0;
        m.async_lock([&](std::exception_ptr, sqlock::async_guard g) { token = g ? g.token() : 0; });
        io.run();
        CHECK(token > 0);
    }

    TEST_CASE("a coroutine awaits the lock; destroying its guard releases in the background") {
        io_thread t;
        const auto name = unique_name("async-coro");
        sqlock::async_mutex m(t.io.get_executor(), db(), name, test::opts());
        const auto token = run_on(t.io, [&]() -> asio::awaitable<std::int64_t> {
            auto guard = co_await m.async_lock(asio::use_awaitable);
            co_return guard.token();
        }());
        CHECK(token > 0);
        CHECK(test::eventually([&] { return free_now(name); }, 5s));
    }

    TEST_CASE("async_try_lock_for times out with an empty guard; async_try_lock does not wait") {
        io_thread t;
        const auto name = unique_name("async-timeout");
        sqlock::mutex holder(db(), name, test::opts());
        holder.lock();
        sqlock::async_mutex m(t.io.get_executor(), db(), name, test::opts());
        const auto start = std::chrono::steady_clock::now();
        auto guard = m.async_try_lock_for(300ms, future_on(t.io)).get();
        const auto waited = std::chrono::steady_clock::now() - start;
        CHECK_FALSE(guard);
        CHECK(waited >= 300ms);
        CHECK(waited < 5s);
        CHECK_FALSE(m.async_try_lock(future_on(t.io)).get());
        holder.unlock();
        auto later = m.async_try_lock_for(5s, future_on(t.io)).get();
        CHECK(later.owns_lock());
    }

    TEST_CASE("a cancelled wait completes with operation_aborted and leaves nothing held") {
        io_thread t;
        const auto name = unique_name("async-cancel");
        sqlock::mutex holder(db(), name, test::opts());
        holder.lock();
        sqlock::async_mutex m(t.io.get_executor(), db(), name, test::opts());
        asio::cancellation_signal signal;
        std::promise<outcome> done;
        asio::post(t.io, [&] {
            m.async_lock(asio::bind_cancellation_slot(
                signal.slot(), [&](std::exception_ptr e, sqlock::async_guard g) {
                    done.set_value({fate_of(e), std::move(g)});
                }));
        });
        std::this_thread::sleep_for(300ms); // it waits now
        const auto start = std::chrono::steady_clock::now();
        asio::post(t.io, [&] { signal.emit(asio::cancellation_type::terminal); });
        auto result = done.get_future().get();
        CHECK(result.how.aborted);
        CHECK_FALSE(result.guard);
        CHECK(std::chrono::steady_clock::now() - start < 3s);
        holder.unlock();
        CHECK(free_now(name));
    }

    TEST_CASE("a grant racing a cancel is given back before the cancel is reported") {
        io_thread t;
        const auto name = unique_name("async-race");
        sqlock::async_mutex m(t.io.get_executor(), db(), name, test::opts());
        for (int round = 0; round < 6; ++round) {
            sqlock::mutex holder(db(), name, test::opts());
            holder.lock();
            asio::cancellation_signal signal;
            std::promise<outcome> done;
            asio::post(t.io, [&] {
                m.async_lock(asio::bind_cancellation_slot(
                    signal.slot(), [&](std::exception_ptr e, sqlock::async_guard g) {
                        done.set_value({fate_of(e), std::move(g)});
                    }));
            });
            std::this_thread::sleep_for(std::chrono::milliseconds(50 + 20 * round));
            holder.unlock(); // the waiter may be granted now...
            std::this_thread::sleep_for(std::chrono::milliseconds(5 * round));
            std::promise<void> emitted; // the signal must outlive its emit
            asio::post(t.io, [&] {
                signal.emit(asio::cancellation_type::terminal); // ...or not
                emitted.set_value();
            });
            auto result = done.get_future().get();
            emitted.get_future().get();
            if (result.guard) {
                CHECK_FALSE(result.how.failed);
                result.guard.async_unlock(future_on(t.io)).get();
            } else {
                CHECK(result.how.aborted);
            }
            CHECK(free_now(name)); // either way: nothing left held
        }
    }

    TEST_CASE("an acquire waiting for a worker is cancelled at once; cancel() cancels all") {
        io_thread t;
        const auto name = unique_name("async-queued");
        sqlock::mutex holder(db(), name, test::opts());
        holder.lock();
        sqlock::async_mutex m(t.io.get_executor(), db(), name, test::opts(),
                              {.workers = sqlock::async_workers(1)});
        std::promise<outcome> first, second;
        m.async_lock(into(first));  // takes the one worker
        m.async_lock(into(second)); // waits for it
        std::this_thread::sleep_for(200ms);
        const auto start = std::chrono::steady_clock::now();
        m.cancel();
        CHECK(second.get_future().get().how.aborted);
        CHECK(std::chrono::steady_clock::now() - start < 500ms);
        CHECK(first.get_future().get().how.aborted);
        holder.unlock();
        CHECK(free_now(name));
    }

    TEST_CASE("a guard moves to another thread pool: it still owns, fences and releases there") {
        asio::thread_pool first(1);
        asio::thread_pool second(2);
        const auto name = unique_name("async-threads");
        sqlock::async_mutex m(first.get_executor(), db(), name, test::opts());
        std::promise<outcome> granted;
        std::thread::id locked_on; // the thread of `first` that saw the grant
        m.async_lock([&](std::exception_ptr e, sqlock::async_guard g) {
            locked_on = std::this_thread::get_id();
            granted.set_value({fate_of(e), std::move(g)});
        });
        auto guard = std::move(granted.get_future().get().guard);
        REQUIRE(guard);
        const auto token = guard.token();
        auto there = asio::co_spawn(
            second,
            [&, g = std::move(guard)]() mutable -> asio::awaitable<sqlock::loss_reason> {
                CHECK(std::this_thread::get_id() != locked_on);
                CHECK(g.owns_lock());
                CHECK(g.token() == token);
                CHECK_FALSE(free_now(name)); // still held by the guard, not by a thread
                co_return co_await g.async_unlock(asio::use_awaitable);
            },
            future_on(second));
        CHECK(there.get() == sqlock::loss_reason::none);
        CHECK(free_now(name));
        second.join();
        first.join();
    }

    TEST_CASE("fencing tokens increase across sync and async holders") {
        io_thread t;
        const auto name = unique_name("async-fence");
        sqlock::async_mutex a(t.io.get_executor(), db(), name, test::opts());
        sqlock::mutex s(db(), name, test::opts());
        std::int64_t last = 0;
        for (int i = 0; i < 4; ++i) {
            auto g = a.async_lock(future_on(t.io)).get();
            CHECK(g.token() > last);
            last = g.token();
            g.async_unlock(future_on(t.io)).get();
            s.lock();
            CHECK(s.token() > last);
            last = s.token();
            s.unlock();
        }
    }

    TEST_CASE("two acquires on one async_mutex are two owners: the second waits for the first") {
        io_thread t;
        const auto name = unique_name("async-owners");
        sqlock::async_mutex m(t.io.get_executor(), db(), name, test::opts());
        auto first = m.async_lock(future_on(t.io)).get();
        CHECK_FALSE(m.async_try_lock_for(200ms, future_on(t.io)).get());
        auto second = m.async_lock(future_on(t.io));
        first.async_unlock(future_on(t.io)).get();
        auto g = second.get();
        CHECK(g.owns_lock());
    }

    TEST_CASE("run_while_held cancels the work stop_bound before an unrenewed lease ends") {
        io_thread t;
        const auto name = unique_name("async-lease-end");
        sqlock::async_mutex m(t.io.get_executor(), db(), name, test::opts(1500ms));
        auto guard = m.async_lock(future_on(t.io)).get();
        const auto end = guard.lease_end();
        std::chrono::steady_clock::time_point cancelled_at{};
        auto work = [&]() -> asio::awaitable<void> {
            asio::steady_timer timer(co_await asio::this_coro::executor, 30s);
            try {
                co_await timer.async_wait(asio::use_awaitable);
            } catch (...) {
                cancelled_at = std::chrono::steady_clock::now();
                throw;
            }
        };
        const auto how = fate_of(t.io, sqlock::run_while_held(guard, work(), 400ms));
        CHECK(how.message.find("about to end") != std::string::npos);
        CHECK(cancelled_at <= end - 400ms + 200ms); // timer slack
        CHECK(cancelled_at >= end - 400ms);
        CHECK(cancelled_at < end);
    }

    TEST_CASE("run_while_held: with renewal the work runs past the TTL and returns its value") {
        io_thread t;
        const auto name = unique_name("async-renewed");
        auto options = test::opts(900ms);
        options.renew = true;
        sqlock::async_mutex m(t.io.get_executor(), db(), name, options);
        auto guard = m.async_lock(future_on(t.io)).get();
        auto work = [&]() -> asio::awaitable<int> {
            asio::steady_timer timer(co_await asio::this_coro::executor, 2s);
            co_await timer.async_wait(asio::use_awaitable);
            co_return 42;
        };
        CHECK(run_on(t.io, sqlock::run_while_held(guard, work(), 200ms)) == 42);
        CHECK(guard.owns_lock());
    }

    TEST_CASE("cancelling the caller of run_while_held cancels the work (not a loss)") {
        io_thread t;
        const auto name = unique_name("async-caller-cancel");
        sqlock::async_mutex m(t.io.get_executor(), db(), name, test::opts());
        auto guard = m.async_lock(future_on(t.io)).get();
        auto work = [&]() -> asio::awaitable<void> {
            asio::steady_timer timer(co_await asio::this_coro::executor, 30s);
            co_await timer.async_wait(asio::use_awaitable);
        };
        asio::cancellation_signal signal;
        std::promise<fate> done;
        asio::post(t.io, [&] {
            asio::co_spawn(t.io, sqlock::run_while_held(guard, work(), 100ms),
                           asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e) {
                               done.set_value(fate_of(e));
                           }));
        });
        std::this_thread::sleep_for(200ms);
        asio::post(t.io, [&] { signal.emit(asio::cancellation_type::terminal); });
        CHECK(done.get_future().get().aborted);
        CHECK(guard.owns_lock()); // the guard keeps its grant
    }

    TEST_CASE("a lost grant cancels the work run_while_held guards") {
        // Lost from outside: a force release (lease strategies: the token moves on;
        // select_for_update on PostgreSQL: the holder's session ends). MariaDB's and SQLite's
        // select_for_update cannot be released from outside: the lease-end case covers them.
        if (!lease_strategy() && test::backend().kind != sqlock::backend_kind::postgresql)
            return;
        io_thread t;
        const auto name = unique_name("async-lost");
        auto options = test::opts(900ms);
        options.renew = true;
        sqlock::async_mutex m(t.io.get_executor(), db(), name, options);
        auto guard = m.async_lock(future_on(t.io)).get();
        auto work = [&]() -> asio::awaitable<void> {
            asio::steady_timer timer(co_await asio::this_coro::executor, 30s);
            co_await timer.async_wait(asio::use_awaitable);
        };
        std::promise<fate> ended;
        asio::post(t.io, [&] {
            asio::co_spawn(t.io, sqlock::run_while_held(guard, work(), 100ms),
                           [&](std::exception_ptr e) { ended.set_value(fate_of(e)); });
        });
        std::this_thread::sleep_for(100ms);
        CHECK(db().force_release(name, "async test").released);
        CHECK(ended.get_future().get().message.find("was lost") != std::string::npos);
        CHECK_FALSE(guard.owns_lock());
        CHECK(guard.lost_reason() == sqlock::loss_reason::lost);
        CHECK(guard.async_unlock(future_on(t.io)).get() != sqlock::loss_reason::none);
    }

    TEST_CASE("async leader election: a term fenced above the sync elector's, resign by release") {
        if (test::strategy() != sqlock::strategy::unique_key)
            return; // elections are unique_key locks: once per backend
        io_thread t;
        const auto name = unique_name("async-leader");
        sqlock::leader_election sync_elector(db(), name, {.ttl = 5s});
        const auto first_term = sync_elector.campaign();
        sqlock::async_leader_election e(t.io.get_executor(), db(), name, {.ttl = 5s});
        CHECK_FALSE(e.async_try_campaign_for(200ms, future_on(t.io)).get());
        auto campaign = e.async_campaign(future_on(t.io));
        sync_elector.resign();
        auto term = campaign.get();
        REQUIRE(term);
        CHECK(term.token() > first_term);
        const auto who = sync_elector.leader();
        REQUIRE(who);
        CHECK(who->term == term.token());
        CHECK_FALSE(sync_elector.try_campaign());
        CHECK(term.async_unlock(future_on(t.io)).get() == sqlock::loss_reason::none);
        CHECK_FALSE(sync_elector.leader());
        std::promise<outcome> late;
        sqlock::async_leader_election(t.io.get_executor(), db(), name)
            .async_try_campaign_for(1s, into(late));
        // The elector is gone at once: its campaign was cancelled (or won before that).
        auto result = late.get_future().get();
        if (result.guard)
            result.guard.async_unlock(future_on(t.io)).get();
        else
            CHECK(result.how.aborted);
        CHECK(sync_elector.try_campaign());
    }
}
