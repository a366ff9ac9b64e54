// sqlock_async_bench — what the asynchronous API (include/sqlock/async.hpp) adds to an
// uncontended acquire + release: `co_await m.async_lock(asio::use_awaitable)` + `co_await
// guard.async_unlock(asio::use_awaitable)` in a coroutine, against sqlock::mutex lock() +
// unlock() on the same database and strategy.
//
// For every database (--url, repeatable) and strategy, two variants on their own lock names and
// one connection pool: "sync" (sqlock::mutex, on the calling thread) and "async" (a
// sqlock::async_mutex whose coroutine runs on an io_context of its own thread; the acquire runs
// on the pool's acquire thread, the release on its release thread, as in an application),
// interleaved (paired_bench.hpp). Issue 37's targets: at most 1.1x on PostgreSQL, 1.3x on MariaDB
// and SQLite. See tools/bench/README.md.
#include "paired_bench.hpp"

#include <asio/co_spawn.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <iostream>
#include <sqlock/async.hpp>
#include <sqlock/sqlock.hpp>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

constexpr const char* usage_text =
    R"(usage: sqlock_async_bench --url URL [--url URL ...] [--strategy S ...] [--rounds R]
                          [--batch B] [--on-workers] [--json FILE] [--markdown FILE]

Uncontended acquire + release awaited in a coroutine (async_mutex::async_lock, async_unlock)
against the sync API (sqlock::mutex lock/unlock), same database and strategy, interleaved: R
rounds (default 30, plus one warm-up round) of B pairs each (default 40). --strategy
(repeatable; default all three) picks strategies. --on-workers runs the async variant with
async_options::on_workers (worker threads where it would run on fibers: PostgreSQL, SQLite).
The targets are async / sync ratios of medians of at most 1.1x on PostgreSQL and 1.3x on
MariaDB and SQLite.

Exit status: 0 ok (the target is reported, not enforced: this machine's noise); 1 a variant
failed; 2 usage.
)";

using config = bench::paired::config;

/// --on-workers: the async variant's async_options::on_workers.
bool g_on_workers = false;

const bench::paired::description about{"Async vs sync API",
                                       {"sync", "async"},
                                       {"sync", "async"},
                                       "≤ 1.1× PostgreSQL, ≤ 1.3× MariaDB and SQLite",
                                       [](bench::backend b) {
                                           return b == sqlock::backend_kind::postgresql
                                                      ? 1.1
                                                      : 1.3; // issue 37's targets
                                       }};

/// The two variants of one cell, ready to time.
class variants {
public:
    variants(const std::string& url, const std::string& strategy) : m_db(sqlock::connect(url)) {
        m_db.migrate();
        sqlock::mutex_options o;
        o.strategy = sqlock::parse_strategy(strategy);
        const auto suffix = std::to_string(getpid()) + "-" + strategy;
        m_sync.emplace(m_db, "async-bench-sync-" + suffix, o);
        m_async.emplace(m_io.get_executor(), m_db, "async-bench-async-" + suffix, o,
                        sqlock::async_options{.on_workers = g_on_workers});
    }
    ~variants() {
        m_async.reset(); // nothing in flight: no acquire to cancel
        m_work.reset();
        m_thread.join();
    }
    variants(const variants&) = delete;
    variants& operator=(const variants&) = delete;

    /// `n` acquire + release pairs of variant `which` (0: sync, 1: async), in µs each.
    std::vector<double> pairs(int which, int n) {
        if (which == 1)
            return asio::co_spawn(m_io, async_pairs(n), asio::use_future).get();
        std::vector<double> out;
        for (int i = 0; i < n; ++i) {
            const auto t0 = bench::now_ns();
            m_sync->lock();
            m_sync->unlock();
            out.push_back(static_cast<double>(bench::now_ns() - t0) / 1000.0);
        }
        return out;
    }

private:
    /// On the io thread: each pair timed from the coroutine's view.
    asio::awaitable<std::vector<double>> async_pairs(int n) {
        std::vector<double> out;
        for (int i = 0; i < n; ++i) {
            const auto t0 = bench::now_ns();
            auto guard = co_await m_async->async_lock(asio::use_awaitable);
            co_await guard.async_unlock(asio::use_awaitable);
            out.push_back(static_cast<double>(bench::now_ns() - t0) / 1000.0);
        }
        co_return out;
    }

    sqlock::database m_db;
    asio::io_context m_io;
    asio::executor_work_guard<asio::io_context::executor_type> m_work{m_io.get_executor()};
    std::thread m_thread{[this] {
        m_io.run();
    }};
    std::optional<sqlock::mutex> m_sync;
    std::optional<sqlock::async_mutex> m_async;
};

config parse(int argc, char** argv) {
    std::vector<char*> rest;
    for (int i = 0; i < argc; ++i) {
        if (i > 0 && std::string_view(argv[i]) == "--on-workers")
            g_on_workers = true;
        else
            rest.push_back(argv[i]);
    }
    return bench::paired::parse(static_cast<int>(rest.size()), rest.data(), usage_text);
}

int run(const config& cfg) {
    return bench::paired::run<variants>(cfg, about);
}

} // namespace

int main(int argc, char** argv) {
    return bench::bench_main("sqlock_async_bench", usage_text, argc, argv, parse, run);
}
