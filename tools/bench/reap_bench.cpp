// sqlock_reap_bench — reaping many expired leases while a live acquirer keeps working.
//
// 1. connect + migrate under a dedicated table prefix (default "reapbench_", never the
//    application's "sqlock_" tables), then bulk-insert ROWS expired unique_key lease rows
//    ("bulk-000001"...) straight through the backend's driver (libpq INSERT ... SELECT FROM
//    generate_series; MariaDB INSERT ... SELECT FROM seq_1_to_N, batched multi-row INSERTs when
//    the Sequence engine is missing; SQLite one transaction of prepared INSERTs). Every row is
//    checked through db.list() to look like a real expired lease.
// 2. A lease "live-held" is taken and held across the whole reap; an acquirer thread (its own
//    database handle, like another process) loops lock()/unlock() on a few rotating names
//    "live-0".."live-3" and one hot name "live-hot", timing every lock() on the steady clock.
//    After a short baseline (no reaping), the main thread runs db.reap({.batch = BATCH,
//    .settle = SETTLE}): the bulk rows are never-released leases, which the library drops only
//    once it has seen them unchanged for their TTL (0 here: at once), one by one.
// 3. Reports rows reaped, batches, reap wall time, rows/s, acquisitions that overlapped the reap
//    and their latency (median / p99 / max), with PASS/FAIL for "p99 < 50 ms" and for "every
//    bulk row reaped, no live lease reaped" (no bulk row left in list(); every release of the
//    acquirer and of live-held found its own lease; every live name lockable afterwards).
// See tools/bench/README.md.
#include "bench_common.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/statement.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <libpq-fe.h>
#include <memory>
#include <mutex>
#include <mysql_driver.h>
#include <optional>
#include <sqlite3.h>
#include <sqlock/sqlock.hpp>
#include <sstream>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr const char* usage_text =
    R"(usage: sqlock_reap_bench --url URL [--rows N] [--batch B] [--baseline S] [--prefix P]
                         [--settle S] [--latency-verdict on|off] [--json FILE]

Inserts N expired unique_key lease rows (default 100000) under table prefix P (default
"reapbench_"), then reaps them with database::reap({.batch = B}) (default 1000) while another
thread keeps acquiring and releasing live leases, and reports the reap's speed and that
acquirer's lock() latency. The acquirer runs S seconds (default 1) before the reap as a baseline.

  --settle S    how long the reap may wait to see a never-released lease unchanged for its
                TTL before it drops it (reap_options::settle; default 60, as `sqlock reap`)
  --latency-verdict off  print the latency verdict but leave it out of the exit status
                (a smoke run is too short to judge latency by)
  --json FILE   also write the results as one JSON object

Exit status: 0 both verdicts PASS; 1 a verdict FAILed or the run failed; 2 usage.
)";

constexpr double p99_limit_ms = 50.0;
constexpr int rotating_names = 4;

using bench::usage_error;

struct config {
    std::string url;
    std::int64_t rows = 100'000;
    std::int64_t batch = 1000;
    double baseline_seconds = 1.0;
    double settle_seconds = 60.0;
    std::string prefix = "reapbench_";
    bool latency_verdict = true; ///< false: the latency verdict does not set the exit status
    std::string json_path;
};

double seconds_since(std::int64_t t0) {
    return static_cast<double>(bench::now_ns() - t0) / 1e9;
}

// ------------------------------------------------------------------ argument parsing

