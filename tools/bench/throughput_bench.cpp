// sqlock_throughput_bench — grants per second on DISTINCT names (no contention between
// threads for a lock) with 1, 2, 4 and 8 threads sharing one sqlock::database
// (connect_options::pool_size = threads), per database × strategy.
//
// Each configuration gets a fresh sqlock::database; each thread its own sqlock::mutex on its
// own name, looping lock() + unlock(). After a warm-up (connections, prepared statements,
// first-use rows) grants are counted for --seconds. Configurations are INTERLEAVED: --reps
// repetitions of the whole matrix, the thread counts in alternating order, so every
// configuration samples the machine's noise at several moments; the table shows the mean of
// the repetitions and their spread. See tools/bench/README.md.
#include "bench_common.hpp"

#include <atomic>
#include <iostream>
#include <mutex>
#include <sqlock/sqlock.hpp>
#include <thread>

namespace {

constexpr const char* usage_text =
    R"(usage: sqlock_throughput_bench --url URL [--url URL ...] [--threads 1,2,4,8]
                               [--seconds S] [--warmup S] [--reps R] [--json FILE]
                               [--markdown FILE]

Grants per second with T threads, each locking and unlocking its own lock name, all through
one sqlock::database (pool_size = T), for each strategy; R interleaved repetitions (default 2)
of S seconds (default 1.0) after a warm-up (default 0.3 s).

Exit status: 0 ok; 1 a configuration failed; 2 usage.
)";

using bench::usage_error;

struct config {
    std::vector<std::string> urls;
    std::vector<int> threads{1, 2, 4, 8};
    double seconds = 1.0;
    double warmup = 0.3;
    int reps = 2;
    std::string json_path;
    std::string markdown_path;
};

const std::pair<sqlock::strategy, const char*> strategies[] = {
    {sqlock::strategy::unique_key, "unique_key"},
    {sqlock::strategy::select_for_update, "select_for_update"},
    {sqlock::strategy::optimistic_version, "optimistic_version"},
};

struct cell {
    std::string url;
    bench::backend db = bench::backend::postgresql;
    std::string strategy;
    int threads = 0;
    std::vector<double> per_rep; ///< grants/s of each repetition
    std::string error;           ///< first failure, if any
};

/// One configuration: returns grants per second; throws the first worker failure.
double run_one(const std::string& url, sqlock::strategy s, const std::string& strategy_name,
               int threads, const config& cfg, int rep) {
    sqlock::connect_options options;
    options.pool_size = static_cast<std::size_t>(threads);
    sqlock::database db = sqlock::connect(url, options);

    std::atomic<int> phase{0}; // 0 warm-up, 1 measuring, 2 stop
    std::atomic<int> ready{0};
    std::vector<std::int64_t> counts(static_cast<std::size_t>(threads), 0);
    std::mutex error_mutex;
    std::string first_error;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            try {
                sqlock::mutex m(db,
                                "sqlock-bench:throughput:" + strategy_name + ":" +
                                    std::to_string(threads) + ":" + std::to_string(t),
                                {.strategy = s});
                std::int64_t n = 0;
                bool first = true;
                for (;;) {
                    const int p = phase.load(std::memory_order_relaxed);
                    if (p == 2)
                        break;
                    m.lock();
                    m.unlock();
                    if (const std::string e = m.last_error(); !e.empty())
                        throw std::runtime_error("unlock: " + e);
                    if (first) {
                        first = false;
                        ready.fetch_add(1); // connected, prepared, lock row created
                    }
                    if (phase.load(std::memory_order_relaxed) == 1 && p == 1)
                        ++n; // started and ended inside the measured window
                }
                counts[static_cast<std::size_t>(t)] = n;
            } catch (const std::exception& e) {
                const std::lock_guard lock(error_mutex);
                if (first_error.empty())
                    first_error = e.what();
                phase.store(2);
            }
        });
    }
    const auto sleep_s = [](double how_long) {
        std::this_thread::sleep_for(
            std::chrono::nanoseconds(static_cast<std::int64_t>(how_long * 1e9)));
    };
    // Warm-up: every thread has made its first grant, then cfg.warmup more seconds.
    const std::int64_t give_up = bench::now_ns() + 30'000'000'000;
    while (ready.load() < threads && phase.load() != 2 && bench::now_ns() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    sleep_s(cfg.warmup);
    int warming = 0;
    phase.compare_exchange_strong(warming, 1); // stays 2 after a failure
    const std::int64_t t0 = bench::now_ns();
    sleep_s(cfg.seconds);
    const std::int64_t t1 = bench::now_ns();
    phase.store(2);
    for (auto& w : workers)
        w.join();
    if (!first_error.empty())
        throw std::runtime_error(first_error);
    std::int64_t total = 0;
    for (const auto c : counts)
        total += c;
    const double per_second = static_cast<double>(total) / (static_cast<double>(t1 - t0) / 1e9);
    std::cerr << "throughput_bench: rep " << rep << " "
              << bench::backend_label(bench::backend_of(url)) << " " << strategy_name << " "
              << threads << " threads: " << bench::fixed(per_second, 0) << " grants/s\n";
    return per_second;
}

