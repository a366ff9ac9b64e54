// The asynchronous semaphore and shared mutex (docs/site/guides/async.md), compiled and run in
// CI so they cannot rot: eight coroutines on one thread share 3 permits of "exports" (never
// more than 3 at once), then readers of "catalog" read side by side while a writer waits for
// them, and the writer's token comes out above every reader's.
//   example_async_semaphore [URL]   (default: sqlite:example-async-semaphore.db)
#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <iostream>
#include <sqlock/async.hpp>
#include <sqlock/sqlock.hpp>

using namespace std::chrono_literals;

namespace {

/// How many exports run at once, and the most seen.
struct counts {
    int now = 0;
    int most = 0;
    int done = 0;
};

asio::awaitable<void> pause(std::chrono::milliseconds d) {
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

// ASYNC-BEGIN semaphore
asio::awaitable<void> run_export(sqlock::async_semaphore& exports, counts& c) {
    // One of the semaphore's permits, awaited without blocking the thread.
    sqlock::async_guard permit = co_await exports.async_acquire(asio::use_awaitable);
    c.most = std::max(c.most, ++c.now);
    co_await pause(30ms); // the export; fence what it writes with permit.token()
    --c.now;
    ++c.done;
    co_await permit.async_unlock(asio::use_awaitable);
}
// ASYNC-END semaphore

// ASYNC-BEGIN shared
asio::awaitable<std::int64_t> read_catalog(sqlock::async_shared_mutex& catalog) {
    sqlock::async_guard reader = co_await catalog.async_lock_shared(asio::use_awaitable);
    co_await pause(50ms); // readers hold it side by side
    co_return reader.token();
}

asio::awaitable<std::int64_t> rewrite_catalog(sqlock::async_shared_mutex& catalog) {
    sqlock::async_guard writer = co_await catalog.async_lock(asio::use_awaitable);
    co_return writer.token(); // above every earlier grant's, readers' included
}
// ASYNC-END shared

} // namespace

int main(int argc, char** argv) {
    try {
        sqlock::database db =
            sqlock::connect(argc > 1 ? argv[1] : "sqlite:example-async-semaphore.db");
        db.migrate();
        asio::io_context io; // one thread: main's
        sqlock::async_semaphore exports(io.get_executor(), db, "exports", 3, {.ttl = 30s});
        counts c;
        for (int i = 0; i < 8; ++i)
            asio::co_spawn(io, run_export(exports, c), [](std::exception_ptr e) {
                if (e)
                    std::rethrow_exception(e);
            });
        io.run();

        io.restart();
        sqlock::async_shared_mutex catalog(io.get_executor(), db, "catalog", {.ttl = 30s});
        std::int64_t highest_reader = 0;
        std::int64_t writer = 0;
        const auto keep = [](std::int64_t& into) {
            return [&into](std::exception_ptr e, std::int64_t token) {
                if (e)
                    std::rethrow_exception(e);
                into = std::max(into, token);
            };
        };
        for (int i = 0; i < 3; ++i)
            asio::co_spawn(io, read_catalog(catalog), keep(highest_reader));
        asio::co_spawn(io, rewrite_catalog(catalog), keep(writer));
        io.run();

        std::cout << c.done << " exports ran, at most " << c.most << " at once; the writer's token "
                  << (writer > highest_reader ? "is above the readers'" : "is NOT above") << "\n";
        return c.done == 8 && c.most <= 3 && writer > highest_reader ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
}