config parse_args(int argc, char** argv) {
    config cfg;
    bench::for_each_option(argc, argv, usage_text, [&](const std::string& a, const std::string& v) {
        if (a == "--url") {
            cfg.url = v;
        } else if (a == "--rows") {
            cfg.rows = bench::parse_int(a, v);
            if (cfg.rows < 1 || cfg.rows > 100'000'000)
                throw usage_error("--rows must be 1..100000000");
        } else if (a == "--batch") {
            cfg.batch = bench::parse_int(a, v);
            if (cfg.batch < 1 || cfg.batch > 1'000'000)
                throw usage_error("--batch must be 1..1000000");
        } else if (a == "--baseline") {
            cfg.baseline_seconds = bench::parse_double(a, v);
            if (cfg.baseline_seconds < 0 || cfg.baseline_seconds > 600)
                throw usage_error("--baseline must be in [0, 600]");
        } else if (a == "--settle") {
            cfg.settle_seconds = bench::parse_double(a, v);
            if (cfg.settle_seconds < 0 || cfg.settle_seconds > 3600)
                throw usage_error("--settle must be in [0, 3600]");
        } else if (a == "--prefix") {
            cfg.prefix = v; // validated by sqlock::connect
        } else if (a == "--latency-verdict") {
            if (v != "on" && v != "off")
                throw usage_error("--latency-verdict must be on or off");
            cfg.latency_verdict = v == "on";
        } else if (a == "--json") {
            cfg.json_path = v;
        } else {
            throw usage_error("unknown option " + a);
        }
    });
    if (cfg.url.empty())
        throw usage_error("--url is required");
    return cfg;
}

// ------------------------------------------------------------------ bulk insert per backend

/// "bulk-" + zero-padded number; the width fits the largest number.
int name_width(std::int64_t rows) {
    return std::max<int>(6, static_cast<int>(std::to_string(rows).size()));
}

std::string bulk_name(std::int64_t i, int width) {
    std::ostringstream s;
    s << "bulk-" << std::setw(width) << std::setfill('0') << i;
    return s.str();
}

// Every bulk row: owner "reap-bench:0:bulk/<n>", host "reap-bench", pid 0, strategy
// 'unique_key', token n (distinct, positive), hold_count 1, acquired 2 h ago, expired 1 h + n ms
// ago (database clock), so the reaper walks them in expires_at order.

void pg_bulk_insert(const std::string& url, const std::string& locks, std::int64_t rows) {
    struct conn_deleter {
        void operator()(PGconn* c) const noexcept { PQfinish(c); }
    };
    struct result_deleter {
        void operator()(PGresult* r) const noexcept { PQclear(r); }
    };
    const std::unique_ptr<PGconn, conn_deleter> conn(PQconnectdb(url.c_str()));
    if (!conn || PQstatus(conn.get()) != CONNECTION_OK)
        throw std::runtime_error(std::string("PostgreSQL connect failed: ") +
                                 (conn ? PQerrorMessage(conn.get()) : "out of memory"));
    const std::string table = "\"" + locks + "\"";
    const auto exec = [&](const std::string& sql) {
        const std::unique_ptr<PGresult, result_deleter> res(PQexec(conn.get(), sql.c_str()));
        if (!res || (PQresultStatus(res.get()) != PGRES_COMMAND_OK &&
                     PQresultStatus(res.get()) != PGRES_TUPLES_OK))
            throw std::runtime_error("PostgreSQL: " + std::string(PQerrorMessage(conn.get())) +
                                     " in: " + sql);
    };
    exec("DELETE FROM " + table + " WHERE name LIKE 'bulk-%'");
    exec("INSERT INTO " + table +
         " (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)"
         " SELECT 'bulk-' || lpad(g::text, " +
         std::to_string(name_width(rows)) +
         ", '0'), 'reap-bench:0:bulk/' || g, 'reap-bench', 0, 'unique_key', g, 1,"
         " statement_timestamp() - interval '2 hours',"
         " statement_timestamp() - interval '1 hour' - g * interval '1 millisecond'"
         " FROM generate_series(1, " +
         std::to_string(rows) + ") AS g");
    exec("ANALYZE " + table); // as autovacuum would have done on a table that grew over time
}

