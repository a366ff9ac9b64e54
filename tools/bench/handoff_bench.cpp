// sqlock_handoff_bench — lock HANDOFF latency under contention.
//
// N worker processes (forked before any of them connects) take turns on one lock. Each records,
// per grant, when lock() returned (t_acq) and when it started to release (t_rel_start), on
// CLOCK_MONOTONIC, which is one clock for all processes on the host. The parent merges the
// records and reports, for consecutive grants held by different processes,
// handoff = t_acq(k) - t_rel_start(k-1): how long the lock stood free between one holder starting
// to let go and the next holder knowing it has it. It also checks mutual exclusion (no two
// processes' [t_acq, t_rel_start] intervals overlap) and, for sqlock modes, that fencing tokens
// increase in grant order.
//
// Modes: unique_key, select_for_update, optimistic_version (sqlock::mutex with that strategy, TTL
// 30 s), pg_advisory (raw libpq pg_advisory_lock/unlock), mysql_get_lock (Connector/C++
// GET_LOCK/RELEASE_LOCK). See tools/bench/README.md.
#include "bench_common.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <libpq-fe.h>
#include <limits>
#include <memory>
#include <mysql_driver.h>
#include <optional>
#include <poll.h>
#include <sqlock/sqlock.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {

constexpr const char* usage_text =
    R"(usage: sqlock_handoff_bench --url URL --mode MODE --processes N --seconds S
                            [--hold-us H] [--warmup S] [--json FILE]

Measures lock handoff under contention: N processes take turns on one lock for S seconds
(after a warm-up, default 0.5 s, that is not counted).

  MODE  unique_key | select_for_update | optimistic_version   sqlock::mutex, TTL 30 s
        pg_advisory      raw libpq pg_advisory_lock($1) / pg_advisory_unlock($1), fixed key
        mysql_get_lock   Connector/C++ GET_LOCK(?, 60) / RELEASE_LOCK(?)
        semaphore        sqlock::semaphore with 1 permit (unique_key), TTL 30 s: its waiters'
                         queue, measured like a mutex (one permit: one holder at a time)
        shared_mutex     sqlock::shared_mutex (unique_key, 4 readers), TTL 30 s, every
                         process a writer: lock() / unlock() (the writers' turns at the gate)
        leader           sqlock::leader_election, TTL 30 s: campaign() / resign(), the term as
                         the token (how campaigns take turns)
  --hold-us H   busy-hold the lock H microseconds per grant (default 0)
  --json FILE   also write the results as one JSON object

Exit status: 0 ok; 1 a worker failed or mutual exclusion / token order was violated; 2 usage.
)";

constexpr std::string_view lock_name = "sqlock-bench:handoff";
constexpr std::int64_t pg_advisory_key = 7'316'054'219'853'413'377; // fixed, arbitrary

using bench::usage_error;

enum class mode {
    unique_key,
    select_for_update,
    optimistic_version,
    pg_advisory,
    mysql_get_lock,
    semaphore,
    shared_mutex,
    leader
};

struct config {
    std::string url;
    mode bench_mode = mode::unique_key;
    std::string mode_name;
    int processes = 0;
    double seconds = 0;
    double warmup = 0.5;
    std::int64_t hold_us = 0;
    std::string json_path;
};

bool is_sqlock_mode(mode m) {
    return m == mode::unique_key || m == mode::select_for_update || m == mode::optimistic_version ||
           m == mode::semaphore || m == mode::shared_mutex || m == mode::leader;
}

/// One grant as a worker saw it. Written raw to the worker's result file.
struct record {
    std::int64_t t_acq = 0;       ///< lock() returned
    std::int64_t t_rel_start = 0; ///< about to call unlock()
    std::int64_t token = 0;       ///< sqlock fencing token; 0 for the raw baselines
};

/// A record tagged with the worker that made it (parent side).
struct grant {
    record r;
    int worker = 0;
};

// ------------------------------------------------------------------ argument parsing

