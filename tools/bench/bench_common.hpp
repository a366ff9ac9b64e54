// bench_common.hpp — helpers shared by sqlock's benchmarks: clocks and statistics, command
// lines, thin RAII wrappers over the bare drivers (libpq, Connector/C++ 1.1, the sqlite3 C API)
// that bind exactly as many parameters as a statement takes, and JSON / markdown formatting.
// URLs, owner ids and placeholder rewriting are the library's own (src/base: the benchmarks
// link libsqlock's internals, they do not copy them); sqlock's statements come from its
// catalog through library_sql.hpp.
//
// Header-only and internal to tools/bench: nothing here is part of sqlock's API.
#pragma once

#include "base/config.hpp"
#include "base/owner.hpp"
#include "base/sql_text.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <libpq-fe.h>
#include <map>
#include <memory>
#include <mysql_driver.h>
#include <optional>
#include <sqlite3.h>
#include <sqlock/sqlock.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unistd.h>
#include <utility>
#include <variant>
#include <vector>

namespace bench {

// ------------------------------------------------------------------ time and statistics

/// steady_clock is CLOCK_MONOTONIC on Linux: one clock for every process on the host.
inline std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// Median of a sorted, non-empty vector (mean of the two middle values for an even count).
inline double median_of_sorted(const std::vector<double>& v) {
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/// Nearest-rank percentile (q in (0, 1]) of a sorted, non-empty vector.
inline double percentile_of_sorted(const std::vector<double>& v, double q) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size(), std::max<std::size_t>(rank, 1)) - 1];
}

struct summary {
    std::size_t n = 0;
    double median = 0;
    double p99 = 0;
    double mean = 0;
    double min = 0;
    double max = 0;
};

inline summary summarise(std::vector<double> v) {
    summary s;
    if (v.empty())
        return s;
    std::sort(v.begin(), v.end());
    s.n = v.size();
    s.median = median_of_sorted(v);
    s.p99 = percentile_of_sorted(v, 0.99);
    double sum = 0;
    for (const double x : v)
        sum += x;
    s.mean = sum / static_cast<double>(v.size());
    s.min = v.front();
    s.max = v.back();
    return s;
}

inline std::string fixed(double v, int digits) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(digits) << v;
    return o.str();
}

/// A latency in µs for a table: 3 significant-ish digits.
inline std::string us(double v) {
    return fixed(v, v < 10 ? 2 : (v < 1000 ? 1 : 0));
}

inline std::string ratio_text(double r) {
    return fixed(r, 2) + "×";
}

/// JSON string literal (the texts here are ASCII labels and messages).
inline std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
                out += buf;
            } else {
                out += c;
            }
        }
    }
    return out + "\"";
}

inline std::string json_number(double v, int digits = 3) {
    if (!std::isfinite(v))
        return "null";
    return fixed(v, digits);
}

inline void write_file(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::trunc);
    f << text;
    f.close();
    if (!f)
        throw std::runtime_error("cannot write " + path);
}

// ------------------------------------------------------------------ command line

struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The whole of `text` as an integer, else a usage_error naming `flag`.
inline std::int64_t parse_int(std::string_view flag, const std::string& text) {
    std::size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size())
        throw usage_error(std::string(flag) + ": not an integer: " + text);
    return v;
}

/// The whole of `text` as a finite number, else a usage_error naming `flag`.
inline double parse_double(std::string_view flag, const std::string& text) {
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || !std::isfinite(v))
        throw usage_error(std::string(flag) + ": not a number: " + text);
    return v;
}

/// Walks argv as "--flag value" pairs, calling handle(flag, value) for each; -h / --help prints
/// `usage` and exits 0, a flag without a value is a usage_error.
template <class Handler>
void for_each_option(int argc, char** argv, const char* usage, Handler&& handle) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            std::cout << usage;
            std::exit(0);
        }
        if (i + 1 >= args.size())
            throw usage_error("missing value after " + a);
        handle(a, args[++i]);
    }
}

// ------------------------------------------------------------------ URLs

using backend = sqlock::backend_kind;