/// Returns how the rows were inserted ("seq_1_to_N" or "multi-row INSERT").
std::string mysql_bulk_insert(const std::string& url, const std::string& locks, std::int64_t rows) {
    const sqlock::detail::connection_config t = sqlock::detail::parse_url(url);
    sql::ConnectOptionsMap options;
    options["hostName"] = sql::SQLString("tcp://" + t.host + ":" + std::to_string(t.port));
    options["userName"] = sql::SQLString(t.user);
    options["password"] = sql::SQLString(t.password);
    if (!t.database.empty())
        options["schema"] = sql::SQLString(t.database);
    options["OPT_CONNECT_TIMEOUT"] = 5;
    const std::unique_ptr<sql::Connection> conn(
        sql::mysql::get_mysql_driver_instance()->connect(options));
    const std::unique_ptr<sql::Statement> st(conn->createStatement());
    const std::string table = "`" + locks + "`";
    const std::string columns =
        " (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at) ";
    const std::string width = std::to_string(name_width(rows));
    st->execute("DELETE FROM " + table + " WHERE name LIKE 'bulk-%'");
    std::string how = "seq_1_to_N";
    try {
        st->execute("INSERT INTO " + table + columns + "SELECT CONCAT('bulk-', LPAD(seq, " + width +
                    ", '0')), CONCAT('reap-bench:0:bulk/', seq), 'reap-bench', 0, 'unique_key',"
                    " seq, 1, UTC_TIMESTAMP(6) - INTERVAL 2 HOUR,"
                    " UTC_TIMESTAMP(6) - INTERVAL 1 HOUR - INTERVAL seq * 1000 MICROSECOND"
                    " FROM seq_1_to_" +
                    std::to_string(rows));
    } catch (const sql::SQLException& e) {
        if (e.getErrorCode() != 1146) // ER_NO_SUCH_TABLE: no Sequence engine
            throw;
        how = "multi-row INSERT";
        constexpr std::int64_t per_statement = 1000;
        for (std::int64_t first = 1; first <= rows; first += per_statement) {
            std::string sql = "INSERT INTO " + table + columns + "VALUES ";
            const std::int64_t last = std::min(rows, first + per_statement - 1);
            for (std::int64_t i = first; i <= last; ++i) {
                const std::string n = std::to_string(i);
                sql += (i == first ? "(" : ",(");
                sql += "'" + bulk_name(i, name_width(rows)) + "', 'reap-bench:0:bulk/" + n +
                       "', 'reap-bench', 0, 'unique_key', " + n +
                       ", 1, UTC_TIMESTAMP(6) - INTERVAL 2 HOUR, UTC_TIMESTAMP(6) - INTERVAL 1 "
                       "HOUR - INTERVAL " +
                       n + "000 MICROSECOND)";
            }
            st->execute(sql);
        }
    }
    st->execute("ANALYZE TABLE " + table);
    return how;
}