std::string markdown(const std::vector<cell>& cells, const config& cfg) {
    std::ostringstream o;
    o << "### Throughput: distinct names, T threads, one shared `sqlock::database`\n\n"
      << "Each thread locks and unlocks its own name (no lock contention; the threads share the "
         "pool, pool_size = T, and the machine's 2 vCPUs with the server). Grants per second, "
         "mean of "
      << cfg.reps << " interleaved repetitions of " << bench::fixed(cfg.seconds, 1)
      << " s each [min–max].\n\n| database | strategy |";
    for (const int t : cfg.threads)
        o << " T=" << t << " grants/s |";
    o << " T=" << cfg.threads.back() << " / T=" << cfg.threads.front() << " |\n|---|---|";
    for (std::size_t i = 0; i <= cfg.threads.size(); ++i)
        o << "---:|";
    o << "\n";
    for (std::size_t i = 0; i < cells.size(); i += cfg.threads.size()) {
        o << "| " << bench::backend_label(cells[i].db) << " | " << cells[i].strategy << " |";
        double first = 0;
        double last = 0;
        for (std::size_t k = 0; k < cfg.threads.size(); ++k) {
            const cell& c = cells[i + k];
            if (!c.error.empty() || c.per_rep.empty()) {
                o << " FAILED |";
                last = 0;
                continue;
            }
            double sum = 0;
            for (const double v : c.per_rep)
                sum += v;
            const double mean = sum / static_cast<double>(c.per_rep.size());
            const auto [lo, hi] = std::minmax_element(c.per_rep.begin(), c.per_rep.end());
            o << " " << bench::fixed(mean, 0) << " [" << bench::fixed(*lo, 0) << "–"
              << bench::fixed(*hi, 0) << "] |";
            if (k == 0)
                first = mean;
            last = mean;
        }
        o << " " << (first > 0 && last > 0 ? bench::ratio_text(last / first) : "–") << " |\n";
    }
    for (const auto& c : cells)
        if (!c.error.empty())
            o << "\nFAILED: " << bench::backend_label(c.db) << " " << c.strategy
              << " T=" << c.threads << ": " << c.error << "\n";
    return o.str();
}

std::string json(const std::vector<cell>& cells, const config& cfg) {
    std::ostringstream o;
    o << "{\"seconds\": " << cfg.seconds << ", \"warmup_seconds\": " << cfg.warmup
      << ", \"reps\": " << cfg.reps << ", \"results\": [";
    for (std::size_t i = 0; i < cells.size(); ++i) {
        const cell& c = cells[i];
        double sum = 0;
        for (const double v : c.per_rep)
            sum += v;
        const double mean = c.per_rep.empty() ? NAN : sum / static_cast<double>(c.per_rep.size());
        o << (i ? ",\n  " : "\n  ")
          << "{\"backend\": " << bench::json_string(bench::backend_label(c.db))
          << ", \"strategy\": " << bench::json_string(c.strategy) << ", \"threads\": " << c.threads
          << ", \"grants_per_second\": " << bench::json_number(mean, 1) << ", \"per_rep\": [";
        for (std::size_t k = 0; k < c.per_rep.size(); ++k)
            o << (k ? ", " : "") << bench::json_number(c.per_rep[k], 1);
        o << "], \"error\": " << (c.error.empty() ? "null" : bench::json_string(c.error)) << "}";
    }
    o << "]}\n";
    return o.str();
}

