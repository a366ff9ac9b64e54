// sqlock_capi_bench — what the C API (include/sqlock/sqlock.h, libsqlock-c) adds to an
// uncontended acquire + release: sqlock_mutex_lock() + sqlock_mutex_unlock() against
// sqlock::mutex lock() + unlock() on the same database and strategy.
//
// For every database (--url, repeatable) and strategy, two variants, each on its own lock name
// and its own connection pool (opened the same way): "C++" (sqlock::connect, sqlock::mutex) and
// "C" (sqlock_db_open, sqlock_mutex_*, no cancel token: the path a wait without one takes).
// They run INTERLEAVED: every round times a batch of each, the order alternating from round to
// round, so both share the machine's noise (round 0 is a warm-up and is not counted). The ratio
// is C / C++ of the medians over all samples; the per-round range shows how stable it is. The
// issue's target: at most 1.05x. See tools/bench/README.md.
#include "bench_common.hpp"

#include <iostream>
#include <sqlock/sqlock.h>
#include <sqlock/sqlock.hpp>
#include <unistd.h>

namespace {

constexpr const char* usage_text =
    R"(usage: sqlock_capi_bench --url URL [--url URL ...] [--strategy S ...] [--rounds R]
                         [--batch B] [--json FILE] [--markdown FILE]

Uncontended acquire + release through the C API (sqlock_mutex_lock/unlock) against the C++ API
(sqlock::mutex lock/unlock), same database and strategy, interleaved: R rounds (default 30, plus
one warm-up round) of B pairs each (default 40). --strategy (repeatable; default all three)
picks strategies. The target is a C / C++ ratio of medians of at most 1.05x.

Exit status: 0 ok (the target is reported, not enforced: this machine's noise); 1 a variant
failed; 2 usage.
)";

constexpr double target_ratio = 1.05;

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
    std::vector<double> samples[2]; // [0] C++, [1] C; µs per acquire + release
    std::vector<double> round_ratio;
    bench::summary stats[2];
    double ratio = 0;
    std::string error;
};

/// Throws when a C API call fails (the benchmark stops on any error).
void check(int rc, sqlock_error* err, const char* what) {
    if (rc == SQLOCK_OK)
        return;
    const std::string message = err ? sqlock_error_message(err) : sqlock_code_name(rc);
    sqlock_error_free(err);
    throw std::runtime_error(std::string(what) + ": " + message);
}

/// The two variants of one cell, ready to time.
class variants {
public:
    variants(const std::string& url, const std::string& strategy) : m_db(sqlock::connect(url)) {
        m_db.migrate();
        sqlock::mutex_options o;
        o.strategy = sqlock::parse_strategy(strategy);
        const auto suffix = std::to_string(getpid()) + "-" + strategy;
        m_cpp.emplace(m_db, "capi-bench-cpp-" + suffix, o);
        sqlock_error* err = nullptr;
        check(sqlock_db_open(&m_c_db, url.c_str(), nullptr, &err), err, "sqlock_db_open");
        sqlock_lock_options co;
        sqlock_lock_options_init(&co);
        co.strategy = static_cast<int>(o.strategy); // the enums agree (sqlock.h)
        check(sqlock_mutex_open(&m_c, m_c_db, ("capi-bench-c-" + suffix).c_str(), &co, &err), err,
              "sqlock_mutex_open");
    }
    ~variants() {
        sqlock_mutex_close(m_c);
        sqlock_db_close(m_c_db);
    }
    variants(const variants&) = delete;
    variants& operator=(const variants&) = delete;

    /// One acquire + release of variant `which` (0: C++, 1: C), in µs.
    double pair(int which) {
        const auto t0 = bench::now_ns();
        if (which == 0) {
            m_cpp->lock();
            m_cpp->unlock();
        } else {
            sqlock_error* err = nullptr;
            std::int64_t token = 0;
            check(sqlock_mutex_lock(m_c, SQLOCK_WAIT_FOREVER, nullptr, &token, &err), err,
                  "sqlock_mutex_lock");
            check(sqlock_mutex_unlock(m_c, &err), err, "sqlock_mutex_unlock");
        }
        return static_cast<double>(bench::now_ns() - t0) / 1000.0;
    }

private:
    sqlock::database m_db;
    std::optional<sqlock::mutex> m_cpp;
    sqlock_db* m_c_db = nullptr;
    sqlock_mutex* m_c = nullptr;
};

void measure(cell& c, const std::string& url, const config& cfg) {
    variants v(url, c.strategy);
    std::vector<double> batch;
    for (int round = 0; round <= cfg.rounds; ++round) {
        double medians[2] = {0, 0};
        for (int k = 0; k < 2; ++k) {
            const int which = (round + k) % 2; // alternate who goes first
            batch.clear();
            for (int i = 0; i < cfg.batch; ++i)
                batch.push_back(v.pair(which));
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
    o << "C API vs C++ API, uncontended acquire + release (µs; " << cfg.rounds
      << " interleaved rounds × " << cfg.batch
      << " pairs per variant; C / C++ = ratio of medians; per-round = min–max of the "
         "per-round ratio). Target ≤ "
      << bench::ratio_text(target_ratio) << ".\n\n"
      << "| database | strategy | C++ median | C median | C++ p99 | C p99 | **C / C++** | "
         "per-round | target |\n|---|---|---|---|---|---|---|---|---|\n";
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
          << bench::fixed(range.back(), 2) << " | " << (c.ratio <= target_ratio ? "met" : "missed")
          << " |\n";
    }
    return o.str();
}

std::string json(const std::vector<cell>& cells, const config& cfg) {
    std::ostringstream o;
    o << "{\"rounds\": " << cfg.rounds << ", \"batch\": " << cfg.batch
      << ", \"target\": " << bench::json_number(target_ratio) << ", \"cells\": [";
    for (std::size_t i = 0; i < cells.size(); ++i) {
        const auto& c = cells[i];
        o << (i ? ", " : "") << "{\"database\": " << bench::json_string(c.url_label)
          << ", \"strategy\": " << bench::json_string(c.strategy)
          << ", \"cpp_median_us\": " << bench::json_number(c.stats[0].median)
          << ", \"c_median_us\": " << bench::json_number(c.stats[1].median)
          << ", \"cpp_p99_us\": " << bench::json_number(c.stats[0].p99)
          << ", \"c_p99_us\": " << bench::json_number(c.stats[1].p99)
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
    return bench::bench_main("sqlock_capi_bench", usage_text, argc, argv, parse, run);
}