config parse_args(int argc, char** argv) {
    config cfg;
    bench::for_each_option(argc, argv, usage_text, [&](const std::string& a, const std::string& v) {
        if (a == "--url") {
            cfg.url = v;
        } else if (a == "--mode") {
            cfg.mode_name = v;
            if (v == "unique_key")
                cfg.bench_mode = mode::unique_key;
            else if (v == "select_for_update")
                cfg.bench_mode = mode::select_for_update;
            else if (v == "optimistic_version")
                cfg.bench_mode = mode::optimistic_version;
            else if (v == "pg_advisory")
                cfg.bench_mode = mode::pg_advisory;
            else if (v == "mysql_get_lock")
                cfg.bench_mode = mode::mysql_get_lock;
            else if (v == "semaphore")
                cfg.bench_mode = mode::semaphore;
            else if (v == "shared_mutex")
                cfg.bench_mode = mode::shared_mutex;
            else if (v == "leader")
                cfg.bench_mode = mode::leader;
            else
                throw usage_error("unknown --mode " + v);
        } else if (a == "--processes") {
            const std::int64_t n = bench::parse_int(a, v);
            if (n < 1 || n > 256)
                throw usage_error("--processes must be 1..256");
            cfg.processes = static_cast<int>(n);
        } else if (a == "--seconds") {
            cfg.seconds = bench::parse_double(a, v);
            if (cfg.seconds <= 0 || cfg.seconds > 3600)
                throw usage_error("--seconds must be in (0, 3600]");
        } else if (a == "--warmup") {
            cfg.warmup = bench::parse_double(a, v);
            if (cfg.warmup < 0 || cfg.warmup > 600)
                throw usage_error("--warmup must be in [0, 600]");
        } else if (a == "--hold-us") {
            cfg.hold_us = bench::parse_int(a, v);
            if (cfg.hold_us < 0 || cfg.hold_us > 10'000'000)
                throw usage_error("--hold-us must be 0..10000000");
        } else if (a == "--json") {
            cfg.json_path = v;
        } else {
            throw usage_error("unknown option " + a);
        }
    });
    if (cfg.url.empty() || cfg.mode_name.empty() || cfg.processes == 0 || cfg.seconds == 0)
        throw usage_error("--url, --mode, --processes and --seconds are required");
    const bench::backend kind = bench::backend_of(cfg.url); // a usage_error unless sqlock takes it
    if (cfg.bench_mode == mode::pg_advisory && kind != bench::backend::postgresql)
        throw usage_error("pg_advisory needs a postgresql:// URL");
    if (cfg.bench_mode == mode::mysql_get_lock && kind != bench::backend::mysql)
        throw usage_error("mysql_get_lock needs a mysql:// or mariadb:// URL");
    return cfg;
}

// ------------------------------------------------------------------ lockers (one per worker)

class locker {
public:
    virtual ~locker() = default;
    /// Blocks until granted; returns the fencing token (0 when there is none). Throws on error.
    virtual std::int64_t acquire() = 0;
    /// Releases; throws when the release was not confirmed.
    virtual void release() = 0;
};

sqlock::strategy strategy_of(mode m) {
    switch (m) {
    case mode::select_for_update:
        return sqlock::strategy::select_for_update;
    case mode::optimistic_version:
        return sqlock::strategy::optimistic_version;
    default:
        return sqlock::strategy::unique_key;
    }
}

/// A sqlock primitive taken with lock() / unlock() (a mutex, a one-permit semaphore, a
/// shared_mutex's exclusive side); `Args` follow the database and the lock name in its
/// constructor.
template <class Lock>
class lockable_locker final : public locker {
public:
    template <class... Args>
    explicit lockable_locker(const config& cfg, Args&&... args)
        : m_db(sqlock::connect(cfg.url)),
          m_lock(m_db, std::string(lock_name) + ":" + cfg.mode_name, std::forward<Args>(args)...) {}