void sqlite_bulk_insert(const std::string& url, const std::string& locks, std::int64_t rows) {
    struct db_deleter {
        void operator()(sqlite3* d) const noexcept { sqlite3_close_v2(d); }
    };
    struct stmt_deleter {
        void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
    };
    const std::string path = bench::sqlite_path(url);
    sqlite3* raw = nullptr;
    const int open_rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
    const std::unique_ptr<sqlite3, db_deleter> db(raw);
    if (open_rc != SQLITE_OK)
        throw std::runtime_error("SQLite open " + path + ": " +
                                 (db ? sqlite3_errmsg(db.get()) : "out of memory"));
    sqlite3_busy_timeout(db.get(), 10'000);
    const auto fail = [&](const std::string& what) {
        throw std::runtime_error("SQLite " + what + ": " + sqlite3_errmsg(db.get()));
    };
    const auto exec = [&](const std::string& sql) {
        if (sqlite3_exec(db.get(), sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
            fail(sql);
    };
    const std::string table = "\"" + locks + "\"";
    const std::string now_ms = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";
    exec("BEGIN IMMEDIATE");
    exec("DELETE FROM " + table + " WHERE name LIKE 'bulk-%'");
    sqlite3_stmt* raw_stmt = nullptr;
    const std::string insert =
        "INSERT INTO " + table +
        " (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)"
        " VALUES (?1, ?2, 'reap-bench', 0, 'unique_key', ?3, 1, " +
        now_ms + " - 7200000, " + now_ms + " - 3600000 - ?3)";
    if (sqlite3_prepare_v2(db.get(), insert.c_str(), -1, &raw_stmt, nullptr) != SQLITE_OK)
        fail("prepare");
    const std::unique_ptr<sqlite3_stmt, stmt_deleter> stmt(raw_stmt);
    const int width = name_width(rows);
    for (std::int64_t i = 1; i <= rows; ++i) {
        const std::string name = bulk_name(i, width);
        const std::string owner = "reap-bench:0:bulk/" + std::to_string(i);
        // nullptr destructor = SQLITE_STATIC: the strings outlive the step.
        sqlite3_bind_text(stmt.get(), 1, name.c_str(), static_cast<int>(name.size()), nullptr);
        sqlite3_bind_text(stmt.get(), 2, owner.c_str(), static_cast<int>(owner.size()), nullptr);
        sqlite3_bind_int64(stmt.get(), 3, i);
        if (sqlite3_step(stmt.get()) != SQLITE_DONE)
            fail("insert");
        sqlite3_reset(stmt.get());
        sqlite3_clear_bindings(stmt.get());
    }
    exec("COMMIT");
    exec("ANALYZE " + table);
}

// ------------------------------------------------------------------ acquirer

struct sample {
    std::int64_t start_ns = 0; ///< lock() called
    std::int64_t end_ns = 0;   ///< lock() returned
};

struct acquirer_state {
    std::vector<sample> samples; ///< written by the acquirer thread only, read after join
    std::atomic<std::int64_t> cycles{0};
    std::atomic<bool> failed{false};
    std::int64_t losses = 0; ///< releases that found their lease gone (reaped or taken over)
    std::vector<std::string> problems;
};

std::vector<std::string> live_names() {
    std::vector<std::string> names;
    for (int i = 0; i < rotating_names; ++i)
        names.push_back("live-" + std::to_string(i));
    names.emplace_back("live-hot");
    return names;
}

void run_acquirer(const std::stop_token& stop, sqlock::database db, acquirer_state& st) {
    const sqlock::mutex_options options{.ttl = std::chrono::seconds(30)};
    try {
        sqlock::mutex hot(db, "live-hot", options);
        const auto one = [&](sqlock::mutex& m) {
            const std::int64_t t0 = bench::now_ns();
            m.lock();
            st.samples.push_back({t0, bench::now_ns()});
            m.unlock();
            if (m.last_loss() != sqlock::loss_reason::none) {
                ++st.losses;
                if (st.problems.size() < 5)
                    st.problems.push_back("release of " + m.name() +
                                          " found the lease gone: " + m.last_error());
            }
        };
        for (std::int64_t i = 0; !stop.stop_requested(); ++i) {
            sqlock::mutex m(db, "live-" + std::to_string(i % rotating_names), options);
            one(m);
            one(hot);
            st.cycles.fetch_add(1, std::memory_order_release);
        }
    } catch (const sqlock::error& e) {
        st.problems.push_back(std::string("acquirer: sqlock error (") +
                              std::string(sqlock::to_string(e.code())) + "): " + e.what());
        st.failed = true;
    } catch (const std::exception& e) {
        st.problems.push_back(std::string("acquirer: ") + e.what());
        st.failed = true;
    }
}

// ------------------------------------------------------------------ statistics and output

struct latency {
    std::size_t count = 0;
    std::size_t over_limit = 0; ///< acquisitions that took p99_limit_ms or longer
    std::optional<double> median_ms, p99_ms, max_ms;
};

latency summarise(std::vector<double> ms) {
    latency l;
    l.count = ms.size();
    if (ms.empty())
        return l;
    std::sort(ms.begin(), ms.end());
    l.median_ms = bench::median_of_sorted(ms);
    l.p99_ms = bench::percentile_of_sorted(ms, 0.99);
    l.max_ms = ms.back();
    l.over_limit =
        static_cast<std::size_t>(ms.end() - std::lower_bound(ms.begin(), ms.end(), p99_limit_ms));
    return l;
}

std::string json_number(const std::optional<double>& v, int digits) {
    return v ? bench::fixed(*v, digits) : "null";
}

std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += ' ';
        } else {
            out += c;
        }
    }
    return out + "\"";
}

