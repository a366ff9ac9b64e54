// sqlock_async_bench — what the asynchronous API (include/sqlock/async.hpp) adds to an
// uncontended acquire + release: `co_await m.async_lock(asio::use_awaitable)` + `co_await
// guard.async_unlock(asio::use_awaitable)` in a coroutine, against sqlock::mutex lock() +
// unlock() on the same database and strategy.
//
// For every database (--url, repeatable) and strategy, two variants on their own lock names and
// one connection pool: "sync" (sqlock::mutex, on the calling thread) and "async" (a
// sqlock::async_mutex whose coroutine runs on an io_context of its own thread; the acquire runs
// on the pool's acquire thread, the release on its release thread, as in an application). They
// run INTERLEAVED: every round times a batch of each, the order alternating from round to
// round, so both share the machine's noise (round 0 is a warm-up and is not counted). The ratio
// is async / sync of the medians over all samples; the per-round range shows how stable it is.
// Issue 37's targets: at most 1.1x on PostgreSQL, 1.3x on MariaDB and SQLite. See
// tools/bench/README.md.
#include "bench_common.hpp"

#include <asio/co_spawn.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <iostream>
#include <sqlock/async.hpp>
#include <sqlock/sqlock.hpp>
#include <thread>
#include <unistd.h>

namespace {

constexpr const char* usage_text =
    R"(usage: sqlock_async_bench --url URL [--url URL ...] [--strategy S ...] [--rounds R]
                          [--batch B] [--json FILE] [--markdown FILE]

Uncontended acquire + release awaited in a coroutine (async_mutex::async_lock, async_unlock)
against the sync API (sqlock::mutex lock/unlock), same database and strategy, interleaved: R
rounds (default 30, plus one warm-up round) of B pairs each (default 40). --strategy
(repeatable; default all three) picks strategies. The targets are async / sync ratios of
medians of at most 1.1x on PostgreSQL and 1.3x on MariaDB and SQLite.

Exit status: 0 ok (the target is reported, not enforced: this machine's noise); 1 a variant
failed; 2 usage.
)";

/// Issue 37's target for `backend`.
double target_ratio(sqlock::backend_kind backend) {
    return backend == sqlock::backend_kind::postgresql ? 1.1 : 1.3;
}

using bench::usage_error;

struct config {
    std::vector<std::string> urls;
    std::vector<std::string> strategies;
    int rounds = 30;
    int batch = 40;
    std::string json_path;
    std::string markdown_path;
};

config parse(int argc, char** argv) {
    config c;
    bench::for_each_option(argc, argv, usage_text, [&](std::string_view flag, std::string value) {
        if (flag == "--url")
            c.urls.push_back(value);
        else if (flag == "--strategy")
            c.strategies.push_back(std::string(sqlock::to_string(sqlock::parse_strategy(value))));
        else if (flag == "--rounds")
            c.rounds = static_cast<int>(bench::parse_int(flag, value));
        else if (flag == "--batch")
            c.batch = static_cast<int>(bench::parse_int(flag, value));
        else if (flag == "--json")
            c.json_path = value;
        else if (flag == "--markdown")
            c.markdown_path = value;
        else
            throw usage_error("unknown option " + std::string(flag));
    });
    if (c.urls.empty())
        throw usage_error("at least one --url is needed");
    if (c.rounds < 1 || c.batch < 1)
        throw usage_error("--rounds and --batch must be at least 1");
    if (c.strategies.empty())
        c.strategies = {"unique_key", "select_for_update", "optimistic_version"};
    return c;
}

/// One cell: a database and strategy, both variants' samples and per-round medians.
struct cell {
    std::string url_label;
    std::string strategy;
    double target = 0;
    std::vector<double> samples[2]; // [0] sync, [1] async; µs per acquire + release
    std::vector<double> round_ratio;
    bench::summary stats[2];
    double ratio = 0;
    std::string error;
};

/// The two variants of one cell, ready to time.
class variants {
public:
    variants(const std::string& url, const std::string& strategy) : m_db(sqlock::connect(url)) {
        m_db.migrate();
        sqlock::mutex_options o;
        o.strategy = sqlock::parse_strategy(strategy);
        const auto suffix = std::to_string(getpid()) + "-" + strategy;
        m_sync.emplace(m_db, "async-bench-sync-" + suffix, o);
        m_async.emplace(m_io.get_executor(), m_db, "async-bench-async-" + suffix, o);
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

void measure(cell& c, const std::string& url, const config& cfg) {
    variants v(url, c.strategy);
    std::vector<double> batch;
    for (int round = 0; round <= cfg.rounds; ++round) {
        double medians[2] = {0, 0};
        for (int k = 0; k < 2; ++k) {
            const int which = (round + k) % 2; // alternate who goes first
            batch = v.pairs(which, cfg.batch);
            std::sort(batch.begin(), batch.end());
            medians[which] = bench::median_of_sorted(batch);
            if (round > 0) // round 0: warm-up
                c.samples[which].insert(c.samples[which].end(), batch.begin(), batch.end());
        }
        if (round > 0)
            c.round_ratio.push_back(medians[1] / medians[0]);
    }
    for (int k = 0; k < 2; ++k)
        c.stats[k] = bench::summarise(c.samples[k]);
    c.ratio = c.stats[1].median / c.stats[0].median;
}

std::string markdown(const std::vector<cell>& cells, const config& cfg) {
    std::ostringstream o;
    o << "Async vs sync API, uncontended acquire + release (µs; " << cfg.rounds
      << " interleaved rounds × " << cfg.batch
      << " pairs per variant; async / sync = ratio of medians; per-round = min–max of the "
         "per-round ratio). Targets ≤ 1.1× PostgreSQL, ≤ 1.3× MariaDB and SQLite.\n\n"
      << "| database | strategy | sync median | async median | sync p99 | async p99 | "
         "**async / sync** | per-round | target |\n|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& c : cells) {
        o << "| " << c.url_label << " | `" << c.strategy << "` | ";
        if (!c.error.empty()) {
            o << "failed: " << c.error << " ||||||\n";
            continue;
        }
        auto range = c.round_ratio;
        std::sort(range.begin(), range.end());
        o << bench::us(c.stats[0].median) << " | " << bench::us(c.stats[1].median) << " | "
          << bench::us(c.stats[0].p99) << " | " << bench::us(c.stats[1].p99) << " | **"
          << bench::fixed(c.ratio, 3) << "×** | " << bench::fixed(range.front(), 2) << "–"
          << bench::fixed(range.back(), 2) << " | "
          << (c.ratio <= c.target ? "met (≤ " : "missed (≤ ") << bench::ratio_text(c.target) << ")"
          << " |\n";
    }
    return o.str();
}

std::string json(const std::vector<cell>& cells, const config& cfg) {
    std::ostringstream o;
    o << "{\"rounds\": " << cfg.rounds << ", \"batch\": " << cfg.batch << ", \"cells\": [";
    for (std::size_t i = 0; i < cells.size(); ++i) {
        const auto& c = cells[i];
        o << (i ? ", " : "") << "{\"database\": " << bench::json_string(c.url_label)
          << ", \"strategy\": " << bench::json_string(c.strategy)
          << ", \"sync_median_us\": " << bench::json_number(c.stats[0].median)
          << ", \"async_median_us\": " << bench::json_number(c.stats[1].median)
          << ", \"sync_p99_us\": " << bench::json_number(c.stats[0].p99)
          << ", \"async_p99_us\": " << bench::json_number(c.stats[1].p99)
          << ", \"target\": " << bench::json_number(c.target)
          << ", \"ratio_median\": " << bench::json_number(c.ratio)
          << ", \"error\": " << (c.error.empty() ? "null" : bench::json_string(c.error)) << "}";
    }
    o << "]}\n";
    return o.str();
}

int run(const config& cfg) {
    std::vector<cell> cells;
    bool failed = false;
    for (const auto& url : cfg.urls) {
        for (const auto& strategy : cfg.strategies) {
            cell c;
            c.url_label = bench::backend_label(bench::backend_of(url));
            c.target = target_ratio(bench::backend_of(url));
            c.strategy = strategy;
            try {
                measure(c, url, cfg);
            } catch (const std::exception& e) {
                c.error = e.what();
                failed = true;
            }
            cells.push_back(std::move(c));
        }
    }
    const auto md = markdown(cells, cfg);
    std::cout << md;
    if (!cfg.markdown_path.empty())
        bench::write_file(cfg.markdown_path, md);
    if (!cfg.json_path.empty())
        bench::write_file(cfg.json_path, json(cells, cfg));
    return failed ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
    return bench::bench_main("sqlock_async_bench", usage_text, argc, argv, parse, run);
}