    std::int64_t acquire() override {
        m_lock.lock();
        return m_lock.token();
    }
    void release() override {
        m_lock.unlock(); // never throws; a failure is recorded in last_error()
        if (std::string e = m_lock.last_error(); !e.empty())
            throw std::runtime_error("unlock failed: " + e);
    }

private:
    sqlock::database m_db;
    Lock m_lock;
};

class leader_locker final : public locker {
public:
    explicit leader_locker(const config& cfg)
        : m_db(sqlock::connect(cfg.url)),
          m_election(m_db, std::string(lock_name) + ":" + cfg.mode_name,
                     {.ttl = std::chrono::seconds(30)}) {}

    std::int64_t acquire() override { return m_election.campaign(); }
    void release() override {
        m_election.resign();
        if (std::string e = m_election.last_error(); !e.empty())
            throw std::runtime_error("resign failed: " + e);
    }

private:
    sqlock::database m_db;
    sqlock::leader_election m_election;
};

class pg_advisory_locker final : public locker {
public:
    explicit pg_advisory_locker(const std::string& url)
        : m_conn(PQconnectdb(url.c_str())), m_key(std::to_string(pg_advisory_key)) {
        if (m_conn == nullptr || PQstatus(m_conn.get()) != CONNECTION_OK)
            throw std::runtime_error(std::string("PostgreSQL connect failed: ") +
                                     (m_conn ? PQerrorMessage(m_conn.get()) : "out of memory"));
        prepare("acq", "SELECT pg_advisory_lock($1::bigint)");
        prepare("rel", "SELECT pg_advisory_unlock($1::bigint)");
    }

    std::int64_t acquire() override {
        exec("acq");
        return 0;
    }
    void release() override {
        if (exec("rel") != "t")
            throw std::runtime_error("pg_advisory_unlock returned false: the lock was not held");
    }

private:
    struct conn_deleter {
        void operator()(PGconn* c) const noexcept { PQfinish(c); }
    };
    struct result_deleter {
        void operator()(PGresult* r) const noexcept { PQclear(r); }
    };
    using result_ptr = std::unique_ptr<PGresult, result_deleter>;

    void prepare(const char* stmt, const char* sql) {
        const result_ptr res(PQprepare(m_conn.get(), stmt, sql, 1, nullptr));
        if (!res || PQresultStatus(res.get()) != PGRES_COMMAND_OK)
            throw std::runtime_error(std::string("PQprepare: ") + PQerrorMessage(m_conn.get()));
    }
    /// Runs a prepared one-value statement with the key; returns the value's text.
    std::string exec(const char* stmt) {
        const char* values[1] = {m_key.c_str()};
        const result_ptr res(PQexecPrepared(m_conn.get(), stmt, 1, values, nullptr, nullptr, 0));
        if (!res || PQresultStatus(res.get()) != PGRES_TUPLES_OK || PQntuples(res.get()) != 1)
            throw std::runtime_error(std::string("PostgreSQL ") + stmt + ": " +
                                     PQerrorMessage(m_conn.get()));
        return PQgetvalue(res.get(), 0, 0);
    }

    std::unique_ptr<PGconn, conn_deleter> m_conn;
    std::string m_key;
};

class mysql_get_lock_locker final : public locker {
public:
    explicit mysql_get_lock_locker(const std::string& url) {
        m_conn = bench::my_connect(url, true, 90); // reads outlast GET_LOCK's 60 s wait
        m_get.reset(m_conn->prepareStatement("SELECT GET_LOCK(?, 60)"));
        m_get->setString(1, sql::SQLString(std::string(lock_name)));
        m_release.reset(m_conn->prepareStatement("SELECT RELEASE_LOCK(?)"));
        m_release->setString(1, sql::SQLString(std::string(lock_name)));
    }