struct results {
    std::string backend;
    std::string insert_method;
    std::int64_t inserted = 0; ///< bulk rows seen by list() before the reap
    double insert_seconds = 0;
    std::size_t deleted = 0;
    std::size_t batches = 0;
    double reap_seconds = 0;
    latency during;   ///< acquisitions whose lock() overlapped the reap
    latency baseline; ///< acquisitions before the reap started
    std::int64_t bulk_left = 0;
    std::int64_t live_losses = 0;
    std::size_t names_lockable = 0;
    std::size_t names_total = 0;
    bool live_held_survived = false;
    bool latency_pass = false;
    bool correctness_pass = false;
    std::vector<std::string> problems;
};

void print_results(const config& cfg, const results& r) {
    const auto ms = [](const std::optional<double>& v) {
        return v ? bench::fixed(*v, 2) + " ms" : std::string("-");
    };
    std::cout << "reap on " << r.backend << ": " << cfg.rows << " expired rows, batch " << cfg.batch
              << ", table prefix " << cfg.prefix << "\n";
    std::cout << "  inserted          " << r.inserted << " bulk rows via " << r.insert_method
              << " in " << bench::fixed(r.insert_seconds, 2) << " s\n";
    std::cout << "  reaped            " << r.deleted << " rows in " << r.batches << " batches, "
              << bench::fixed(r.reap_seconds, 3) << " s ("
              << bench::fixed(
                     r.reap_seconds > 0 ? static_cast<double>(r.deleted) / r.reap_seconds : 0, 0)
              << " rows/s)\n";
    std::cout << "  acquirer baseline " << r.baseline.count
              << " acquisitions before the reap: median " << ms(r.baseline.median_ms) << ", p99 "
              << ms(r.baseline.p99_ms) << ", max " << ms(r.baseline.max_ms) << "\n";
    std::cout << "  acquirer in reap  " << r.during.count << " acquisitions: median "
              << ms(r.during.median_ms) << ", p99 " << ms(r.during.p99_ms) << ", max "
              << ms(r.during.max_ms) << "; " << r.during.over_limit
              << " took >= " << bench::fixed(p99_limit_ms, 0) << " ms\n";
    std::cout << "  left after reap   " << r.bulk_left << " bulk rows; live leases lost "
              << r.live_losses << "; live-held " << (r.live_held_survived ? "survived" : "WAS LOST")
              << "; live names lockable " << r.names_lockable << "/" << r.names_total << "\n";
    std::cout << "  p99 < " << bench::fixed(p99_limit_ms, 0) << " ms            "
              << (r.latency_pass ? "PASS" : "FAIL") << "\n";
    std::cout << "  all reaped, no live lost " << (r.correctness_pass ? "PASS" : "FAIL") << "\n";
    for (const std::string& p : r.problems)
        std::cout << "  PROBLEM           " << p << "\n";
}