/// The backend of a sqlock URL, read by the library's own parser; a URL sqlock does not take
/// is a usage_error with the library's reason.
inline backend backend_of(std::string_view url) {
    try {
        return sqlock::detail::parse_url(url).kind;
    } catch (const sqlock::error& e) {
        throw usage_error(e.what());
    }
}

inline std::string backend_label(backend b) {
    switch (b) {
    case backend::postgresql:
        return "PostgreSQL";
    case backend::mysql:
        return "MariaDB";
    case backend::sqlite:
        return "SQLite";
    }
    return "?";
}

/// The SQLite file a sqlite: URL names, as the library reads it.
inline std::string sqlite_path(std::string_view url) {
    return sqlock::detail::parse_url(url).path;
}

/// An owner id as sqlock makes them ("host:pid:nonce/handle.thread", base/owner.hpp).
inline std::string sqlock_owner_id() {
    return sqlock::detail::owner_id(sqlock::detail::next_handle_number());
}

inline std::string host_name() {
    return sqlock::detail::this_process().host;
}

/// Throws unless `given` parameters are what `statement` takes: a statement that gained or
/// lost one must fail the benchmark, not bind NULL or drop a value silently.
inline void require_param_count(std::string_view statement, std::size_t takes, std::size_t given) {
    if (takes != given)
        throw std::runtime_error(std::string(statement) + " takes " + std::to_string(takes) +
                                 " parameters, the benchmark binds " + std::to_string(given));
}

// ------------------------------------------------------------------ bare libpq

/// A parameter: text, or SQL NULL.
using pq_param = std::optional<std::string>;

class pg_result {
public:
    explicit pg_result(PGresult* r) : m_r(r) {}
    PGresult* get() const { return m_r.get(); }
    int rows() const { return PQntuples(m_r.get()); }
    std::string value(int row, int col) const { return PQgetvalue(m_r.get(), row, col); }

private:
    struct deleter {
        void operator()(PGresult* r) const noexcept { PQclear(r); }
    };
    std::unique_ptr<PGresult, deleter> m_r;
};

class pg_conn {
public:
    explicit pg_conn(const std::string& url) : m_conn(PQconnectdb(url.c_str())) {
        if (!m_conn || PQstatus(m_conn.get()) != CONNECTION_OK)
            throw std::runtime_error(std::string("PostgreSQL connect failed: ") +
                                     (m_conn ? PQerrorMessage(m_conn.get()) : "out of memory"));
        PQsetNoticeProcessor(
            m_conn.get(), [](void*, const char*) {}, nullptr); // NOTICEs: quiet
    }
    PGconn* get() const { return m_conn.get(); }

    /// Simple-protocol statement(s), results checked and discarded.
    void exec(const std::string& sql) {
        const pg_result r(PQexec(get(), sql.c_str()));
        const auto st = PQresultStatus(r.get());
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
            throw std::runtime_error("PostgreSQL: " + sql.substr(0, 60) + ": " +
                                     PQerrorMessage(get()));
    }
    /// Prepares `sql` as `name`; the server says how many parameters it takes ($N), and
    /// exec_prepared / exec_pipeline bind exactly that many.
    void prepare(const std::string& name, const std::string& sql) {
        const pg_result r(PQprepare(get(), name.c_str(), sql.c_str(), 0, nullptr));
        if (PQresultStatus(r.get()) != PGRES_COMMAND_OK)
            throw std::runtime_error("PQprepare " + name + ": " + PQerrorMessage(get()));
        const pg_result d(PQdescribePrepared(get(), name.c_str()));
        if (PQresultStatus(d.get()) != PGRES_COMMAND_OK)
            throw std::runtime_error("PQdescribePrepared " + name + ": " + PQerrorMessage(get()));
        m_params[name] = static_cast<std::size_t>(PQnparams(d.get()));
    }
    /// One prepared statement, one round trip (extended protocol, one Sync).
    pg_result exec_prepared(const std::string& name, const std::vector<pq_param>& params) {
        check_params(name, params);
        std::vector<const char*> values;
        values.reserve(params.size());
        for (const auto& p : params)
            values.push_back(p ? p->c_str() : nullptr);
        pg_result r(PQexecPrepared(get(), name.c_str(), static_cast<int>(values.size()),
                                   values.data(), nullptr, nullptr, 0));
        const auto st = PQresultStatus(r.get());
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
            throw std::runtime_error("PostgreSQL " + name + ": " + PQerrorMessage(get()));
        return r;
    }