    std::int64_t acquire() override {
        if (one_value(*m_get) != 1)
            throw std::runtime_error("GET_LOCK did not return 1 (timeout or error)");
        return 0;
    }
    void release() override {
        if (one_value(*m_release) != 1)
            throw std::runtime_error("RELEASE_LOCK did not return 1: the lock was not held");
    }

private:
    /// The single value of a one-row result; -1 for NULL.
    static std::int64_t one_value(sql::PreparedStatement& stmt) {
        const std::unique_ptr<sql::ResultSet> rs(stmt.executeQuery());
        if (!rs->next())
            throw std::runtime_error("no row returned");
        return rs->isNull(1) ? -1 : rs->getInt64(1);
    }

    std::unique_ptr<sql::Connection> m_conn;
    std::unique_ptr<sql::PreparedStatement> m_get;
    std::unique_ptr<sql::PreparedStatement> m_release;
};

std::unique_ptr<locker> make_locker(const config& cfg) {
    const sqlock::mutex_options ttl_30s{.ttl = std::chrono::seconds(30)};
    switch (cfg.bench_mode) {
    case mode::pg_advisory:
        return std::make_unique<pg_advisory_locker>(cfg.url);
    case mode::mysql_get_lock:
        return std::make_unique<mysql_get_lock_locker>(cfg.url);
    case mode::semaphore:
        return std::make_unique<lockable_locker<sqlock::semaphore>>(cfg, 1, ttl_30s);
    case mode::shared_mutex: // every process a writer; 4 reader permits to collect
        return std::make_unique<lockable_locker<sqlock::shared_mutex>>(cfg, ttl_30s, 4);
    case mode::leader:
        return std::make_unique<leader_locker>(cfg);
    default:
        return std::make_unique<lockable_locker<sqlock::mutex>>(
            cfg, sqlock::mutex_options{.strategy = strategy_of(cfg.bench_mode),
                                       .ttl = std::chrono::seconds(30)});
    }
}

// ------------------------------------------------------------------ plumbing