void write_json(const config& cfg, const results& r) {
    std::ofstream f(cfg.json_path, std::ios::trunc);
    const double rate = r.reap_seconds > 0 ? static_cast<double>(r.deleted) / r.reap_seconds : 0;
    f << "{\"backend\": \"" << r.backend << "\", \"rows\": " << cfg.rows
      << ", \"batch\": " << cfg.batch << ", \"insert_method\": \"" << r.insert_method
      << "\", \"inserted\": " << r.inserted
      << ", \"insert_seconds\": " << bench::fixed(r.insert_seconds, 3)
      << ", \"reaped\": " << r.deleted << ", \"batches\": " << r.batches
      << ", \"reap_seconds\": " << bench::fixed(r.reap_seconds, 3)
      << ", \"rows_per_second\": " << bench::fixed(rate, 0)
      << ", \"acquisitions_during_reap\": " << r.during.count
      << ", \"acquire_median_ms\": " << json_number(r.during.median_ms, 3)
      << ", \"acquire_p99_ms\": " << json_number(r.during.p99_ms, 3)
      << ", \"acquire_max_ms\": " << json_number(r.during.max_ms, 3)
      << ", \"acquisitions_over_limit\": " << r.during.over_limit
      << ", \"baseline_acquisitions\": " << r.baseline.count
      << ", \"baseline_median_ms\": " << json_number(r.baseline.median_ms, 3)
      << ", \"baseline_p99_ms\": " << json_number(r.baseline.p99_ms, 3)
      << ", \"baseline_max_ms\": " << json_number(r.baseline.max_ms, 3)
      << ", \"p99_limit_ms\": " << bench::fixed(p99_limit_ms, 0)
      << ", \"bulk_rows_left\": " << r.bulk_left << ", \"live_leases_lost\": " << r.live_losses
      << ", \"live_held_survived\": " << (r.live_held_survived ? "true" : "false")
      << ", \"live_names_lockable\": " << r.names_lockable << ", \"live_names\": " << r.names_total
      << ", \"latency_pass\": " << (r.latency_pass ? "true" : "false")
      << ", \"correctness_pass\": " << (r.correctness_pass ? "true" : "false")
      << ", \"verdict\": \"" << (r.latency_pass && r.correctness_pass ? "PASS" : "FAIL")
      << "\", \"problems\": [";
    for (std::size_t i = 0; i < r.problems.size(); ++i)
        f << (i ? ", " : "") << json_string(r.problems[i]);
    f << "]}\n";
    f.close();
    if (!f)
        throw std::runtime_error("cannot write " + cfg.json_path);
}

// ------------------------------------------------------------------ the run

