// sqlock_capi_bench — what the C API (include/sqlock/sqlock.h, libsqlock-c) adds to an
// uncontended acquire + release: sqlock_mutex_lock() + sqlock_mutex_unlock() against
// sqlock::mutex lock() + unlock() on the same database and strategy.
//
// For every database (--url, repeatable) and strategy, two variants, each on its own lock name
// and its own connection pool (opened the same way): "C++" (sqlock::connect, sqlock::mutex) and
// "C" (sqlock_db_open, sqlock_mutex_*, no cancel token: the path a wait without one takes),
// interleaved (paired_bench.hpp). The issue's target: C / C++ at most 1.05x. See
// tools/bench/README.md.
#include "paired_bench.hpp"

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

using config = bench::paired::config;

const bench::paired::description about{
    "C API vs C++ API", {"C++", "C"}, {"cpp", "c"}, "≤ 1.05×", [](bench::backend) {
        return 1.05;
    }};

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

    /// `n` acquire + release pairs of variant `which` (0: C++, 1: C), in µs each.
    std::vector<double> pairs(int which, int n) {
        std::vector<double> out;
        for (int i = 0; i < n; ++i) {
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
            out.push_back(static_cast<double>(bench::now_ns() - t0) / 1000.0);
        }
        return out;
    }

private:
    sqlock::database m_db;
    std::optional<sqlock::mutex> m_cpp;
    sqlock_db* m_c_db = nullptr;
    sqlock_mutex* m_c = nullptr;
};

config parse(int argc, char** argv) {
    return bench::paired::parse(argc, argv, usage_text);
}

int run(const config& cfg) {
    return bench::paired::run<variants>(cfg, about);
}

} // namespace

int main(int argc, char** argv) {
    return bench::bench_main("sqlock_capi_bench", usage_text, argc, argv, parse, run);
}
