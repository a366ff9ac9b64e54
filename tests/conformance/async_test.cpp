// The asynchronous locks (sqlock/async.hpp) on every backend x strategy: grant, timed try,
// cancellation (never a lock left held), loss cancelling the work it guards, fencing across
// sync and async holders, and a grant that moves between threads.
#include "async/fiber_host.hpp"
#include "backend_fixture.hpp"
#include "backends/module.hpp"
#include "base/config.hpp"
#include "base/session.hpp"
#include "base/statements.hpp"
#include "silent_server.hpp"

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
#include <csignal>
#include <doctest/doctest.h>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <sqlock/async.hpp>
#include <sqlock/error.hpp>
#include <stop_token>
#include <thread>
#include <unistd.h>
#include <vector>

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
/// Starts m.async_lock() on `io`'s thread, cancellable through `signal`; its outcome goes to
/// `done`.
void start_cancellable_lock(asio::io_context& io, sqlock::async_mutex& m,
                            asio::cancellation_signal& signal, std::promise<outcome>& done) {
    asio::post(io, [&] {
        m.async_lock(asio::bind_cancellation_slot(signal.slot(),
                                                  [&](std::exception_ptr e, sqlock::async_guard g) {
                                                      done.set_value({fate_of(e), std::move(g)});
                                                  }));
    });
}

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

/// True when a sync semaphore of `permits` takes every permit of `name` at once (one
/// attempt each), then gives them back: nothing of it is held elsewhere.
bool semaphore_free_now(const std::string& name, std::int64_t permits) {
    std::vector<std::unique_ptr<sqlock::semaphore>> holders;
    for (std::int64_t k = 0; k < permits; ++k) {
        holders.push_back(std::make_unique<sqlock::semaphore>(db(), name, permits, test::opts()));
        if (!holders.back()->try_acquire())
            return false;
    }
    for (auto& h : holders)
        h->release();
    return true;
}

/// True when a sync shared_mutex takes `name` exclusively at once, then gives it back.
bool shared_free_now(const std::string& name, std::int64_t readers) {
    sqlock::shared_mutex other(db(), name, test::opts(), readers);
    if (!other.try_lock())
        return false;
    other.unlock();
    return true;
}

/// Rounds of an acquire (`start(handler)`, bound to a cancellation slot) that waits for
/// `holder` (locked by `lock`, given back by `unlock` shortly before the cancel): a grant that
/// raced the cancel is a grant, else the acquire is aborted, and `is_free()` either way
/// afterwards. Returns how many rounds ended granted.
template <class Start, class Lock, class Unlock, class IsFree>
int cancel_races(asio::io_context& io, Start start, Lock lock, Unlock unlock, IsFree is_free) {
    int granted = 0;
    for (int round = 0; round < 6; ++round) {
        lock();
        asio::cancellation_signal signal;
        std::promise<outcome> done;
        asio::post(io, [&] {
            start(asio::bind_cancellation_slot(signal.slot(),
                                               [&](std::exception_ptr e, sqlock::async_guard g) {
                                                   done.set_value({fate_of(e), std::move(g)});
                                               }));
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(50 + 20 * round));
        unlock(); // the waiter may be granted now...
        std::this_thread::sleep_for(std::chrono::milliseconds(5 * round));
        std::promise<void> emitted; // the signal must outlive its emit
        asio::post(io, [&] {
            signal.emit(asio::cancellation_type::terminal); // ...or not
            emitted.set_value();
        });
        auto result = done.get_future().get();
        emitted.get_future().get();
        if (result.guard) {
            ++granted;
            CHECK_FALSE(result.how.failed);
            result.guard.async_unlock(future_on(io)).get();
        } else {
            CHECK(result.how.aborted);
        }
        CHECK(is_free()); // either way: nothing left held
    }
    return granted;
}

/// The number of threads of this process.
std::size_t thread_count() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task"))
        ++n;
    return n;
}