    struct pipelined {
        std::string name;
        std::vector<pq_param> params;
    };
    /// Prepared statements sent as one pipeline with one Sync (one round trip), like sqlock's
    /// execute_batch. Returns every statement's result, in order.
    std::vector<pg_result> exec_pipeline(const std::vector<pipelined>& items) {
        for (const auto& item : items)
            check_params(item.name, item.params);
        if (PQenterPipelineMode(get()) != 1)
            throw std::runtime_error(std::string("PQenterPipelineMode: ") + PQerrorMessage(get()));
        for (const auto& item : items) {
            std::vector<const char*> values;
            values.reserve(item.params.size());
            for (const auto& p : item.params)
                values.push_back(p ? p->c_str() : nullptr);
            if (PQsendQueryPrepared(get(), item.name.c_str(), static_cast<int>(values.size()),
                                    values.data(), nullptr, nullptr, 0) != 1)
                throw std::runtime_error(std::string("PQsendQueryPrepared: ") +
                                         PQerrorMessage(get()));
        }
        if (PQpipelineSync(get()) != 1)
            throw std::runtime_error(std::string("PQpipelineSync: ") + PQerrorMessage(get()));
        std::vector<pg_result> results;
        std::string failure;
        for (std::size_t i = 0; i < items.size(); ++i) {
            pg_result r(PQgetResult(get()));
            if (!r.get())
                throw std::runtime_error("pipeline: missing result");
            const auto st = PQresultStatus(r.get());
            if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && failure.empty())
                failure = items[i].name + ": " + PQresultErrorMessage(r.get());
            const pg_result end(PQgetResult(get())); // the null that ends each statement
            results.push_back(std::move(r));
        }
        const pg_result sync(PQgetResult(get()));
        if (!sync.get() || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC)
            throw std::runtime_error("pipeline: no sync result");
        if (PQexitPipelineMode(get()) != 1)
            throw std::runtime_error(std::string("PQexitPipelineMode: ") + PQerrorMessage(get()));
        if (!failure.empty())
            throw std::runtime_error("PostgreSQL pipeline " + failure);
        return results;
    }

private:
    void check_params(const std::string& name, const std::vector<pq_param>& params) const {
        const auto it = m_params.find(name);
        if (it == m_params.end())
            throw std::logic_error("PostgreSQL " + name + ": not prepared on this connection");
        require_param_count(name, it->second, params.size());
    }

    struct deleter {
        void operator()(PGconn* c) const noexcept { PQfinish(c); }
    };
    std::unique_ptr<PGconn, deleter> m_conn;
    std::map<std::string, std::size_t, std::less<>> m_params; ///< prepared name -> parameters
};

// ------------------------------------------------------------------ bare Connector/C++

using my_param = std::variant<std::nullptr_t, std::int64_t, std::string>;

