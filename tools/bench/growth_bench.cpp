// sqlock_growth_bench — how sqlock behaves as the lock table and a process's lock count grow
// (issue 18, "fleet scale").
//
// table:  fills the lock table (its own prefix, default "growthbench_") with N = 10^2, 10^4,
//         10^6 rows straight through the bare driver — half live leases of other owners (ending
//         in a day), a quarter released free rows and a quarter never-released leases, both
//         expired an hour ago (what waits for the reaper) — and times uncontended lock() +
//         unlock() of one name per strategy at each size, interleaved batch by batch with the
//         same on an empty twin table (prefix P + "empty_"). At the largest size it also times
//         `sqlock status` (the CLI, when --sqlock is given), database::list() and database::reap().
// memory: one fresh process takes --locks N locks on distinct names with one strategy and holds
//         them all; reports VmRSS and VmHWM (/proc/self/status) before connecting, after
//         connecting and while holding the N locks.
// See tools/bench/README.md ("Growth: fleets, table size, memory").
#include "bench_common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <spawn.h>
#include <sqlock/sqlock.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <vector>

extern char** environ;

namespace {

constexpr const char* usage_text =
    R"(usage: sqlock_growth_bench table --url URL [--sizes 100,10000,1000000] [--rounds 2000]
                           [--batch 50] [--settle 10] [--sqlock BIN] [--prefix P]
                           [--json FILE] [--markdown FILE]
       sqlock_growth_bench memory --url URL --strategy S --locks N [--prefix P] [--json FILE]

table:  lock() + unlock() latency per strategy with N rows in the lock table (half live leases
        of others, a quarter free expired rows, a quarter expired never-released leases with a
        1 s TTL), as a ratio to an empty twin table measured interleaved; at the largest N also `sqlock status` (with
        --sqlock), list() and reap({.batch = 1000, .settle = --settle seconds}). --rounds pairs per
        strategy and size, in batches of --batch, the strategies interleaved.
memory: RSS of this process before connecting, connected, and holding N locks at once.

Exit status: 0 done; 1 the run failed; 2 usage.
)";

using bench::usage_error;