/// Work that waits 30 s unless cancelled.
asio::awaitable<void> long_work() {
    asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::seconds(30));
    co_await timer.async_wait(asio::use_awaitable);
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
        start_cancellable_lock(t.io, m, signal, done);
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

    TEST_CASE("PostgreSQL: a cancel reaches a head waiting in the server at once") {
        if (test::backend().kind != sqlock::backend_kind::postgresql)
            return;
        // The holder is another process (one of this process would keep the head in the
        // local line), so the head waits in the server, a step of up to 1 s at a time; the
        // cancel asks the server to end that statement instead of waiting for the step to end.
        io_thread t;
        const auto name = unique_name("async-cancel-server");
        const auto marker = test::backend().scratch_dir + "/" + name + ".held";
        const pid_t holder = test::spawn({test::cli_path(), "run", name, "--strategy",
                                          std::string(sqlock::to_string(test::strategy())), "--",
                                          "/bin/sh", "-c", "touch '" + marker + "'; exec sleep 60"},
                                         {"SQLOCK_URL=" + test::backend().url});
        REQUIRE(test::eventually([&] { return std::filesystem::exists(marker); }, 10s));
        const auto waiters = [&] {
            for (const auto& info : db().list())
                if (info.name == name)
                    return info.waiters.size();
            return std::size_t{0};
        };
        // A second process first in line: the lease strategies' head then waits for the
        // name's queue lock, not for a release notification (which a cancel ends anyway).
        const pid_t queued =
            test::spawn({test::cli_path(), "run", name, "--strategy",
                         std::string(sqlock::to_string(test::strategy())), "--", "/bin/true"},
                        {"SQLOCK_URL=" + test::backend().url});
        REQUIRE(test::eventually([&] { return waiters() == 1; }, 10s));
        sqlock::async_mutex m(t.io.get_executor(), db(), name, test::opts());
        for (int round = 0; round < 3; ++round) {
            asio::cancellation_signal signal;
            std::promise<outcome> done;
            start_cancellable_lock(t.io, m, signal, done);
            REQUIRE(test::eventually([&] { return waiters() == 2; }, 10s));
            const auto start = std::chrono::steady_clock::now();
            asio::post(t.io, [&] { signal.emit(asio::cancellation_type::terminal); });
            auto result = done.get_future().get();
            const auto took = std::chrono::steady_clock::now() - start;
            CHECK(result.how.aborted);
            CHECK_FALSE(result.guard);
            MESSAGE("cancelled in "
                    << std::chrono::duration_cast<std::chrono::microseconds>(took).count()
                    << " us");
            CHECK(took < 300ms); // the step would have taken up to 1 s
        }
        ::kill(holder, SIGTERM); // passed on to the job; sqlock gives the lock back
        CHECK(test::wait_exit(holder) == 128 + SIGTERM);
        CHECK(test::wait_exit(queued) == 0);          // next in line: granted, it ran its command
        CHECK(free_now(name));                        // nothing left held, and the lock still works
        auto g = m.async_lock(future_on(t.io)).get(); // the waiter's sessions still work
        CHECK(g.owns_lock());
        g.async_unlock(future_on(t.io)).get();
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
            start_cancellable_lock(t.io, m, signal, done);
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

    TEST_CASE("a cancel abandons a connect in flight on a fiber, unless it reads back a lost "
              "reply (a server that never answers)") {
        if (test::backend().kind == sqlock::backend_kind::sqlite)
            return; // no server to connect to
        // A head opens connections on its fiber (a queue seat, a pool short of sessions);
        // nothing is held until one is made, so a cancel ends the connect at once instead of
        // after connect_timeout. A read-back of an acquire whose reply was lost (finish_connects)
        // is made to its end: a grant it finds is given back.
        using namespace sqlock::detail;
        bool finish = false;
        SUBCASE("a head's connect") {}
        SUBCASE("inside finish_connects") {
            finish = true;
        }
        io_thread t;
        const test::silent_server silent;
        auto config = parse_url(silent.url());
        config.connect_timeout = finish ? 3s : 20s;
        const sql_catalog catalog([](statement) { return std::string_view{}; },
                                  [](std::string_view text) { return std::string(text); });
        const auto& backend = backend_for(test::backend().kind);
        std::stop_source stop;
        std::promise<std::string> failure;
        run_on_fiber(t.io.get_executor(), stop.get_token(), [&] {
            std::optional<finish_connects> to_the_end;
            if (finish)
                to_the_end.emplace();
            try {
                backend.open_session(config, catalog);
                failure.set_value("connected");
            } catch (const sqlock::error& e) {
                failure.set_value(e.code() == sqlock::errc::connection ? "connection error"
                                                                       : e.what());
            } catch (const std::exception& e) {
                failure.set_value(e.what());
            }
        });
        REQUIRE(test::eventually([&] { return silent.has_caller(); }, 10s));
        const auto start = std::chrono::steady_clock::now();
        stop.request_stop();
        CHECK(failure.get_future().get() == "connection error");
        const auto took = std::chrono::steady_clock::now() - start;
        if (finish)
            CHECK(took >= 2s); // to connect_timeout (3 s)
        else
            CHECK(took < 2s); // connect_timeout: 20 s
    }

    TEST_CASE("a head waiting for a busy worker ends at its deadline, or at once when cancelled "
              "(none does, unless on_workers)") {
        bool on_workers = false;
        SUBCASE("where the backend runs heads") {}
        SUBCASE("async_options::on_workers") {
            on_workers = true;
        }
        const sqlock::async_options async{.workers = sqlock::async_workers(1),
                                          .on_workers = on_workers};
        io_thread t;
        const auto busy_name = unique_name("async-busy");
        sqlock::mutex holder(db(), busy_name, test::opts());
        holder.lock();
        sqlock::async_mutex busy(t.io.get_executor(), db(), busy_name, test::opts(), async);
        std::promise<outcome> occupying;
        busy.async_lock(into(occupying)); // waits for `holder` on the one worker
        // Two other (free) names, whose heads wait for that worker.
        sqlock::async_mutex timed(t.io.get_executor(), db(), unique_name("async-busy-timed"),
                                  test::opts(), async);
        sqlock::async_mutex cancelled(t.io.get_executor(), db(),
                                      unique_name("async-busy-cancelled"), test::opts(), async);
        std::promise<outcome> waited, aborted;
        const auto start = std::chrono::steady_clock::now();
        timed.async_try_lock_for(300ms, into(waited));
        cancelled.async_lock(into(aborted));
        cancelled.cancel();
        CHECK(aborted.get_future().get().how.aborted);
        CHECK(std::chrono::steady_clock::now() - start < 250ms);
        auto result = waited.get_future().get();
        const auto took = std::chrono::steady_clock::now() - start;
        CHECK_FALSE(result.how.failed);
        if (!on_workers) {
            // Heads run on fibers of the executor: the busy worker holds up none.
            // The grant is the proof (the worker stays busy until holder.unlock() below); the
            // bound only says nothing else held it up: a fresh login alone took 560 ms under
            // TSan on a loaded host, and an attempt under way at the deadline is not undone.
            CHECK(result.guard.owns_lock());
            CHECK(took < 2s);
        } else {
            CHECK_FALSE(result.guard);
            CHECK(took >= 300ms);
            CHECK(took < 1s);
        }
        holder.unlock();
        CHECK(occupying.get_future().get().guard.owns_lock());
    }

    TEST_CASE("heads run on fibers of the lock's executor, never on a worker") {
        // One io thread, a pool of one busy-able worker, and many heads waiting in the server
        // at once: with workers they would take turns at the one thread (the last would time
        // out behind the first); on fibers they all wait side by side, and no thread starts.
        constexpr std::size_t names = 20;
        io_thread t;
        const sqlock::async_workers one(1);
        const auto base = unique_name("async-fibers");
        std::vector<std::unique_ptr<sqlock::mutex>> holders;
        std::vector<std::unique_ptr<sqlock::async_mutex>> locks;
        for (std::size_t n = 0; n < names; ++n) {
            const auto name = base + "-" + std::to_string(n);
            holders.push_back(std::make_unique<sqlock::mutex>(db(), name, test::opts()));
            holders.back()->lock();
            locks.push_back(std::make_unique<sqlock::async_mutex>(
                t.io.get_executor(), db(), name, test::opts(), sqlock::async_options{one}));
        }
        const auto threads_before = thread_count();
        std::vector<std::promise<outcome>> results(names);
        for (std::size_t n = 0; n < names; ++n)
            asio::post(t.io, [&, n] { locks[n]->async_try_lock_for(20s, into(results[n])); });
        // Every head waits now (or soon), in the server or for SQLite's lock: its holder's
        // release grants it.
        std::this_thread::sleep_for(300ms);
        const auto threads_waiting = thread_count();
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t n = names; n-- > 0;) // the last started first
            holders[n]->unlock();
        std::vector<sqlock::async_guard> guards;
        for (auto& r : results) {
            auto got = r.get_future().get();
            CHECK_FALSE(got.how.failed);
            CHECK(got.guard.owns_lock());
            guards.push_back(std::move(got.guard));
        }
        const auto took = std::chrono::steady_clock::now() - start;
        MESSAGE("threads: " << threads_before << " before the heads, " << threads_waiting
                            << " while " << names << " heads waited; all granted in "
                            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                            << " ms");
        CHECK(threads_waiting == threads_before); // no acquire thread, no timer thread
        CHECK(took < 5s); // side by side (each head polls its seat at most ~1 s apart)
        for (auto& g : guards)
            g.async_unlock(future_on(t.io)).get();
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
        // A 6 s lease: the work is cancelled once half the TTL is left without a renewal,
        // and renewals are due a third of the TTL after the last one, so a renewal may be late
        // by TTL/6 less the lease margin (60 ms of a 900 ms lease: too little for a loaded host).
        const auto name = unique_name("async-renewed");
        auto options = test::opts(6s);
        options.renew = true;
        sqlock::async_mutex m(t.io.get_executor(), db(), name, options);
        auto guard = m.async_lock(future_on(t.io)).get();
        auto work = [&]() -> asio::awaitable<int> {
            asio::steady_timer timer(co_await asio::this_coro::executor, 7s);
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
        std::promise<void> started;
        auto work = [&]() -> asio::awaitable<void> {
            asio::steady_timer timer(co_await asio::this_coro::executor, 30s);
            started.set_value();
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
        started.get_future().wait(); // the work runs
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
        // The loss is seen at the next renewal (TTL / 3); the lease would be "about to end"
        // only after TTL - stop bound without one: a wide gap, even for a renewal delayed
        // under a sanitizer (with 900 ms, TSan's once came too late and the work was stopped
        // for the lease's end instead).
        auto options = test::opts(3s);
        options.renew = true;
        sqlock::async_mutex m(t.io.get_executor(), db(), name, options);
        auto guard = m.async_lock(future_on(t.io)).get();
        std::promise<void> started;
        auto work = [&]() -> asio::awaitable<void> {
            asio::steady_timer timer(co_await asio::this_coro::executor, 30s);
            started.set_value();
            co_await timer.async_wait(asio::use_awaitable);
        };
        std::promise<fate> ended;
        asio::post(t.io, [&] {
            asio::co_spawn(t.io, sqlock::run_while_held(guard, work(), 100ms),
                           [&](std::exception_ptr e) { ended.set_value(fate_of(e)); });
        });
        started.get_future().wait(); // the work runs
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

    // --- async_semaphore ------------------------------------------------------------------------

    TEST_CASE("async_semaphore: N guards hold N permits, one more times out, a release admits") {
        io_thread t;
        const auto name = unique_name("async-sem");
        sqlock::async_semaphore s(t.io.get_executor(), db(), name, 2, test::opts());
        CHECK(s.permits() == 2);
        auto first = s.async_acquire(future_on(t.io)).get();
        auto second = s.async_acquire(future_on(t.io)).get();
        REQUIRE(first);
        REQUIRE(second);
        CHECK(first.owns_lock());
        CHECK(second.owns_lock());
        CHECK(first.token() > 0);
        CHECK(first.name() == name);
        CHECK(first.lease_end() > std::chrono::steady_clock::now());
        sqlock::semaphore sync_holder(db(), name, 2, test::opts());
        CHECK_FALSE(sync_holder.try_acquire()); // both permits are the guards'
        const auto start = std::chrono::steady_clock::now();
        CHECK_FALSE(s.async_try_acquire_for(300ms, future_on(t.io)).get());
        CHECK(std::chrono::steady_clock::now() - start >= 300ms);
        CHECK_FALSE(s.async_try_acquire(future_on(t.io)).get());
        auto third = s.async_acquire(future_on(t.io));
        CHECK(first.async_unlock(future_on(t.io)).get() == sqlock::loss_reason::none);
        auto g = third.get();
        CHECK(g.owns_lock());
        g = {};
        second = {};
        CHECK(test::eventually([&] { return semaphore_free_now(name, 2); }, 5s));
    }

    TEST_CASE("async_semaphore: a cancelled wait holds no permit, a racing grant is given back") {
        io_thread t;
        const auto name = unique_name("async-sem-cancel");
        sqlock::async_semaphore s(t.io.get_executor(), db(), name, 1, test::opts());
        sqlock::semaphore holder(db(), name, 1, test::opts());
        cancel_races(
            t.io, [&](auto handler) { s.async_acquire(std::move(handler)); },
            [&] { holder.acquire(); }, [&] { holder.release(); },
            [&] { return semaphore_free_now(name, 1); });
    }

    TEST_CASE("async_semaphore: a permit's tokens increase across sync and async holders") {
        io_thread t;
        const auto name = unique_name("async-sem-fence");
        sqlock::async_semaphore a(t.io.get_executor(), db(), name, 1, test::opts());
        sqlock::semaphore s(db(), name, 1, test::opts());
        std::int64_t last = 0;
        for (int i = 0; i < 3; ++i) {
            auto g = a.async_acquire(future_on(t.io)).get();
            CHECK(g.token() > last);
            last = g.token();
            g.async_unlock(future_on(t.io)).get();
            s.acquire();
            CHECK(s.token() > last);
            last = s.token();
            s.release();
        }
    }

    TEST_CASE("async_semaphore: a lost permit cancels the work run_while_held guards") {
        if (!lease_strategy() && test::backend().kind != sqlock::backend_kind::postgresql)
            return; // as for the mutex: released from outside only where that is possible
        io_thread t;
        const auto name = unique_name("async-sem-lost");
        // The loss is seen at the next renewal (TTL / 3); the lease would be "about to end"
        // only after TTL - stop bound without one: a wide gap, even for a renewal delayed
        // under a sanitizer (with 900 ms, TSan's once came too late and the work was stopped
        // for the lease's end instead).
        auto options = test::opts(3s);
        options.renew = true;
        sqlock::async_semaphore s(t.io.get_executor(), db(), name, 1, options);
        auto guard = s.async_acquire(future_on(t.io)).get();
        REQUIRE(guard);
        std::promise<fate> ended;
        asio::post(t.io, [&] {
            asio::co_spawn(t.io, sqlock::run_while_held(guard, long_work(), 100ms),
                           [&](std::exception_ptr e) { ended.set_value(fate_of(e)); });
        });
        CHECK(db().force_release(name + "\x1fpermit 0", "async test").released);
        CHECK(ended.get_future().get().message.find("was lost") != std::string::npos);
        CHECK_FALSE(guard.owns_lock());
        CHECK(guard.async_unlock(future_on(t.io)).get() != sqlock::loss_reason::none);
    }

    // --- async_shared_mutex ---------------------------------------------------------------------

    TEST_CASE("async_shared_mutex: readers share, a writer excludes them, both time out") {
        io_thread t;
        const auto name = unique_name("async-rw");
        sqlock::async_shared_mutex rw(t.io.get_executor(), db(), name, test::opts(), 3);
        CHECK(rw.max_readers() == 3);
        auto r1 = rw.async_lock_shared(future_on(t.io)).get();
        auto r2 = rw.async_lock_shared(future_on(t.io)).get();
        REQUIRE(r1);
        REQUIRE(r2);
        CHECK(r1.owns_lock());
        CHECK(r2.owns_lock());
        CHECK(r1.token() > 0);
        CHECK_FALSE(rw.async_try_lock(future_on(t.io)).get());
        CHECK_FALSE(rw.async_try_lock_for(300ms, future_on(t.io)).get());
        auto writer = rw.async_lock(future_on(t.io));
        r1.async_unlock(future_on(t.io)).get();
        r2.async_unlock(future_on(t.io)).get();
        auto w = writer.get();
        REQUIRE(w);
        CHECK(w.owns_lock());
        CHECK(w.lease_end() > std::chrono::steady_clock::now());
        sqlock::shared_mutex sync_reader(db(), name, test::opts(), 3);
        CHECK_FALSE(sync_reader.try_lock_shared());
        CHECK_FALSE(rw.async_try_lock_shared(future_on(t.io)).get());
        CHECK_FALSE(rw.async_try_lock_shared_for(300ms, future_on(t.io)).get());
        CHECK(w.async_unlock(future_on(t.io)).get() == sqlock::loss_reason::none);
        CHECK(shared_free_now(name, 3));
    }

    TEST_CASE("async_shared_mutex: cancelled waits in either mode leave nothing held") {
        io_thread t;
        const auto name = unique_name("async-rw-cancel");
        sqlock::async_shared_mutex rw(t.io.get_executor(), db(), name, test::opts(), 2);
        sqlock::shared_mutex holder(db(), name, test::opts(), 2);
        const auto is_free = [&] {
            return shared_free_now(name, 2);
        };
        // A writer waiting for a reader to leave (it holds the gate and some permits meanwhile).
        cancel_races(
            t.io, [&](auto handler) { rw.async_lock(std::move(handler)); },
            [&] { holder.lock_shared(); }, [&] { holder.unlock_shared(); }, is_free);
        // A reader waiting for a writer.
        cancel_races(
            t.io, [&](auto handler) { rw.async_lock_shared(std::move(handler)); },
            [&] { holder.lock(); }, [&] { holder.unlock(); }, is_free);
    }

    TEST_CASE("async_shared_mutex: a writer's token is above every earlier grant's, either mode") {
        io_thread t;
        const auto name = unique_name("async-rw-fence");
        sqlock::async_shared_mutex a(t.io.get_executor(), db(), name, test::opts(), 2);
        sqlock::shared_mutex s(db(), name, test::opts(), 2);
        std::int64_t last = 0;
        for (int i = 0; i < 3; ++i) {
            auto reader = a.async_lock_shared(future_on(t.io)).get();
            const auto read_token = reader.token();
            reader.async_unlock(future_on(t.io)).get();
            auto w = a.async_lock(future_on(t.io)).get();
            CHECK(w.token() > last);
            CHECK(w.token() > read_token);
            last = w.token();
            w.async_unlock(future_on(t.io)).get();
            s.lock();
            CHECK(s.token() > last);
            last = s.token();
            s.unlock();
        }
    }

    TEST_CASE("async_shared_mutex: run_while_held stops a writer's work before a lease ends") {
        io_thread t;
        const auto name = unique_name("async-rw-lease");
        sqlock::async_shared_mutex rw(t.io.get_executor(), db(), name, test::opts(1500ms), 2);
        auto guard = rw.async_lock(future_on(t.io)).get();
        REQUIRE(guard);
        const auto end = guard.lease_end();
        const auto how = fate_of(t.io, sqlock::run_while_held(guard, long_work(), 400ms));
        const auto stopped = std::chrono::steady_clock::now();
        CHECK(how.message.find("about to end") != std::string::npos);
        CHECK(stopped < end);
        CHECK(stopped >= end - 400ms);
    }

    TEST_CASE("async_shared_mutex: a reader whose permit is lost has its work cancelled") {
        if (!lease_strategy() && test::backend().kind != sqlock::backend_kind::postgresql)
            return;
        io_thread t;
        const auto name = unique_name("async-rw-lost");
        auto options = test::opts(900ms);
        options.renew = true;
        sqlock::async_shared_mutex rw(t.io.get_executor(), db(), name, options, 1);
        auto guard = rw.async_lock_shared(future_on(t.io)).get();
        REQUIRE(guard);
        std::promise<fate> ended;
        asio::post(t.io, [&] {
            asio::co_spawn(t.io, sqlock::run_while_held(guard, long_work(), 100ms),
                           [&](std::exception_ptr e) { ended.set_value(fate_of(e)); });
        });
        CHECK(db().force_release(name + "\x1freader 0", "async test").released);
        CHECK(ended.get_future().get().message.find("was lost") != std::string::npos);
        CHECK_FALSE(guard.owns_lock());
        CHECK(guard.async_unlock(future_on(t.io)).get() != sqlock::loss_reason::none);
    }

    // --- waiting costs no thread ----------------------------------------------------------------

    TEST_CASE("10 000 coroutines on 100 names queue locally: each granted in turn, few threads") {
        // Lease strategies (select_for_update pins a connection per holder by design).
        if (!lease_strategy())
            return;
        constexpr std::size_t names = 100;
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
        // 2 000 under the sanitizers: they look for races and misuse, not for scale, and the
        // 10 000 took 277 s under ThreadSanitizer (past the suite's ctest timeout).
        constexpr std::size_t per_name = 20;
#else
        constexpr std::size_t per_name = 100;
#endif
        const auto base = unique_name("async-many");
        asio::io_context io;
        std::vector<std::unique_ptr<sqlock::async_mutex>> locks;
        for (std::size_t n = 0; n < names; ++n)
            locks.push_back(std::make_unique<sqlock::async_mutex>(
                io.get_executor(), db(), base + "-" + std::to_string(n), test::opts()));
        struct per_name_state {
            std::mutex mutex;
            int inside = 0;
            std::int64_t last_token = 0;
        };
        std::vector<per_name_state> state(names);
        std::atomic<std::size_t> granted{0}, overlaps{0}, out_of_order{0};
        for (std::size_t w = 0; w < names * per_name; ++w) {
            const std::size_t n = w % names;
            asio::co_spawn(
                io,
                [&, n]() -> asio::awaitable<void> {
                    auto guard = co_await locks[n]->async_lock(asio::use_awaitable);
                    {
                        std::lock_guard lock(state[n].mutex);
                        overlaps += state[n].inside++ != 0;
                        out_of_order += guard.token() <= state[n].last_token;
                        state[n].last_token = guard.token();
                    }
                    // Held across a suspension, so that an overlap would have time to show.
                    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
                    {
                        std::lock_guard lock(state[n].mutex);
                        --state[n].inside;
                    }
                    ++granted;
                    co_await guard.async_unlock(asio::use_awaitable);
                },
                asio::detached);
        }
        const auto threads_before = thread_count();
        const bool server = test::backend().kind != sqlock::backend_kind::sqlite;
        std::atomic<bool> running{true};
        std::size_t most_threads = 0, most_connections = 0;
        std::thread watcher([&] {
            while (running) {
                most_threads = std::max(most_threads, thread_count());
                if (server)
                    most_connections =
                        std::max(most_connections, test::server_client_ports(getpid()).size());
                std::this_thread::sleep_for(20ms);
            }
        });
        const auto start = std::chrono::steady_clock::now();
        std::thread second([&] { io.run(); }); // two threads run the coroutines
        io.run();
        second.join();
        const auto took = std::chrono::steady_clock::now() - start;
        running = false;
        watcher.join();
        MESSAGE(
            names * per_name << " waiters on " << names << " names: "
                             << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                             << " ms; threads " << threads_before << " before, at most "
                             << most_threads << "; server connections at most "
                             << most_connections);
        CHECK(granted == names * per_name);
        CHECK(overlaps == 0);
        CHECK(out_of_order == 0);
        // Heads and releases run on fibers of the two io threads: no thread of the pool at all
        // (acquire, release or timer); only the watcher, the second io thread and at most
        // sqlock's fixed background threads (the lease keeper's, started on the first grant
        // if no earlier test started them): none per waiter.
        CHECK(most_threads <= threads_before + 2 + 2);
        if (server)
            CHECK(most_connections <= names);
    }
}