int run(const config& cfg) {
    sqlock::connect_options options;
    options.table_prefix = cfg.prefix;
    sqlock::database db = sqlock::connect(cfg.url, options);
    db.migrate();
    const std::string locks = cfg.prefix + "locks";

    results r;
    r.backend = std::string(sqlock::to_string(db.backend()));

    // 1. Expired rows, straight through the driver.
    const std::int64_t t_insert = bench::now_ns();
    switch (db.backend()) {
    case sqlock::backend_kind::postgresql:
        pg_bulk_insert(cfg.url, locks, cfg.rows);
        r.insert_method = "INSERT ... SELECT FROM generate_series";
        break;
    case sqlock::backend_kind::mysql:
        r.insert_method = mysql_bulk_insert(cfg.url, locks, cfg.rows);
        break;
    case sqlock::backend_kind::sqlite:
        sqlite_bulk_insert(cfg.url, locks, cfg.rows);
        r.insert_method = "one transaction of prepared INSERTs";
        break;
    }
    r.insert_seconds = seconds_since(t_insert);

    // Every bulk row must look like an expired unique_key lease to sqlock itself.
    std::int64_t malformed = 0;
    for (const sqlock::lock_info& info : db.list()) {
        if (info.name.rfind("bulk-", 0) != 0)
            continue;
        ++r.inserted;
        if (info.strategy != "unique_key" || !info.expired() || info.held() || info.owner.empty() ||
            info.token <= 0 || info.hold_count != 1)
            ++malformed;
    }
    if (r.inserted != cfg.rows || malformed != 0)
        throw std::runtime_error("bulk insert: list() shows " + std::to_string(r.inserted) +
                                 " bulk rows (expected " + std::to_string(cfg.rows) + "), " +
                                 std::to_string(malformed) +
                                 " of them not expired unique_key leases");
    const sqlock::reap_result dry = db.reap({.batch = 1, .dry_run = true});
    if (dry.expired < static_cast<std::size_t>(cfg.rows))
        throw std::runtime_error("reap dry run counts only " + std::to_string(dry.expired) +
                                 " expired rows");

    // 2. A live lease held across the whole reap, and the acquirer (its own pool).
    sqlock::mutex held(db, "live-held", {.ttl = std::chrono::minutes(10)});
    held.lock();
    acquirer_state st;
    st.samples.reserve(1'000'000);
    sqlock::database acq_db = sqlock::connect(cfg.url, options);
    std::jthread acquirer([&](const std::stop_token& stop) { run_acquirer(stop, acq_db, st); });
    // Warm-up: one full cycle (first use of each name, prepared statements) is not counted.
    const std::int64_t warm_deadline = bench::now_ns() + 30'000'000'000;
    while (st.cycles.load(std::memory_order_acquire) < rotating_names && !st.failed &&
           bench::now_ns() < warm_deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::int64_t t_baseline = bench::now_ns();
    std::this_thread::sleep_for(std::chrono::duration<double>(cfg.baseline_seconds));

    // 3. The reap.
    const std::int64_t t_reap = bench::now_ns();
    std::optional<std::string> reap_error;
    try {
        const sqlock::reap_result res =
            db.reap({.batch = static_cast<std::size_t>(cfg.batch),
                     .settle = std::chrono::milliseconds(
                         static_cast<std::int64_t>(cfg.settle_seconds * 1000))});
        r.deleted = res.deleted;
        r.batches = res.batches;
    } catch (const sqlock::error& e) {
        reap_error = std::string("reap: sqlock error (") +
                     std::string(sqlock::to_string(e.code())) + "): " + e.what();
    }
    const std::int64_t t_reap_end = bench::now_ns();
    r.reap_seconds = static_cast<double>(t_reap_end - t_reap) / 1e9;
    acquirer.request_stop();
    acquirer.join();

    // live-held must still be ours: listed as held by us, and its release finds it.
    for (const sqlock::lock_info& info : db.list())
        if (info.name == "live-held")
            r.live_held_survived = info.held() && info.owner == held.owner_id();
    held.unlock();
    if (held.last_loss() != sqlock::loss_reason::none) {
        r.live_held_survived = false;
        r.problems.push_back("release of live-held found the lease gone: " + held.last_error());
    }

    // 4. Results and checks.
    std::vector<double> base_ms;
    std::vector<double> during_ms;
    for (const sample& s : st.samples) {
        const double ms = static_cast<double>(s.end_ns - s.start_ns) / 1e6;
        if (s.start_ns >= t_baseline && s.end_ns <= t_reap)
            base_ms.push_back(ms);
        else if (s.start_ns < t_reap_end && s.end_ns > t_reap)
            during_ms.push_back(ms);
    }
    r.baseline = summarise(std::move(base_ms));
    r.during = summarise(std::move(during_ms));

    for (const sqlock::lock_info& info : db.list())
        if (info.name.rfind("bulk-", 0) == 0)
            ++r.bulk_left;
    const std::vector<std::string> names = live_names();
    r.names_total = names.size();
    for (const std::string& name : names) {
        sqlock::mutex m(db, name, {.ttl = std::chrono::seconds(30)});
        if (m.try_lock_for(std::chrono::seconds(5))) {
            m.unlock();
            if (m.last_loss() == sqlock::loss_reason::none)
                ++r.names_lockable;
        } else {
            r.problems.push_back(name + " was not lockable within 5 s after the reap");
        }
    }
    r.live_losses = st.losses;
    if (reap_error)
        r.problems.push_back(*reap_error);
    r.problems.insert(r.problems.end(), st.problems.begin(), st.problems.end());
    if (r.during.count == 0)
        r.problems.push_back("no acquisition overlapped the reap: nothing to judge the p99 by");

    r.latency_pass = !st.failed && r.during.p99_ms && *r.during.p99_ms < p99_limit_ms;
    r.correctness_pass = !reap_error && !st.failed && r.bulk_left == 0 &&
                         r.deleted >= static_cast<std::size_t>(cfg.rows) && r.live_losses == 0 &&
                         r.live_held_survived && r.names_lockable == r.names_total;
    print_results(cfg, r);
    if (!cfg.json_path.empty())
        write_json(cfg, r);
    return (r.latency_pass || !cfg.latency_verdict) && r.correctness_pass ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    return bench::bench_main<config>("sqlock_reap_bench", usage_text, argc, argv, parse_args, run);
}