/// A server-side prepared statement, its parameters written $1, $2, ... as in sqlock's SQL
/// files (rewritten to "?" by the library's own rewriting, base/sql_text.hpp). It binds exactly
/// as many parameters as the text takes (its highest $N).
class my_statement {
public:
    my_statement(sql::Connection& conn, std::string_view dollar_text)
        : my_statement(conn,
                       sqlock::detail::rewrite_placeholders(
                           dollar_text, sqlock::detail::placeholder_style::question),
                       std::string(dollar_text.substr(0, 40))) {}
    /// `text` already rewritten ("?"), `order`: the 0-based parameter each "?" binds.
    my_statement(sql::Connection& conn, std::string name, const std::string& text,
                 std::vector<int> order)
        : m_name(std::move(name)), m_order(std::move(order)) {
        for (const int index : m_order)
            m_params = std::max(m_params, static_cast<std::size_t>(index) + 1);
        m_stmt.reset(conn.prepareStatement(text));
    }
    void bind(const std::vector<my_param>& params) {
        require_param_count(m_name, m_params, params.size());
        for (std::size_t i = 0; i < m_order.size(); ++i) {
            const auto index = static_cast<unsigned int>(i + 1);
            const my_param& v = params[static_cast<std::size_t>(m_order[i])];
            if (const auto* n = std::get_if<std::int64_t>(&v))
                m_stmt->setInt64(index, *n);
            else if (const auto* s = std::get_if<std::string>(&v))
                m_stmt->setString(index, sql::SQLString(*s));
            else
                m_stmt->setNull(index, sql::DataType::VARCHAR);
        }
    }
    /// Rows as text (NULL -> "").
    std::vector<std::vector<std::string>> query(const std::vector<my_param>& params) {
        bind(params);
        const std::unique_ptr<sql::ResultSet> rs(m_stmt->executeQuery());
        const auto columns = rs->getMetaData()->getColumnCount();
        std::vector<std::vector<std::string>> rows;
        while (rs->next()) {
            auto& r = rows.emplace_back();
            for (unsigned int c = 1; c <= columns; ++c)
                r.push_back(rs->isNull(c) ? std::string() : rs->getString(c).asStdString());
        }
        return rows;
    }
    int update(const std::vector<my_param>& params) {
        bind(params);
        return m_stmt->executeUpdate();
    }

private:
    my_statement(sql::Connection& conn, sqlock::detail::rewritten_sql r, std::string name)
        : my_statement(conn, std::move(name), r.text, std::move(r.order)) {}

    std::string m_name;
    std::vector<int> m_order;
    std::size_t m_params = 0;
    std::unique_ptr<sql::PreparedStatement> m_stmt;
};

/// A Connector/C++ connection with sqlock's session settings. `io_timeout_s` bounds each
/// read and write (raise it above any server-side wait the caller sends).
inline std::unique_ptr<sql::Connection> my_connect(const std::string& url, bool autocommit,
                                                   int io_timeout_s = 30) {
    const sqlock::detail::connection_config t = sqlock::detail::parse_url(url);
    sql::ConnectOptionsMap options;
    options["hostName"] = sql::SQLString("tcp://" + t.host + ":" + std::to_string(t.port));
    options["userName"] = sql::SQLString(t.user);
    options["password"] = sql::SQLString(t.password);
    if (!t.database.empty())
        options["schema"] = sql::SQLString(t.database);
    options["OPT_CHARSET_NAME"] = sql::SQLString("utf8mb4");
    options["OPT_CONNECT_TIMEOUT"] = 5;
    options["OPT_READ_TIMEOUT"] = io_timeout_s;
    options["OPT_WRITE_TIMEOUT"] = io_timeout_s;
    options["OPT_RECONNECT"] = false; // a reconnect would silently drop session state and locks
    std::unique_ptr<sql::Connection> conn(
        sql::mysql::get_mysql_driver_instance()->connect(options));
    const std::unique_ptr<sql::Statement> s(conn->createStatement());
    s->execute("SET SESSION sql_mode = 'STRICT_ALL_TABLES,STRICT_TRANS_TABLES,"
               "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION', time_zone = '+00:00', "
               "autocommit = 1");
    if (!autocommit)
        s->execute("SET SESSION autocommit = 0");
    return conn;
}

// ------------------------------------------------------------------ bare sqlite3