bool write_all(int fd, const void* data, std::size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

/// Reads exactly `size` bytes; false on EOF or error.
bool read_all(int fd, void* data, std::size_t size) {
    char* p = static_cast<char*>(data);
    while (size > 0) {
        const ssize_t n = ::read(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

/// What the parent sends each worker at the start barrier.
struct start_message {
    std::int64_t t_end = 0; ///< stop after the first release at or after this time
};

// ------------------------------------------------------------------ worker

/// One line on stderr in one write(), so lines from several workers do not interleave.
void worker_error(int index, std::string message) {
    while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
        message.pop_back();
    for (char& c : message)
        if (c == '\n')
            c = ' ';
    const std::string line = "worker " + std::to_string(index) + ": " + message + "\n";
    static_cast<void>(write_all(STDERR_FILENO, line.data(), line.size()));
}

int run_worker(const config& cfg, int index, int ready_fd, int start_fd, const std::string& out) {
    try {
        std::vector<record> records;
        {
            const std::unique_ptr<locker> lk = make_locker(cfg); // connect: after the fork
            const char ready = 'r';
            if (!write_all(ready_fd, &ready, 1))
                throw std::runtime_error("cannot signal readiness to the parent");
            ::close(ready_fd);
            start_message start;
            if (!read_all(start_fd, &start, sizeof start))
                return 3; // the parent gave up (another worker failed to start)
            ::close(start_fd);

            const std::int64_t hold_ns = cfg.hold_us * 1000;
            const double expected =
                (cfg.seconds + cfg.warmup) * 100'000.0 / static_cast<double>(cfg.processes);
            records.reserve(static_cast<std::size_t>(std::min(expected, 4'000'000.0)));
            for (;;) {
                const std::int64_t token = lk->acquire();
                const std::int64_t t_acq = bench::now_ns();
                if (hold_ns > 0)
                    while (bench::now_ns() - t_acq < hold_ns) {
                    }
                const std::int64_t t_rel_start = bench::now_ns();
                lk->release();
                records.push_back({t_acq, t_rel_start, token});
                if (t_rel_start >= start.t_end)
                    break;
            }
        } // disconnect before writing results
        const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || !write_all(fd, records.data(), records.size() * sizeof(record)) ||
            ::close(fd) != 0)
            throw std::runtime_error("cannot write " + out + ": " + std::strerror(errno));
        return 0;
    } catch (const sqlock::error& e) {
        worker_error(index, std::string("sqlock error (") +
                                std::string(sqlock::to_string(e.code())) + "): " + e.what());
    } catch (const sql::SQLException& e) {
        worker_error(index, "MariaDB error " + std::to_string(e.getErrorCode()) + " (" +
                                e.getSQLStateCStr() + "): " + e.what());
    } catch (const std::exception& e) {
        worker_error(index, e.what());
    }
    return 2;
}

// ------------------------------------------------------------------ statistics

struct results {
    std::int64_t grants = 0;
    double grants_per_second = 0;
    std::vector<std::int64_t> per_process;
    std::size_t handoffs = 0;
    std::optional<double> handoff_median_us;
    std::optional<double> handoff_p99_us;
    std::optional<double> handoff_max_us;
    std::int64_t same_process_regrants = 0;
    double same_process_fraction = 0;
    std::optional<double> fairness; ///< empty when some process got no grant
    double max_wait_ms = 0;         ///< longest a process waited for one grant
    std::int64_t exclusion_violations = 0;
    std::int64_t token_violations = 0;
    std::vector<std::string> violation_examples; ///< the first few, for the report
};

results analyse(std::vector<grant>& all, const config& cfg, std::int64_t t_go,
                std::int64_t t_measure, std::int64_t t_end) {
    results res;
    res.per_process.assign(static_cast<std::size_t>(cfg.processes), 0);
    std::sort(all.begin(), all.end(),
              [](const grant& a, const grant& b) { return a.r.t_acq < b.r.t_acq; });

    // Mutual exclusion and token order over every grant, warm-up and drain included.
    // Times in examples are ms since the measured window opened (negative: warm-up).
    const auto at_ms = [&](std::int64_t t) {
        return bench::fixed(static_cast<double>(t - t_measure) / 1e6, 3) + " ms";
    };
    std::int64_t latest_release = std::numeric_limits<std::int64_t>::min();
    std::size_t latest_holder = 0;
    for (std::size_t k = 0; k < all.size(); ++k) {
        const grant& g = all[k];
        if (g.r.t_acq < latest_release) {
            ++res.exclusion_violations;
            if (res.violation_examples.size() < 5)
                res.violation_examples.push_back("overlap: worker " + std::to_string(g.worker) +
                                                 " acquired at " + at_ms(g.r.t_acq) +
                                                 " while worker " +
                                                 std::to_string(all[latest_holder].worker) +
                                                 " held until " + at_ms(latest_release));
        }
        if (g.r.t_rel_start > latest_release) {
            latest_release = g.r.t_rel_start;
            latest_holder = k;
        }
        if (k > 0 && is_sqlock_mode(cfg.bench_mode) && g.r.token <= all[k - 1].r.token) {
            ++res.token_violations;
            const grant& p = all[k - 1];
            if (res.violation_examples.size() < 5)
                res.violation_examples.push_back(
                    "token order: worker " + std::to_string(g.worker) + " granted at " +
                    at_ms(g.r.t_acq) + " with token " + std::to_string(g.r.token) +
                    ", after worker " + std::to_string(p.worker) + "'s grant at " +
                    at_ms(p.r.t_acq) + " (released " + at_ms(p.r.t_rel_start) + ") with token " +
                    std::to_string(p.r.token));
        }
    }

    // Everything else over grants made in the measured window [t_measure, t_end).
    std::vector<double> handoff_us;
    // A wait runs from a process's previous release (or the start) to its next grant; it
    // counts when it overlaps the window, so a process starved until the drain is seen too.
    std::vector<std::int64_t> last_release(static_cast<std::size_t>(cfg.processes), t_go);
    std::int64_t pairs = 0;
    std::int64_t max_wait_ns = 0;
    for (std::size_t k = 0; k < all.size(); ++k) {
        const grant& g = all[k];
        const auto w = static_cast<std::size_t>(g.worker);
        const bool in_window = g.r.t_acq >= t_measure && g.r.t_acq < t_end;
        if (g.r.t_acq >= t_measure && last_release[w] < t_end)
            max_wait_ns = std::max(max_wait_ns, g.r.t_acq - last_release[w]);
        if (in_window) {
            ++res.grants;
            ++res.per_process[w];
            if (k > 0) {
                ++pairs;
                const grant& prev = all[k - 1];
                if (prev.worker == g.worker)
                    ++res.same_process_regrants;
                else
                    handoff_us.push_back(static_cast<double>(g.r.t_acq - prev.r.t_rel_start) /
                                         1000.0);
            }
        }
        last_release[w] = g.r.t_rel_start;
    }
    res.grants_per_second = static_cast<double>(res.grants) / cfg.seconds;
    res.handoffs = handoff_us.size();
    res.same_process_fraction =
        pairs > 0 ? static_cast<double>(res.same_process_regrants) / static_cast<double>(pairs) : 0;
    res.max_wait_ms = static_cast<double>(max_wait_ns) / 1e6;
    if (!handoff_us.empty()) {
        std::sort(handoff_us.begin(), handoff_us.end());
        res.handoff_median_us = bench::median_of_sorted(handoff_us);
        res.handoff_p99_us = bench::percentile_of_sorted(handoff_us, 0.99);
        res.handoff_max_us = handoff_us.back();
    }
    const auto [lo, hi] = std::minmax_element(res.per_process.begin(), res.per_process.end());
    if (*lo > 0)
        res.fairness = static_cast<double>(*hi) / static_cast<double>(*lo);
    return res;
}

std::string json_number(const std::optional<double>& v, int digits) {
    return v ? bench::fixed(*v, digits) : "null";
}

std::string backend_of(const std::string& url) {
    return std::string(sqlock::to_string(bench::backend_of(url)));
}

void print_results(const config& cfg, const results& r) {
    std::cout << "mode " << cfg.mode_name << " on " << backend_of(cfg.url) << ": " << cfg.processes
              << " processes, " << cfg.seconds << " s measured (after " << cfg.warmup
              << " s warm-up), hold " << cfg.hold_us << " us\n";
    std::cout << "  grants           " << r.grants << " (" << bench::fixed(r.grants_per_second, 1)
              << "/s)\n";
    std::cout << "  per process      ";
    for (std::size_t i = 0; i < r.per_process.size(); ++i)
        std::cout << (i ? " " : "") << r.per_process[i];
    std::cout << "\n  fairness         "
              << (r.fairness ? bench::fixed(*r.fairness, 2)
                             : std::string("inf (a process starved)"))
              << " (most/fewest grants per process)\n";
    std::cout << "  handoffs         " << r.handoffs << " between different processes\n";
    if (r.handoff_median_us)
        std::cout << "  handoff          median " << bench::fixed(*r.handoff_median_us, 1)
                  << " us, p99 " << bench::fixed(*r.handoff_p99_us, 1) << " us, max "
                  << bench::fixed(*r.handoff_max_us, 1) << " us\n";
    std::cout << "  same-process     " << r.same_process_regrants
              << " grants went straight back to the process that had just released ("
              << bench::fixed(100.0 * r.same_process_fraction, 1) << "%)\n";
    std::cout << "  longest wait     " << bench::fixed(r.max_wait_ms, 2)
              << " ms (one process, from its release to its next grant)\n";
    std::cout << "  mutual exclusion " << r.exclusion_violations << " overlapping holds";
    if (is_sqlock_mode(cfg.bench_mode))
        std::cout << "; fencing tokens: " << r.token_violations << " out of order";
    std::cout << "\n";
    for (const std::string& e : r.violation_examples)
        std::cout << "  VIOLATION        " << e << "\n";
}

void write_json(const config& cfg, const results& r) {
    std::ofstream f(cfg.json_path, std::ios::trunc);
    f << "{\"mode\": \"" << cfg.mode_name << "\", \"backend\": \"" << backend_of(cfg.url)
      << "\", \"processes\": " << cfg.processes << ", \"seconds\": " << cfg.seconds
      << ", \"warmup_seconds\": " << cfg.warmup << ", \"hold_us\": " << cfg.hold_us
      << ", \"grants\": " << r.grants
      << ", \"grants_per_second\": " << bench::fixed(r.grants_per_second, 1)
      << ", \"handoffs\": " << r.handoffs
      << ", \"handoff_median_us\": " << json_number(r.handoff_median_us, 1)
      << ", \"handoff_p99_us\": " << json_number(r.handoff_p99_us, 1)
      << ", \"handoff_max_us\": " << json_number(r.handoff_max_us, 1)
      << ", \"per_process_grants\": [";
    for (std::size_t i = 0; i < r.per_process.size(); ++i)
        f << (i ? ", " : "") << r.per_process[i];
    f << "], \"fairness_ratio\": " << json_number(r.fairness, 3)
      << ", \"same_process_regrants\": " << r.same_process_regrants
      << ", \"same_process_regrant_fraction\": " << bench::fixed(r.same_process_fraction, 4)
      << ", \"max_wait_ms\": " << bench::fixed(r.max_wait_ms, 3)
      << ", \"mutual_exclusion_violations\": " << r.exclusion_violations
      << ", \"token_order_violations\": " << r.token_violations << "}\n";
    f.close();
    if (!f)
        throw std::runtime_error("cannot write " + cfg.json_path);
}

// ------------------------------------------------------------------ parent

struct worker_proc {
    pid_t pid = -1;
    std::string out;
    bool done = false;
};

void kill_workers(std::vector<worker_proc>& workers) {
    for (worker_proc& w : workers)
        if (!w.done && w.pid > 0)
            ::kill(w.pid, SIGTERM);
    for (worker_proc& w : workers)
        if (!w.done && w.pid > 0) {
            int status = 0;
            ::waitpid(w.pid, &status, 0);
            w.done = true;
        }
}

std::string describe_status(int status) {
    if (WIFEXITED(status))
        return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return "was killed by signal " + std::to_string(WTERMSIG(status));
    return "ended oddly";
}

int run(const config& cfg) {
    if (is_sqlock_mode(cfg.bench_mode)) {
        // Tables are created once, here, and this connection is closed before the fork.
        sqlock::database db = sqlock::connect(cfg.url);
        db.migrate();
        // Validates the strategy against the backend (does not contact the database).
        sqlock::mutex probe(db, std::string(lock_name) + ":" + cfg.mode_name,
                            {.strategy = strategy_of(cfg.bench_mode)});
    }

    char dir_template[] = "/tmp/sqlock-handoff-XXXXXX";
    const char* dir = ::mkdtemp(dir_template);
    if (dir == nullptr)
        throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    const std::string tmpdir = dir;

    int ready_pipe[2];
    int start_pipe[2];
    if (::pipe(ready_pipe) != 0 || ::pipe(start_pipe) != 0)
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));

    std::vector<worker_proc> workers(static_cast<std::size_t>(cfg.processes));
    const pid_t parent = ::getpid();
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    for (int i = 0; i < cfg.processes; ++i) {
        worker_proc& w = workers[static_cast<std::size_t>(i)];
        w.out = tmpdir + "/worker-" + std::to_string(i) + ".bin";
        w.pid = ::fork();
        if (w.pid < 0) {
            const int err = errno;
            kill_workers(workers);
            throw std::runtime_error(std::string("fork: ") + std::strerror(err));
        }
        if (w.pid == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGTERM); // never outlive the parent
            if (::getppid() != parent)
                std::_Exit(4);
            ::close(ready_pipe[0]);
            ::close(start_pipe[1]);
            const int rc = run_worker(cfg, i, ready_pipe[1], start_pipe[0], w.out);
            std::cout.flush();
            std::cerr.flush();
            std::fflush(nullptr);
            std::_Exit(rc);
        }
    }
    ::close(ready_pipe[1]);
    ::close(start_pipe[0]);

    // Start barrier: every worker has connected (and prepared) before any of them starts.
    int ready = 0;
    const std::int64_t ready_deadline = bench::now_ns() + 60'000'000'000;
    while (ready < cfg.processes) {
        pollfd p{ready_pipe[0], POLLIN, 0};
        const std::int64_t left_ms = (ready_deadline - bench::now_ns()) / 1'000'000;
        if (left_ms <= 0)
            break;
        const int pr = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left_ms, 1000)));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        char buf[256];
        const ssize_t n = ::read(ready_pipe[0], buf, sizeof buf);
        if (n <= 0)
            break; // every worker closed its end: some failed before getting ready
        ready += static_cast<int>(n);
    }
    ::close(ready_pipe[0]);

    const std::int64_t t_go = bench::now_ns();
    const std::int64_t t_measure = t_go + static_cast<std::int64_t>(cfg.warmup * 1e9);
    const std::int64_t t_end = t_measure + static_cast<std::int64_t>(cfg.seconds * 1e9);
    bool failed = false;
    if (ready == cfg.processes) {
        const start_message msg{t_end};
        std::vector<start_message> all(static_cast<std::size_t>(cfg.processes), msg);
        // One write of <= PIPE_BUF bytes is atomic; each worker reads one message.
        if (!write_all(start_pipe[1], all.data(), all.size() * sizeof(start_message)))
            failed = true;
    } else {
        std::cerr << "handoff_bench: only " << ready << " of " << cfg.processes
                  << " workers got ready\n";
        failed = true;
    }
    ::close(start_pipe[1]); // workers still waiting read EOF and quit

    // Reap; on the first failure stop the others.
    const std::int64_t reap_deadline = t_end + 90'000'000'000;
    std::size_t running = workers.size();
    while (running > 0) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid < 0)
            break;
        if (pid == 0) {
            if (bench::now_ns() > reap_deadline) {
                std::cerr << "handoff_bench: workers still running 90 s after the end; "
                             "stopping them\n";
                kill_workers(workers);
                failed = true;
                break;
            }
            ::usleep(10'000);
            continue;
        }
        for (std::size_t i = 0; i < workers.size(); ++i) {
            if (workers[i].pid != pid)
                continue;
            workers[i].done = true;
            --running;
            if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                if (!failed || !(WIFEXITED(status) && WEXITSTATUS(status) == 3))
                    std::cerr << "handoff_bench: worker " << i << " (pid " << pid << ") "
                              << describe_status(status) << "\n";
                if (!failed)
                    kill_workers(workers);
                failed = true;
                running = 0;
            }
        }
    }

    std::vector<grant> all;
    if (!failed) {
        for (std::size_t i = 0; i < workers.size(); ++i) {
            std::ifstream f(workers[i].out, std::ios::binary);
            record r;
            while (f.read(reinterpret_cast<char*>(&r), sizeof r))
                all.push_back({r, static_cast<int>(i)});
        }
    }
    for (const worker_proc& w : workers)
        ::unlink(w.out.c_str());
    ::rmdir(tmpdir.c_str());
    if (failed) {
        std::cerr << "handoff_bench: " << cfg.mode_name << " failed\n";
        return 1;
    }

    const results r = analyse(all, cfg, t_go, t_measure, t_end);
    print_results(cfg, r);
    if (!cfg.json_path.empty())
        write_json(cfg, r);
    if (r.exclusion_violations != 0 || r.token_violations != 0) {
        std::cerr << "handoff_bench: " << cfg.mode_name
                  << ": MUTUAL EXCLUSION OR TOKEN ORDER VIOLATED\n";
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    return bench::bench_main<config>("sqlock_handoff_bench", usage_text, argc, argv, parse_args,
                                     run);
}
