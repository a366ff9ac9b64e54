// The asynchronous mutex (docs/site/guides/async.md), compiled and run in CI so it cannot rot:
// five coroutines on one thread take turns at "reports:nightly" without blocking that thread;
// each runs its work under run_while_held(), which would cancel it before the lease could end;
// a sixth gives up after a timeout, and a seventh is cancelled while it waits.
//   example_async_mutex [URL]   (default: sqlite:example-async.db)
#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <iostream>
#include <sqlock/async.hpp>
#include <sqlock/sqlock.hpp>
#include <vector>

using namespace std::chrono_literals;

namespace {

// ASYNC-BEGIN work
/// The work the lock guards: it only has to let cancellation end it (Asio operations do).
asio::awaitable<int> nightly_report(std::int64_t token) {
    asio::steady_timer timer(co_await asio::this_coro::executor, 20ms);
    co_await timer.async_wait(asio::use_awaitable); // pass `token` to what the work writes
    co_return static_cast<int>(token % 1000);
}
// ASYNC-END work

// ASYNC-BEGIN holder
asio::awaitable<void> run_report(sqlock::async_mutex& lock, std::vector<std::int64_t>& tokens) {
    // Waits without blocking the thread; the guard, not the thread, owns the grant.
    sqlock::async_guard guard = co_await lock.async_lock(asio::use_awaitable);
    tokens.push_back(guard.token());
    // Cancelled when the grant is lost, or 2 s before its lease would end unrenewed.
    co_await sqlock::run_while_held(guard, nightly_report(guard.token()), 2s);
    co_await guard.async_unlock(asio::use_awaitable); // or let the guard go out of scope
}
// ASYNC-END holder

/// After the five: another owner holds the lock; one caller times out, one is cancelled.
asio::awaitable<void> latecomers(sqlock::async_mutex& lock, sqlock::async_mutex& other,
                                 bool& timed_out, bool& cancelled) {
    sqlock::async_guard held = co_await other.async_lock(asio::use_awaitable);
    {
        // ASYNC-BEGIN timeout
        sqlock::async_guard guard = co_await lock.async_try_lock_for(50ms, asio::use_awaitable);
        if (!guard) {
            // not granted within 50 ms
        }
        // ASYNC-END timeout
        timed_out = !guard;
    }
    asio::cancellation_signal stop;
    // ASYNC-BEGIN cancel
    lock.async_lock(
        asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e, sqlock::async_guard) {
            cancelled = e != nullptr; // operation_aborted: nothing is held
        }));
    stop.emit(asio::cancellation_type::terminal);
    // ASYNC-END cancel
    co_await asio::steady_timer(co_await asio::this_coro::executor, 100ms)
        .async_wait(asio::use_awaitable); // (the completion runs meanwhile)
}

} // namespace

int main(int argc, char** argv) {
    try {
        sqlock::database db = sqlock::connect(argc > 1 ? argv[1] : "sqlite:example-async.db");
        db.migrate();
        asio::io_context io; // one thread: main's
        sqlock::async_mutex lock(io.get_executor(), db, "reports:nightly",
                                 {.ttl = 30s, .renew = true});
        std::vector<std::int64_t> tokens;
        sqlock::async_mutex other(io.get_executor(), db, "reports:nightly", {.ttl = 30s});
        bool timed_out = false;
        bool cancelled = false;
        int finished = 0;
        for (int i = 0; i < 5; ++i)
            asio::co_spawn(io, run_report(lock, tokens), [&](std::exception_ptr e) {
                if (e)
                    std::rethrow_exception(e);
                if (++finished == 5)
                    asio::co_spawn(io, latecomers(lock, other, timed_out, cancelled),
                                   asio::detached);
            });
        io.run();

        bool increasing = true;
        for (std::size_t i = 1; i < tokens.size(); ++i)
            increasing = increasing && tokens[i] > tokens[i - 1];
        std::cout << tokens.size() << " reports ran, tokens "
                  << (increasing ? "increasing" : "NOT increasing") << "; the impatient one "
                  << (timed_out ? "timed out" : "got it") << "; the cancelled one "
                  << (cancelled ? "was cancelled" : "was not") << "\n";
        return tokens.size() == 5 && increasing && timed_out && cancelled ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
}