config parse_args(int argc, char** argv) {
    config cfg;
    bench::for_each_option(argc, argv, usage_text, [&](const std::string& a, const std::string& v) {
        if (a == "--url") {
            bench::backend_of(v); // a usage_error unless sqlock takes the URL
            cfg.urls.push_back(v);
        } else if (a == "--threads") {
            cfg.threads.clear();
            std::stringstream ss(v);
            for (std::string item; std::getline(ss, item, ',');) {
                const int t = std::stoi(item);
                if (t < 1 || t > 64)
                    throw usage_error("--threads: each count must be 1..64");
                cfg.threads.push_back(t);
            }
            if (cfg.threads.empty())
                throw usage_error("--threads: empty list");
        } else if (a == "--seconds") {
            cfg.seconds = std::stod(v);
        } else if (a == "--warmup") {
            cfg.warmup = std::stod(v);
        } else if (a == "--reps") {
            cfg.reps = std::stoi(v);
        } else if (a == "--json") {
            cfg.json_path = v;
        } else if (a == "--markdown") {
            cfg.markdown_path = v;
        } else {
            throw usage_error("unknown option " + a);
        }
    });
    if (cfg.urls.empty())
        throw usage_error("at least one --url is required");
    if (!(cfg.seconds > 0 && cfg.seconds <= 600) || !(cfg.warmup >= 0 && cfg.warmup <= 60) ||
        cfg.reps < 1 || cfg.reps > 100)
        throw usage_error("--seconds must be in (0, 600], --warmup in [0, 60], --reps 1..100");
    return cfg;
}

int run(const config& cfg) {
    std::vector<cell> cells;
    for (const auto& url : cfg.urls) {
        sqlock::database db = sqlock::connect(url);
        db.migrate();
        for (const auto& [s, name] : strategies)
            for (const int t : cfg.threads)
                cells.push_back({url, bench::backend_of(url), name, t, {}, {}});
    }
    bool failed = false;
    for (int rep = 0; rep < cfg.reps; ++rep) {
        for (std::size_t i = 0; i < cells.size(); i += cfg.threads.size()) {
            for (std::size_t k = 0; k < cfg.threads.size(); ++k) {
                // Alternate the order of the thread counts from one repetition to the next.
                const std::size_t index = rep % 2 == 0 ? k : cfg.threads.size() - 1 - k;
                cell& c = cells[i + index];
                if (!c.error.empty())
                    continue;
                sqlock::strategy s = sqlock::strategy::unique_key;
                for (const auto& [st, name] : strategies)
                    if (c.strategy == name)
                        s = st;
                try {
                    c.per_rep.push_back(run_one(c.url, s, c.strategy, c.threads, cfg, rep));
                } catch (const std::exception& e) {
                    c.error = e.what();
                    failed = true;
                    std::cerr << "throughput_bench: " << bench::backend_label(c.db) << " "
                              << c.strategy << " " << c.threads << " threads FAILED: " << e.what()
                              << "\n";
                }
            }
        }
    }
    const std::string md = markdown(cells, cfg);
    std::cout << md;
    if (!cfg.markdown_path.empty())
        bench::write_file(cfg.markdown_path, md);
    if (!cfg.json_path.empty())
        bench::write_file(cfg.json_path, json(cells, cfg));
    return failed ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
    return bench::bench_main<config>("sqlock_throughput_bench", usage_text, argc, argv, parse_args,
                                     run);
}