struct config {
    std::string command;
    std::string url;
    std::vector<std::int64_t> sizes{100, 10'000, 1'000'000};
    std::int64_t rounds = 2000;
    std::int64_t batch = 50;
    std::chrono::milliseconds settle{10'000};
    std::string sqlock_bin;
    std::string prefix = "growthbench_";
    std::string strategy = "unique_key";
    std::int64_t locks = 1;
    std::string json_path;
    std::string markdown_path;
};

std::vector<std::int64_t> parse_list(const std::string& flag, const std::string& text) {
    std::vector<std::int64_t> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        const std::int64_t v = bench::parse_int(flag, item);
        if (v < 1 || v > 10'000'000)
            throw usage_error(flag + " values must be 1..10000000");
        out.push_back(v);
    }
    if (out.empty() || !std::is_sorted(out.begin(), out.end()))
        throw usage_error(flag + " must be an increasing list");
    return out;
}

config parse_args(int argc, char** argv) {
    if (argc < 2)
        throw usage_error("missing command (table or memory)");
    config cfg;
    cfg.command = argv[1];
    if (cfg.command != "table" && cfg.command != "memory")
        throw usage_error("unknown command " + cfg.command);
    bench::for_each_option(
        argc - 1, argv + 1, usage_text, [&](const std::string& a, const std::string& v) {
            if (a == "--url") {
                cfg.url = v;
            } else if (a == "--sizes") {
                cfg.sizes = parse_list(a, v);
            } else if (a == "--rounds") {
                cfg.rounds = bench::parse_int(a, v);
                if (cfg.rounds < 10)
                    throw usage_error("--rounds must be >= 10");
            } else if (a == "--batch") {
                cfg.batch = bench::parse_int(a, v);
                if (cfg.batch < 1)
                    throw usage_error("--batch must be >= 1");
            } else if (a == "--settle") {
                cfg.settle = std::chrono::milliseconds(bench::parse_int(a, v) * 1000);
            } else if (a == "--sqlock") {
                cfg.sqlock_bin = v;
            } else if (a == "--prefix") {
                cfg.prefix = v;
            } else if (a == "--strategy") {
                cfg.strategy = v;
            } else if (a == "--locks") {
                cfg.locks = bench::parse_int(a, v);
                if (cfg.locks < 1 || cfg.locks > 1'000'000)
                    throw usage_error("--locks must be 1..1000000");
            } else if (a == "--json") {
                cfg.json_path = v;
            } else if (a == "--markdown") {
                cfg.markdown_path = v;
            } else {
                throw usage_error("unknown option " + a);
            }
        });
    if (cfg.url.empty())
        throw usage_error("--url is required");
    return cfg;
}

double ms_since(std::int64_t t0) {
    return static_cast<double>(bench::now_ns() - t0) / 1e6;
}

// ------------------------------------------------------------------ filling the table

// Row g (1-based): g % 4 in {0, 1}: a live lease of another owner, ending in a day;
// g % 4 == 2: a free row (released, owner ''), expired an hour ago, as MariaDB's release leaves
// it; g % 4 == 3: a lease never released (its holder crashed), expired an hour ago, TTL 1 s.
// Names "fill-0000001"...; tokens g (other names than the probes, so no order is disturbed).

/// Rows first..last, inserted through the bare driver; returns how.
std::string fill(sqlock::backend_kind kind, const std::string& url, const std::string& locks,
                 std::int64_t first, std::int64_t last) {
    const std::string columns = " (name, owner, host, pid, strategy, token, hold_count, "
                                "acquired_at, expires_at, lease_seq, ttl_ms) ";
    const std::string from = std::to_string(first);
    const std::string to = std::to_string(last);
    switch (kind) {
    case sqlock::backend_kind::postgresql: {
        bench::pg_conn c(url);
        c.exec("INSERT INTO \"" + locks + "\"" + columns +
               "SELECT 'fill-' || lpad(g::text, 7, '0'),"
               " CASE WHEN g % 4 = 2 THEN '' ELSE 'growth-bench:' || g || ':0/1.1' END,"
               " 'growth-bench', g, 'unique_key', g, 1,"
               " statement_timestamp() - interval '2 hours',"
               " CASE WHEN g % 4 < 2 THEN statement_timestamp() + interval '1 day'"
               " ELSE statement_timestamp() - interval '1 hour' END, 1,"
               " CASE WHEN g % 4 < 2 THEN 86400000 ELSE 1000 END"
               " FROM generate_series(" +
               from + ", " + to + ") AS g");
        c.exec("ANALYZE \"" + locks + "\""); // as autovacuum would on a table that grew
        return "INSERT ... SELECT FROM generate_series";
    }
    case sqlock::backend_kind::mysql: {
        const auto c = bench::my_connect(url, true, 600);
        const std::unique_ptr<sql::Statement> st(c->createStatement());
        st->execute("INSERT INTO `" + locks + "`" + columns +
                    "SELECT CONCAT('fill-', LPAD(seq, 7, '0')),"
                    " IF(seq % 4 = 2, '', CONCAT('growth-bench:', seq, ':0/1.1')),"
                    " 'growth-bench', seq, 'unique_key', seq, 1,"
                    " UTC_TIMESTAMP(6) - INTERVAL 2 HOUR,"
                    " IF(seq % 4 < 2, UTC_TIMESTAMP(6) + INTERVAL 1 DAY,"
                    " UTC_TIMESTAMP(6) - INTERVAL 1 HOUR), 1, IF(seq % 4 < 2, 86400000, 1000)"
                    " FROM seq_" +
                    from + "_to_" + to);
        st->execute("ANALYZE TABLE `" + locks + "`");
        return "INSERT ... SELECT FROM seq_M_to_N";
    }
    case sqlock::backend_kind::sqlite: {
        bench::sqlite_db db(bench::sqlite_path(url));
        sqlite3_busy_timeout(db.get(), 30'000);
        const std::string now_ms = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";
        db.exec("BEGIN IMMEDIATE");
        {
            bench::sqlite_stmt ins(
                db.get(),
                "INSERT INTO \"" + locks + "\"" + columns +
                    "VALUES (printf('fill-%07d', ?1),"
                    " CASE WHEN ?1 % 4 = 2 THEN '' ELSE 'growth-bench:' || ?1 || "
                    "':0/1.1' END, 'growth-bench', ?1, 'unique_key', ?1, 1, " +
                    now_ms + " - 7200000, CASE WHEN ?1 % 4 < 2 THEN " + now_ms +
                    " + 86400000 ELSE " + now_ms +
                    " - 3600000 END, 1, CASE WHEN ?1 % 4 < 2 THEN 86400000 ELSE 1000 END)");
            for (std::int64_t g = first; g <= last; ++g)
                ins.run({g});
        }
        db.exec("COMMIT");
        db.exec("ANALYZE \"" + locks + "\"");
        return "one transaction of prepared INSERTs";
    }
    }
    return "";
}

/// Every row out (the probes' too: their next acquire re-creates them, in the warm-up).
void empty_table(sqlock::backend_kind kind, const std::string& url, const std::string& locks) {
    switch (kind) {
    case sqlock::backend_kind::postgresql: {
        bench::pg_conn c(url);
        // TRUNCATE, not DELETE: a million dead tuples would make "empty" a different table.
        c.exec("TRUNCATE \"" + locks + "\"");
        c.exec("ANALYZE \"" + locks + "\"");
        break;
    }
    case sqlock::backend_kind::mysql: {
        const auto c = bench::my_connect(url, true, 600);
        const std::unique_ptr<sql::Statement> st(c->createStatement());
        st->execute("DELETE FROM `" + locks + "`");
        st->execute("ANALYZE TABLE `" + locks + "`");
        break;
    }
    case sqlock::backend_kind::sqlite: {
        bench::sqlite_db db(bench::sqlite_path(url));
        sqlite3_busy_timeout(db.get(), 30'000);
        db.exec("DELETE FROM \"" + locks + "\"");
        db.exec("ANALYZE \"" + locks + "\"");
        break;
    }
    }
}

// ------------------------------------------------------------------ latency at one size

const std::vector<sqlock::strategy> strategies{sqlock::strategy::unique_key,
                                               sqlock::strategy::optimistic_version,
                                               sqlock::strategy::select_for_update};

struct size_result {
    std::int64_t rows = 0;
    double fill_seconds = 0;
    std::string fill_method;
    std::vector<bench::summary> filled; ///< µs, in `strategies` order
    std::vector<bench::summary> empty;  ///< the empty twin table, measured interleaved
};

/// Uncontended lock() + unlock() of one name per strategy on the filled table and on an empty
/// table of its own (another prefix, same server), batch by batch in rotating order, so both
/// see the same noise (other work on this machine moves absolute times by several times).
size_result measure(const config& cfg, sqlock::database& filled, sqlock::database& empty,
                    std::int64_t rows) {
    size_result r;
    r.rows = rows;
    std::vector<std::unique_ptr<sqlock::mutex>> probes; // filled: [0, 3), empty: [3, 6)
    for (sqlock::database* db : {&filled, &empty})
        for (const sqlock::strategy s : strategies)
            probes.push_back(std::make_unique<sqlock::mutex>(
                *db, "probe-" + std::string(sqlock::to_string(s)),
                sqlock::mutex_options{.strategy = s, .ttl = std::chrono::seconds(30)}));
    for (int i = 0; i < 20; ++i) // warm-up: rows, prepared statements, lock sessions
        for (auto& m : probes) {
            m->lock();
            m->unlock();
        }
    std::vector<std::vector<double>> samples(probes.size());
    const std::int64_t batches = (cfg.rounds + cfg.batch - 1) / cfg.batch;
    for (std::int64_t b = 0; b < batches; ++b)
        for (std::size_t k = 0; k < probes.size(); ++k) {
            const std::size_t v = (k + static_cast<std::size_t>(b)) % probes.size();
            auto& m = *probes[v];
            for (std::int64_t i = 0; i < cfg.batch; ++i) {
                const std::int64_t t0 = bench::now_ns();
                m.lock();
                m.unlock();
                samples[v].push_back(static_cast<double>(bench::now_ns() - t0) / 1e3);
                if (m.last_loss() != sqlock::loss_reason::none)
                    throw std::runtime_error(m.name() +
                                             ": release found the lease gone: " + m.last_error());
            }
        }
    for (std::size_t v = 0; v < samples.size(); ++v)
        (v < strategies.size() ? r.filled : r.empty)
            .push_back(bench::summarise(std::move(samples[v])));
    return r;
}

// ------------------------------------------------------------------ `sqlock status` at size

/// Wall time of BIN ARGS... with stdout to /dev/null; throws unless it exits 0.
double time_command(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    const std::int64_t t0 = bench::now_ns();
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        throw std::runtime_error("cannot start " + argv[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const double ms = ms_since(t0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw std::runtime_error(argv[0] + " " + argv[3] + " failed (status " +
                                 std::to_string(status) + ")");
    return ms;
}

struct large_table_ops {
    std::int64_t rows = 0;
    double list_ms = 0;
    std::size_t listed = 0;
    std::optional<double> status_ms, status_prometheus_ms;
    double reap_ms = 0;
    sqlock::reap_result reap;
};

// ------------------------------------------------------------------ table command

int run_table(const config& cfg) {
    sqlock::connect_options options;
    options.table_prefix = cfg.prefix;
    sqlock::database db = sqlock::connect(cfg.url, options);
    db.migrate();
    const sqlock::backend_kind kind = db.backend();
    const std::string locks = cfg.prefix + "locks";
    const std::string backend(sqlock::to_string(kind));

    sqlock::connect_options empty_options = options;
    empty_options.table_prefix = cfg.prefix + "empty_";
    sqlock::database empty_db = sqlock::connect(cfg.url, empty_options);
    empty_db.migrate();
    empty_table(kind, cfg.url, locks);
    empty_table(kind, cfg.url, empty_options.table_prefix + "locks");

    std::vector<size_result> results;
    std::int64_t have = 0;
    large_table_ops big;
    for (const std::int64_t n : cfg.sizes) {
        const std::int64_t t0 = bench::now_ns();
        const std::string how = fill(kind, cfg.url, locks, have + 1, n);
        const double fill_s = ms_since(t0) / 1e3;
        have = n;
        size_result r = measure(cfg, db, empty_db, n);
        r.fill_seconds = fill_s;
        r.fill_method = how;
        results.push_back(std::move(r));
        std::cerr << backend << ": " << n << " rows (filled in " << bench::fixed(fill_s, 1)
                  << " s) measured\n";
    }

    // At the largest size: what an operator runs.
    big.rows = have;
    if (!cfg.sqlock_bin.empty()) {
        big.status_ms = time_command(
            {cfg.sqlock_bin, "--url", cfg.url, "status", "--table-prefix", cfg.prefix});
        big.status_prometheus_ms = time_command({cfg.sqlock_bin, "--url", cfg.url, "status",
                                                 "--table-prefix", cfg.prefix, "--prometheus"});
    }
    std::int64_t t0 = bench::now_ns();
    big.listed = db.list().size();
    big.list_ms = ms_since(t0);
    t0 = bench::now_ns();
    big.reap = db.reap({.batch = 1000, .settle = cfg.settle});
    big.reap_ms = ms_since(t0);
    std::cerr << backend << ": status/list/reap at " << have << " rows done\n";

    empty_table(kind, cfg.url, locks); // leave nothing behind in the server

    std::ostringstream md;
    std::ostringstream js;
    js << "{\"backend\": \"" << backend << "\", \"rounds\": " << cfg.rounds
       << ", \"batch\": " << cfg.batch << ", \"sizes\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
        const size_result& r = results[i];
        js << (i ? ", " : "") << "{\"rows\": " << r.rows
           << ", \"fill_seconds\": " << bench::fixed(r.fill_seconds, 2)
           << ", \"fill_method\": " << bench::json_string(r.fill_method) << ", \"strategies\": [";
        for (std::size_t k = 0; k < strategies.size(); ++k) {
            const bench::summary& f = r.filled[k];
            const bench::summary& e = r.empty[k];
            js << (k ? ", " : "") << "{\"strategy\": \"" << sqlock::to_string(strategies[k])
               << "\", \"n\": " << f.n << ", \"median_us\": " << bench::fixed(f.median, 1)
               << ", \"p99_us\": " << bench::fixed(f.p99, 1)
               << ", \"empty_median_us\": " << bench::fixed(e.median, 1)
               << ", \"empty_p99_us\": " << bench::fixed(e.p99, 1)
               << ", \"ratio_median\": " << bench::fixed(f.median / e.median, 3)
               << ", \"ratio_p99\": " << bench::fixed(f.p99 / e.p99, 3) << "}";
            md << "| " << bench::backend_label(bench::backend_of(cfg.url)) << " | "
               << sqlock::to_string(strategies[k]) << " | " << r.rows << " | "
               << bench::fixed(f.median, 0) << " | " << bench::fixed(e.median, 0) << " | "
               << bench::fixed(f.median / e.median, 2) << "× | " << bench::fixed(f.p99, 0) << " | "
               << bench::fixed(e.p99, 0) << " | " << bench::fixed(f.p99 / e.p99, 2) << "× |\n";
        }
        js << "]}";
    }
    const auto opt = [](const std::optional<double>& v) {
        return v ? bench::fixed(*v, 0) : std::string("null");
    };
    js << "], \"large\": {\"rows\": " << big.rows << ", \"listed\": " << big.listed
       << ", \"list_ms\": " << bench::fixed(big.list_ms, 0)
       << ", \"status_ms\": " << opt(big.status_ms)
       << ", \"status_prometheus_ms\": " << opt(big.status_prometheus_ms)
       << ", \"reap_ms\": " << bench::fixed(big.reap_ms, 0)
       << ", \"reap_deleted\": " << big.reap.deleted << ", \"reap_batches\": " << big.reap.batches
       << ", \"reap_deferred\": " << big.reap.deferred
       << ", \"reap_settle_ms\": " << cfg.settle.count() << "}}\n";
    std::cout << md.str();
    std::cout << "large table (" << big.rows << " rows): list() " << big.listed << " rows in "
              << bench::fixed(big.list_ms, 0) << " ms; sqlock status " << opt(big.status_ms)
              << " ms, --prometheus " << opt(big.status_prometheus_ms) << " ms; reap "
              << big.reap.deleted << " deleted in " << big.reap.batches << " statements, "
              << big.reap.deferred << " deferred, " << bench::fixed(big.reap_ms, 0) << " ms\n";
    if (!cfg.json_path.empty())
        bench::write_file(cfg.json_path, js.str());
    if (!cfg.markdown_path.empty())
        bench::write_file(cfg.markdown_path, md.str());
    return 0;
}

// ------------------------------------------------------------------ memory command

struct memory_kb {
    std::int64_t rss = 0;
    std::int64_t hwm = 0;
};

memory_kb read_memory() {
    std::ifstream f("/proc/self/status");
    memory_kb m;
    for (std::string line; std::getline(f, line);) {
        std::istringstream in(line);
        std::string key;
        std::int64_t kb = 0;
        in >> key >> kb;
        if (key == "VmRSS:")
            m.rss = kb;
        else if (key == "VmHWM:")
            m.hwm = kb;
    }
    return m;
}

int run_memory(const config& cfg) {
    const memory_kb start = read_memory();
    sqlock::connect_options options;
    options.table_prefix = cfg.prefix;
    sqlock::database db = sqlock::connect(cfg.url, options);
    db.migrate();
    const sqlock::strategy strategy = sqlock::parse_strategy(cfg.strategy);
    // One lock taken and released first, so "connected" includes the first use of the pool,
    // the prepared statements and the background threads, not only the handshake.
    {
        sqlock::mutex warm(db, "memory-warm", {.strategy = strategy});
        warm.lock();
        warm.unlock();
    }
    const memory_kb connected = read_memory();
    const std::string tag = "memory-" + std::to_string(::getpid()) + "-";
    std::vector<std::unique_ptr<sqlock::mutex>> held;
    held.reserve(static_cast<std::size_t>(cfg.locks));
    const std::int64_t t0 = bench::now_ns();
    for (std::int64_t i = 0; i < cfg.locks; ++i) {
        held.push_back(std::make_unique<sqlock::mutex>(
            db, tag + std::to_string(i),
            sqlock::mutex_options{.strategy = strategy, .ttl = std::chrono::minutes(10)}));
        held.back()->lock();
    }
    const double acquire_ms = ms_since(t0);
    const memory_kb holding = read_memory();
    // Proof that they are held, by the database (MariaDB does not show select_for_update holders).
    std::size_t listed = 0;
    if (strategy != sqlock::strategy::select_for_update ||
        db.backend() != sqlock::backend_kind::mysql)
        for (const sqlock::lock_info& info : db.list())
            if (info.name.starts_with(tag) && info.held())
                ++listed;
    for (auto& m : held)
        m->unlock();
    const double per_lock =
        static_cast<double>(holding.rss - connected.rss) / static_cast<double>(cfg.locks);
    const std::string backend(sqlock::to_string(db.backend()));
    std::ostringstream js;
    js << "{\"backend\": \"" << backend << "\", \"strategy\": \"" << cfg.strategy
       << "\", \"locks\": " << cfg.locks << ", \"rss_start_kb\": " << start.rss
       << ", \"rss_connected_kb\": " << connected.rss << ", \"rss_holding_kb\": " << holding.rss
       << ", \"hwm_holding_kb\": " << holding.hwm
       << ", \"per_lock_kb\": " << bench::fixed(per_lock, 2)
       << ", \"acquire_ms\": " << bench::fixed(acquire_ms, 0) << ", \"listed_held\": " << listed
       << "}\n";
    std::cout << js.str();
    if (!cfg.json_path.empty())
        bench::write_file(cfg.json_path, js.str());
    return 0;
}

int run(const config& cfg) {
    return cfg.command == "table" ? run_table(cfg) : run_memory(cfg);
}

} // namespace

int main(int argc, char** argv) {
    return bench::bench_main<config>("sqlock_growth_bench", usage_text, argc, argv, parse_args,
                                     run);
}