class sqlite_stmt {
public:
    sqlite_stmt() = default;
    /// `name`: for messages (default: the start of the SQL).
    sqlite_stmt(sqlite3* db, const std::string& sql, std::string name = {})
        : m_db(db), m_name(name.empty() ? sql.substr(0, 40) : std::move(name)) {
        sqlite3_stmt* raw = nullptr;
        if (sqlite3_prepare_v3(db, sql.c_str(), static_cast<int>(sql.size()),
                               SQLITE_PREPARE_PERSISTENT, &raw, nullptr) != SQLITE_OK)
            throw std::runtime_error(std::string("sqlite prepare: ") + sqlite3_errmsg(db) + ": " +
                                     sql.substr(0, 80));
        m_stmt.reset(raw);
    }
    using param = std::variant<std::nullptr_t, std::int64_t, std::string>;
    /// Binds ?1..?N (exactly the N the statement takes), steps to the end; rows as text
    /// (NULL -> ""). Throws on failure.
    std::vector<std::vector<std::string>> run(const std::vector<param>& params = {}) {
        sqlite3_stmt* s = m_stmt.get();
        require_param_count(m_name, static_cast<std::size_t>(sqlite3_bind_parameter_count(s)),
                            params.size());
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
        for (std::size_t i = 0; i < params.size(); ++i) {
            const int index = static_cast<int>(i + 1);
            int rc = SQLITE_OK;
            if (const auto* n = std::get_if<std::int64_t>(&params[i]))
                rc = sqlite3_bind_int64(s, index, *n);
            else if (const auto* t = std::get_if<std::string>(&params[i]))
                rc = sqlite3_bind_text64(s, index, t->data(), t->size(), SQLITE_TRANSIENT,
                                         SQLITE_UTF8);
            else
                rc = sqlite3_bind_null(s, index);
            if (rc != SQLITE_OK)
                throw std::runtime_error(std::string("sqlite bind: ") + sqlite3_errmsg(m_db));
        }
        std::vector<std::vector<std::string>> rows;
        for (;;) {
            const int rc = sqlite3_step(s);
            if (rc == SQLITE_ROW) {
                auto& r = rows.emplace_back();
                for (int c = 0; c < sqlite3_column_count(s); ++c) {
                    const unsigned char* text = sqlite3_column_text(s, c);
                    r.emplace_back(text ? reinterpret_cast<const char*>(text) : "");
                }
                continue;
            }
            if (rc == SQLITE_DONE)
                break;
            const std::string why = sqlite3_errmsg(m_db);
            sqlite3_reset(s);
            throw std::runtime_error("sqlite step: " + why);
        }
        sqlite3_reset(s);
        return rows;
    }

private:
    struct finalizer {
        void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
    };
    sqlite3* m_db = nullptr;
    std::string m_name;
    std::unique_ptr<sqlite3_stmt, finalizer> m_stmt;
};

class sqlite_db {
public:
    explicit sqlite_db(const std::string& path) {
        sqlite3* raw = nullptr;
        const int rc = sqlite3_open_v2(
            path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
            nullptr);
        m_db.reset(raw);
        if (rc != SQLITE_OK)
            throw std::runtime_error("sqlite open " + path + ": " +
                                     (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
        sqlite3_extended_result_codes(raw, 1);
        sqlite3_busy_timeout(raw, 5000);
    }
    sqlite3* get() const { return m_db.get(); }
    std::int64_t changes() const { return sqlite3_changes64(m_db.get()); }
    void exec(const std::string& sql) {
        char* message = nullptr;
        if (sqlite3_exec(get(), sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
            const std::string why = message ? message : sqlite3_errmsg(get());
            sqlite3_free(message);
            throw std::runtime_error("sqlite: " + sql.substr(0, 60) + ": " + why);
        }
    }

private:
    struct closer {
        void operator()(sqlite3* d) const noexcept { sqlite3_close_v2(d); }
    };
    std::unique_ptr<sqlite3, closer> m_db;
};

/// A benchmark's main(): parses the arguments (a failure prints the usage, exit 2), runs,
/// and reports any error the run throws with its kind (exit 1).
template <class Config>
int bench_main(const char* program, std::string_view usage, int argc, char** argv,
               Config (*parse)(int, char**), int (*run)(const Config&)) {
    Config cfg;
    try {
        cfg = parse(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << program << ": " << e.what() << "\n\n" << usage;
        return 2;
    }
    try {
        return run(cfg);
    } catch (const sqlock::error& e) {
        std::cerr << program << ": sqlock error (" << sqlock::to_string(e.code())
                  << "): " << e.what() << "\n";
    } catch (const sql::SQLException& e) {
        std::cerr << program << ": MariaDB error " << e.getErrorCode() << ": " << e.what() << "\n";
    } catch (const std::exception& e) {
        std::cerr << program << ": " << e.what() << "\n";
    }
    return 1;
}

} // namespace bench
