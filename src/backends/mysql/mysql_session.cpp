// MySQL/MariaDB backend over MariaDB Connector/C (libmariadb): one connection per session,
// server-side prepared statements cached per statement id, strict SQL mode, UTC session time
// zone.
//
// Threads: a session is used by one thread at a time but may move between threads. libmariadb
// 3.x keeps no per-thread client state: mysql_thread_init() and mysql_thread_end() are empty
// functions there (checked in the 3.3 library Debian 12 ships, and MariaDB documents them as
// no-ops since Connector/C 3.0), so none is called. mysql_library_init() is not thread-safe
// and runs once, before the first connection (library_ready()).
#include "backends/backend.hpp"
#include "backends/module.hpp"
#include "base/io_wait.hpp"
#include "base/rows.hpp"
#include "base/sql_text.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <map>
#include <memory>
#include <mysql.h>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <system_error>
#include <unistd.h>
#include <utility>
#include <vector>

namespace sqlock::detail {

namespace {

constexpr const char* backend_name = "mysql";

// A fixed mode instead of adding to the server's: a server configured with ANSI_QUOTES,
// PIPES_AS_CONCAT or ORACLE would parse our SQL differently. STRICT_ALL_TABLES makes an
// over-long name an error instead of a silent truncation into another lock's name.
// REPEATABLE READ is what Connector/C++ 1.1, the previous driver, set on every connection it
// opened (lock-holder sessions switch to READ COMMITTED below): kept, whatever the server's
// default.
constexpr const char* session_setup =
    "SET SESSION sql_mode = 'STRICT_ALL_TABLES,STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,"
    "NO_ENGINE_SUBSTITUTION', time_zone = '+00:00', autocommit = 1, "
    "tx_isolation = 'REPEATABLE-READ'";

/// Whole seconds, rounded up (libmariadb's timeouts are in seconds).
int ceil_seconds(std::chrono::milliseconds timeout) {
    const std::int64_t seconds = (std::max<std::int64_t>(timeout.count(), 0) + 999) / 1000;
    return static_cast<int>(std::min<std::int64_t>(seconds, std::numeric_limits<int>::max()));
}

/// The host given to mysql_real_connect(): an IPv6 address without its brackets. Always over
/// TCP (MYSQL_OPT_PROTOCOL), "localhost" too, as Connector/C++ 1.1 did with its tcp:// URIs:
/// libmariadb alone would take "localhost" to mean its default Unix socket.
std::string server_host(const connection_config& config) {
    std::string host = config.host.empty() ? std::string("127.0.0.1") : config.host;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    return host;
}

/// True when `version` (VERSION() or the server greeting) is MariaDB 10.5 or later.
bool supported_version(std::string_view version) {
    if (version.find("MariaDB") == std::string_view::npos)
        return false;
    int major = 0;
    int minor = 0;
    std::size_t i = 0;
    for (; i < version.size() && version[i] >= '0' && version[i] <= '9'; ++i)
        major = std::min(major * 10 + (version[i] - '0'), 10000);
    if (i >= version.size() || version[i] != '.')
        return false;
    for (++i; i < version.size() && version[i] >= '0' && version[i] <= '9'; ++i)
        minor = std::min(minor * 10 + (version[i] - '0'), 10000);
    return major > 10 || (major == 10 && minor >= 5);
}

bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || static_cast<unsigned char>(c) >= 0x80;
}

/// True when `sql` has a RETURNING clause (outside quotes and comments). MariaDB's prepare
/// reply announces no result columns for INSERT/DELETE ... RETURNING, so the column count
/// alone cannot tell whether a statement returns rows.
bool has_returning_clause(std::string_view sql) {
    constexpr std::string_view keyword = "returning";
    std::size_t i = 0;
    while (i < sql.size()) {
        const char c = sql[i];
        const char next = i + 1 < sql.size() ? sql[i + 1] : '\0';
        if (c == '\'' || c == '"' || c == '`') {
            for (++i; i < sql.size(); ++i) {
                if (sql[i] == '\\' && c != '`') {
                    ++i;
                } else if (sql[i] == c) {
                    if (i + 1 < sql.size() && sql[i + 1] == c) {
                        ++i;
                    } else {
                        break;
                    }
                }
            }
            ++i;
        } else if ((c == '-' && next == '-') || c == '#') {
            i = std::min(sql.find('\n', i), sql.size());
        } else if (c == '/' && next == '*') {
            const auto end = sql.find("*/", i + 2);
            i = end == std::string_view::npos ? sql.size() : end + 2;
        } else if (is_word_char(c)) {
            std::size_t j = i;
            while (j < sql.size() && is_word_char(sql[j]))
                ++j;
            const auto word = sql.substr(i, j - i);
            if (std::ranges::equal(word, keyword, [](char w, char k) { return (w | 0x20) == k; }))
                return true;
            i = j;
        } else {
            ++i;
        }
    }
    return false;
}

/// mysql_library_init() once per process, before any connection (it is not thread-safe;
/// mysql_init() would call it unguarded).
bool library_ready() noexcept {
    static const bool ready = mysql_library_init(0, nullptr, nullptr) == 0;
    return ready;
}

/// libmariadb's wait for its socket (MARIADB_OPT_IO_WAIT), called whenever a read, write or
/// connect would block: through the wait hook (base/io_wait.hpp), so that on a fiber (an
/// asynchronous acquire or release) it suspends the fiber instead of blocking the thread, and
/// blocks in poll() as before otherwise. `timeout_ms` <= 0: no limit. Returns what the
/// library's own poll() wait returns: 1 ready, 0 at the timeout (errno ETIMEDOUT), -1 failed.
int wait_for_socket(my_socket fd, my_bool is_read, int timeout_ms) noexcept {
    using clock = std::chrono::steady_clock;
    const auto deadline = timeout_ms > 0 ? clock::now() + std::chrono::milliseconds(timeout_ms)
                                         : clock::time_point::max();
    const auto event = is_read ? io_wait::fd_event::readable : io_wait::fd_event::writable;
    try {
        // A statement in flight is read to its end, never cut short by a cancel (as on
        // PostgreSQL): a wait in the server comes back within its step. A connect is
        // (interruptible_waits): it ends here as a timeout.
        if (wait_for_fd(fd, event, deadline))
            return 1;
        errno = ETIMEDOUT;
        return 0;
    } catch (const std::system_error& e) {
        errno = e.code().value();
        return -1;
    } catch (...) {
        errno = EIO;
        return -1;
    }
}

struct connection_closer {
    void operator()(MYSQL* mysql) const noexcept { mysql_close(mysql); }
};
struct statement_closer {
    void operator()(MYSQL_STMT* stmt) const noexcept { mysql_stmt_close(stmt); }
};
struct result_freer {
    void operator()(MYSQL_RES* res) const noexcept { mysql_free_result(res); }
};

/// A failed client call: what libmariadb said about it.
struct driver_failure {
    unsigned int code = 0;
    std::string text;
    std::string sqlstate;
};

[[noreturn]] void throw_failure(MYSQL* mysql) {
    throw driver_failure{mysql_errno(mysql), mysql_error(mysql), mysql_sqlstate(mysql)};
}

[[noreturn]] void throw_failure(MYSQL_STMT* stmt) {
    throw driver_failure{mysql_stmt_errno(stmt), mysql_stmt_error(stmt), mysql_stmt_sqlstate(stmt)};
}

/// Signed integer columns (tokens, counts, flags) come out as their decimal text.
bool is_signed_integer(const MYSQL_FIELD& field) {
    if ((field.flags & UNSIGNED_FLAG) != 0)
        return false;
    switch (field.type) {
    case MYSQL_TYPE_TINY:
    case MYSQL_TYPE_SHORT:
    case MYSQL_TYPE_INT24:
    case MYSQL_TYPE_LONG:
    case MYSQL_TYPE_LONGLONG:
        return true;
    default:
        return false;
    }
}

class mysql_session final : public session {
public:
    mysql_session(const connection_config& config, const sql_catalog& catalog)
        : session(catalog), m_config(config) {
        if (!library_ready())
            throw error(errc::backend, "mysql: the MariaDB client library failed to initialise",
                        backend_name);
        m_mysql.reset(mysql_init(nullptr));
        if (!m_mysql)
            throw std::bad_alloc();
        MYSQL* const mysql = m_mysql.get();
        // Lock names and owners are VARBINARY; utf8mb4 only shapes host/strategy and messages.
        mysql_optionsv(mysql, MYSQL_SET_CHARSET_NAME, "utf8mb4");
        // The connect timeout also bounds the wait for the server's greeting. The client counts
        // whole seconds: connect_timeout (or what is left to the thread's connect_deadline,
        // connect_budget) is rounded up, to at least 1 s.
        const auto connect_seconds = static_cast<unsigned int>(
            std::max(ceil_seconds(connect_budget(config.connect_timeout)), 1));
        mysql_optionsv(mysql, MYSQL_OPT_CONNECT_TIMEOUT, &connect_seconds);
        if (const int io = ceil_seconds(config.io_timeout); io > 0) {
            const auto io_seconds = static_cast<unsigned int>(io);
            mysql_optionsv(mysql, MYSQL_OPT_READ_TIMEOUT, &io_seconds);
            mysql_optionsv(mysql, MYSQL_OPT_WRITE_TIMEOUT, &io_seconds);
        }
        // A silent reconnect would drop session state (transaction, GET_LOCK, prepared
        // statements) behind our back: a broken connection must surface as errc::connection.
        const my_bool reconnect = 0;
        mysql_optionsv(mysql, MYSQL_OPT_RECONNECT, &reconnect);
        const unsigned int protocol = MYSQL_PROTOCOL_TCP;
        mysql_optionsv(mysql, MYSQL_OPT_PROTOCOL, &protocol);
        mysql_optionsv(mysql, MARIADB_OPT_IO_WAIT, &wait_for_socket);
        if (config.purpose == session_purpose::lock_holder && !config.client_identity.empty()) {
            // Operators see which process holds a FOR UPDATE lock in
            // performance_schema.session_connect_attrs (when performance_schema is on).
            mysql_optionsv(mysql, MYSQL_OPT_CONNECT_ATTR_ADD, "sqlock_process",
                           config.client_identity.c_str());
        }
        try {
            const std::string host = server_host(config);
            bool connected = false;
            {
                // A cancel abandons it ("timed out"), unless its caller must finish it.
                const interruptible_waits cancellable(!finish_connects::current());
                connected = mysql_real_connect(
                                mysql, host.c_str(), config.user.c_str(), config.password.c_str(),
                                config.database.empty() ? nullptr : config.database.c_str(),
                                static_cast<unsigned int>(config.port > 0 ? config.port : 3306),
                                nullptr, CLIENT_MULTI_RESULTS) != nullptr;
            } // statements are read to their end
            if (!connected)
                throw_failure(mysql);
            m_connected = true;
            // The client library opens its socket without close-on-exec, so a command started
            // by the process (`sqlock run -- CMD`) would inherit the connection, and keep a
            // select_for_update lock alive on the server after this process died.
            const my_socket fd = mysql_get_socket(mysql);
            if (fd >= 0) {
                const int flags = fcntl(fd, F_GETFD);
                if (flags >= 0 && (flags & FD_CLOEXEC) == 0)
                    fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
            }
            check_server_version();
            run_text(session_setup, nullptr);
            // Lock sessions run with autocommit off: the locking SELECT itself opens the
            // transaction, so an acquire needs no START TRANSACTION round trip.
            if (config.purpose == session_purpose::lock_holder) {
                run_text("SET SESSION autocommit = 0, tx_isolation = 'READ-COMMITTED'", nullptr);
                m_autocommit_off = true;
                // Operators (and tests) KILL a stuck holder by this id. The socket lets usable()
                // see a server that hung up (KILL, crash) without a round trip: a holder must
                // learn that its lock ended before it acts on it again.
                result id;
                run_text("SELECT CONNECTION_ID()", &id);
                if (!id.rows.empty() && !id.rows.front().empty() && id.rows.front().front())
                    m_connection_id = std::strtoll(id.rows.front().front()->c_str(), nullptr, 10);
                m_socket = fd;
            }
        } catch (const driver_failure& e) {
            fail(e, "connect");
        }
    }

protected:
    result do_execute(statement id, std::span<const param> params) override {
        check_usable();
        const busy_guard busy(m_busy, m_statements_started);
        if (m_autocommit_off)
            m_in_transaction = true;
        try {
            auto& p = prepared(id);
            MYSQL_STMT* const stmt = p.stmt.get();
            for (std::size_t i = 0; i < p.order.size(); ++i) {
                const auto number = static_cast<std::size_t>(p.order[i]);
                if (number >= params.size())
                    throw std::logic_error("statement " + std::string(name_of(id)) + " uses $" +
                                           std::to_string(number + 1) + " but got " +
                                           std::to_string(params.size()) + " parameters");
                const param& value = params[number];
                MYSQL_BIND& bind = p.params[i];
                bind = MYSQL_BIND{};
                if (const auto* n = std::get_if<std::int64_t>(&value)) {
                    p.integers[i] = *n;
                    bind.buffer_type = MYSQL_TYPE_LONGLONG;
                    bind.buffer = &p.integers[i];
                } else if (const auto* s = std::get_if<std::string_view>(&value)) {
                    // Binary-safe: the length is given, never looked for.
                    static char empty[1] = {};
                    p.lengths[i] = static_cast<unsigned long>(s->size());
                    bind.buffer_type = MYSQL_TYPE_STRING;
                    bind.buffer = s->empty() ? empty : const_cast<char*>(s->data());
                    bind.buffer_length = p.lengths[i];
                    bind.length = &p.lengths[i];
                } else {
                    bind.buffer_type = MYSQL_TYPE_NULL;
                }
            }
            if (!p.params.empty() && mysql_stmt_bind_param(stmt, p.params.data()))
                throw_failure(stmt);
            if (mysql_stmt_execute(stmt))
                throw_failure(stmt);
            // Whether rows come back was decided once, at prepare time: rows nobody reads
            // would make the next command fail "out of sync".
            result out;
            if (p.returns_rows) {
                read_rows(p, out);
            } else {
                if (mysql_stmt_field_count(stmt) > 0) {
                    // Rows came back after all and sit unread on the wire.
                    m_usable = false;
                    throw std::logic_error("statement " + std::string(name_of(id)) +
                                           " returned rows where none were expected");
                }
                out.affected_rows = static_cast<std::uint64_t>(mysql_stmt_affected_rows(stmt));
            }
            return out;
        } catch (const driver_failure& e) {
            fail(e, name_of(id));
        }
    }

public:
    void execute_script(std::string_view sql) override {
        check_usable();
        for (const auto& text : split_script(sql))
            run_plain(text, "script");
    }

    void begin() override {
        run_plain("START TRANSACTION", "begin");
        m_in_transaction = true;
    }
    void commit() override {
        m_in_transaction = false;
        run_plain("COMMIT", "commit");
    }
    bool in_transaction() const noexcept override { return m_in_transaction; }
    void rollback() noexcept override {
        if (!m_usable || !m_in_transaction)
            return;
        m_in_transaction = false;
        try {
            run_plain("ROLLBACK", "rollback");
        } catch (...) {
            // The transaction may still be open (and holding row locks): never reuse this
            // connection.
            m_usable = false;
        }
    }

    bool usable() const noexcept override { return m_usable && !hung_up_while_idle(); }
    std::int64_t server_session_id() const noexcept override { return m_connection_id; }

    /// InnoDB shows the holder of an uncontended row lock nowhere in SQL (INNODB_LOCKS lists
    /// only contended locks; MariaDB has no performance_schema.data_locks). Its lock monitor
    /// does, in SHOW ENGINE INNODB STATUS, when innodb_status_output_locks is ON (needs the
    /// PROCESS privilege). Reading it takes no lock.
    std::optional<std::vector<row_lock_report>> row_locks(std::string_view table) override {
        std::string text;
        try {
            const auto on = decode_first<single_value_row>(
                query("SELECT @@GLOBAL.innodb_status_output_locks AS value"));
            if (!on || on->value.value_or("0") != "1")
                return std::nullopt;
            // A report of another shape fails to decode: caught below, as not shown.
            auto status = decode_first<engine_status_row>(query("SHOW ENGINE INNODB STATUS"));
            if (!status)
                return std::nullopt;
            text = std::move(status->status);
        } catch (const error&) {
            return std::nullopt; // no PROCESS privilege
        }
        auto reports = parse_lock_monitor(text, table);
        add_client_pids(reports);
        return reports;
    }

    /// The client process of each session, from the connection attribute _pid that MariaDB's
    /// connector sends (performance_schema, when it is on); left 0 where unknown.
    void add_client_pids(std::vector<row_lock_report>& reports) {
        if (reports.empty())
            return;
        std::map<std::int64_t, std::int64_t> pid_of;
        try {
            const auto attrs = query("SELECT PROCESSLIST_ID, ATTR_VALUE FROM "
                                     "performance_schema.session_connect_attrs "
                                     "WHERE ATTR_NAME = '_pid'");
            for (const auto& r : decode_rows<connect_attribute_row>(attrs))
                pid_of[r.session_id] = r.value;
        } catch (const error&) {
            return; // performance_schema off or not readable: the pids stay unknown
        }
        for (auto& r : reports)
            if (const auto found = pid_of.find(r.session_id); found != pid_of.end())
                r.client_pid = found->second;
    }

    /// The record locks on `table` in the InnoDB monitor's TRANSACTIONS section.
    static std::vector<row_lock_report> parse_lock_monitor(std::string_view text,
                                                           std::string_view table) {
        std::vector<row_lock_report> out;
        std::int64_t thread = 0;
        std::int64_t waited_ms = 0;
        bool in_wait_section = false; // the waiting lock, shown again in the lock list
        bool ours = false;            // the current RECORD LOCKS header is on `table`
        bool waiting = false;
        bool record = false; // the next " 0:" field line is a locked record's key
        const std::string of_table = "`.`" + std::string(table) + "` trx id ";
        std::size_t pos = 0;
        while (pos < text.size()) {
            auto end = text.find('\n', pos);
            if (end == std::string_view::npos)
                end = text.size();
            const auto line = text.substr(pos, end - pos);
            pos = end + 1;
            if (line.starts_with("---TRANSACTION ")) {
                thread = 0;
                waited_ms = 0;
                ours = false;
            } else if (const auto t = line.find(" thread id ");
                       t != std::string_view::npos &&
                       (line.starts_with("MariaDB") || line.starts_with("MySQL"))) {
                thread = std::strtoll(std::string(line.substr(t + 11)).c_str(), nullptr, 10);
            } else if (line.starts_with("------- TRX HAS BEEN WAITING ")) {
                in_wait_section = true;
                const auto n = std::strtoll(std::string(line.substr(29)).c_str(), nullptr, 10);
                waited_ms = line.find(" us ") != std::string_view::npos ? n / 1000 : n * 1000;
            } else if (line.starts_with("------------------")) {
                in_wait_section = false;
            } else if (line.starts_with("RECORD LOCKS ")) {
                ours = !in_wait_section && line.find(of_table) != std::string_view::npos &&
                       line.find(" gap before rec") == std::string_view::npos &&
                       line.find(" insert intention") == std::string_view::npos;
                waiting = line.ends_with(" waiting");
            } else if (line.starts_with("TABLE LOCK ") || line.starts_with("---")) {
                ours = false;
            } else if (line.starts_with("Record lock, heap no ")) {
                record = ours && !line.starts_with("Record lock, heap no 1 "); // not supremum
            } else if (record && line.starts_with(" 0: len ")) {
                record = false;
                row_lock_report r;
                r.key_length = std::strtoull(std::string(line.substr(8)).c_str(), nullptr, 10);
                const auto hex = line.find("; hex ");
                if (hex == std::string_view::npos)
                    continue;
                for (auto i = hex + 6; i + 1 < line.size() && line[i] != ';' && line[i] != ' ';
                     i += 2)
                    r.key += static_cast<char>(
                        std::strtol(std::string(line.substr(i, 2)).c_str(), nullptr, 16));
                if (const auto total = line.find("(total "); total != std::string_view::npos)
                    r.key_length =
                        std::strtoull(std::string(line.substr(total + 7)).c_str(), nullptr, 10);
                r.waiting = waiting;
                r.session_id = thread;
                r.waited_ms = waiting ? waited_ms : 0;
                out.push_back(std::move(r));
            }
        }
        return out;
    }

private:
    struct prepared_statement {
        std::unique_ptr<MYSQL_STMT, statement_closer> stmt;
        std::vector<int> order; ///< parameter index bound to each "?"
        bool returns_rows = false;
        // Parameter binds, one per "?", and the values they point to.
        std::vector<MYSQL_BIND> params;
        std::vector<std::int64_t> integers;
        std::vector<unsigned long> lengths;
        // Result binds, one per column, and their buffers (reused from one execution to the
        // next; a longer value is fetched again with mysql_stmt_fetch_column).
        std::vector<MYSQL_BIND> columns;
        std::vector<std::string> buffers;
        std::vector<std::int64_t> column_integers;
        std::vector<unsigned long> column_lengths;
        std::vector<my_bool> column_nulls;
        std::vector<my_bool> column_errors;
        std::vector<bool> signed_integer;
    };

    /// Column buffer size: lock names, owners and numbers fit; longer values are fetched again.
    static constexpr std::size_t column_buffer_size = 256;

    void check_server_version() {
        // The version from the server greeting costs no round trip; a proxy may announce its
        // own version there, so anything that does not pass is confirmed with the server.
        const char* greeting = mysql_get_server_info(m_mysql.get());
        std::string version = greeting ? greeting : "";
        if (supported_version(version))
            return;
        result out;
        run_text("SELECT VERSION()", &out);
        version = !out.rows.empty() && !out.rows.front().empty() && out.rows.front().front()
                      ? *out.rows.front().front()
                      : std::string();
        if (!supported_version(version))
            throw error(errc::unsupported,
                        "sqlock needs MariaDB 10.5 or later (server is " + version + " at " +
                            m_config.redacted_url + ")",
                        backend_name);
    }

    prepared_statement& prepared(statement id) {
        auto& slot = m_prepared[static_cast<std::size_t>(id)];
        if (!slot.stmt) {
            auto rewritten = rewrite_placeholders(m_catalog[id], placeholder_style::question);
            std::unique_ptr<MYSQL_STMT, statement_closer> stmt(mysql_stmt_init(m_mysql.get()));
            if (!stmt)
                throw_failure(m_mysql.get());
            if (mysql_stmt_prepare(stmt.get(), rewritten.text.data(),
                                   static_cast<unsigned long>(rewritten.text.size())))
                throw_failure(stmt.get());
            const bool returns_rows =
                mysql_stmt_field_count(stmt.get()) > 0 || has_returning_clause(rewritten.text);
            const std::size_t placeholders = rewritten.order.size();
            slot = prepared_statement{};
            slot.stmt = std::move(stmt);
            slot.order = std::move(rewritten.order);
            slot.returns_rows = returns_rows;
            slot.params.resize(placeholders);
            slot.integers.resize(placeholders);
            slot.lengths.resize(placeholders);
        }
        return slot;
    }

    /// Binds the result columns of `p`'s executed statement: signed integers as numbers (to
    /// be written as decimal text), everything else as bytes.
    static void bind_columns(prepared_statement& p, unsigned int count) {
        MYSQL_STMT* const stmt = p.stmt.get();
        const std::unique_ptr<MYSQL_RES, result_freer> meta(mysql_stmt_result_metadata(stmt));
        if (!meta)
            throw_failure(stmt);
        const MYSQL_FIELD* fields = mysql_fetch_fields(meta.get());
        p.columns.assign(count, MYSQL_BIND{});
        p.buffers.resize(count);
        p.column_integers.assign(count, 0);
        p.column_lengths.assign(count, 0);
        p.column_nulls.assign(count, 0);
        p.column_errors.assign(count, 0);
        p.signed_integer.assign(count, false);
        for (unsigned int c = 0; c < count; ++c) {
            MYSQL_BIND& bind = p.columns[c];
            bind.is_null = &p.column_nulls[c];
            bind.length = &p.column_lengths[c];
            bind.error = &p.column_errors[c];
            p.signed_integer[c] = is_signed_integer(fields[c]);
            if (p.signed_integer[c]) {
                bind.buffer_type = MYSQL_TYPE_LONGLONG;
                bind.buffer = &p.column_integers[c];
                bind.is_unsigned = 0;
            } else {
                p.buffers[c].resize(column_buffer_size);
                bind.buffer_type = MYSQL_TYPE_STRING;
                bind.buffer = p.buffers[c].data();
                bind.buffer_length = static_cast<unsigned long>(p.buffers[c].size());
            }
        }
        if (mysql_stmt_bind_result(stmt, p.columns.data()))
            throw_failure(stmt);
    }

    static void read_rows(prepared_statement& p, result& out) {
        MYSQL_STMT* const stmt = p.stmt.get();
        const unsigned int count = mysql_stmt_field_count(stmt);
        if (count == 0)
            return; // no result set after all
        // Buffered, as before: the whole result is read off the wire before the first row.
        if (mysql_stmt_store_result(stmt))
            throw_failure(stmt);
        struct free_result {
            MYSQL_STMT* stmt;
            ~free_result() { mysql_stmt_free_result(stmt); }
        } const release{stmt};
        bind_columns(p, count);
        for (;;) {
            const int status = mysql_stmt_fetch(stmt);
            if (status == MYSQL_NO_DATA)
                break;
            if (status != 0 && status != MYSQL_DATA_TRUNCATED)
                throw_failure(stmt);
            row r;
            r.reserve(count);
            for (unsigned int c = 0; c < count; ++c) {
                if (p.column_nulls[c]) {
                    r.emplace_back(std::nullopt);
                } else if (p.signed_integer[c]) {
                    r.emplace_back(std::to_string(p.column_integers[c]));
                } else if (p.column_lengths[c] <= p.buffers[c].size()) {
                    r.emplace_back(std::string(p.buffers[c].data(), p.column_lengths[c]));
                } else {
                    // Longer than the buffer: fetch the whole value.
                    std::string value(p.column_lengths[c], '\0');
                    unsigned long length = 0;
                    MYSQL_BIND whole{};
                    whole.buffer_type = MYSQL_TYPE_STRING;
                    whole.buffer = value.data();
                    whole.buffer_length = static_cast<unsigned long>(value.size());
                    whole.length = &length;
                    if (mysql_stmt_fetch_column(stmt, &whole, c, 0))
                        throw_failure(stmt);
                    value.resize(std::min<std::size_t>(length, value.size()));
                    r.emplace_back(std::move(value));
                }
            }
            out.rows.push_back(std::move(r));
        }
    }

    /// The rows of a text-protocol result, as read_rows() gives those of a prepared statement.
    static void read_text_rows(MYSQL_RES* res, result& out) {
        const unsigned int count = mysql_num_fields(res);
        const MYSQL_FIELD* fields = mysql_fetch_fields(res);
        std::vector<bool> signed_integer(count, false);
        for (unsigned int c = 0; c < count; ++c)
            signed_integer[c] = is_signed_integer(fields[c]);
        while (MYSQL_ROW values = mysql_fetch_row(res)) {
            const unsigned long* lengths = mysql_fetch_lengths(res);
            row r;
            r.reserve(count);
            for (unsigned int c = 0; c < count; ++c) {
                if (!values[c])
                    r.emplace_back(std::nullopt);
                else if (signed_integer[c])
                    r.emplace_back(std::to_string(std::strtoll(values[c], nullptr, 10)));
                else
                    r.emplace_back(std::string(values[c], lengths[c]));
            }
            out.rows.push_back(std::move(r));
        }
    }

    /// Runs `sql` over the text protocol and reads every result it gives (an unread one makes
    /// the next command fail "out of sync"). The first result's rows, or its affected row
    /// count, go to `out` when given.
    void run_text(std::string_view sql, result* out) {
        MYSQL* const mysql = m_mysql.get();
        if (mysql_real_query(mysql, sql.data(), static_cast<unsigned long>(sql.size())))
            throw_failure(mysql);
        for (bool first = true;; first = false) {
            const std::unique_ptr<MYSQL_RES, result_freer> res(mysql_store_result(mysql));
            if (res) {
                if (first && out)
                    read_text_rows(res.get(), *out);
            } else if (mysql_field_count(mysql) != 0) {
                throw_failure(mysql); // rows announced, but reading them failed
            } else if (first && out) {
                out->affected_rows = static_cast<std::uint64_t>(mysql_affected_rows(mysql));
            }
            const int next = mysql_next_result(mysql);
            if (next > 0)
                throw_failure(mysql);
            if (next < 0)
                break;
        }
    }

public:
    result query(std::string_view sql) override {
        check_usable();
        const busy_guard busy(m_busy, m_statements_started);
        if (m_autocommit_off)
            m_in_transaction = true;
        result out;
        try {
            run_text(sql, &out);
        } catch (const driver_failure& e) {
            fail(e, "query");
        }
        return out;
    }

private:
    void run_plain(const std::string& sql, std::string_view what) {
        check_usable();
        const busy_guard busy(m_busy, m_statements_started);
        try {
            run_text(sql, nullptr);
        } catch (const driver_failure& e) {
            fail(e, what);
        }
    }

    /// Marks the session as talking to the server, so that a concurrent usable() (owns_lock()
    /// on another thread) does not mistake a reply for a hang-up.
    struct busy_guard {
        busy_guard(std::atomic<int>& count, std::atomic<std::uint64_t>& started) : m_count(count) {
            ++started;
            ++m_count;
        }
        ~busy_guard() { --m_count; }
        busy_guard(const busy_guard&) = delete;
        busy_guard& operator=(const busy_guard&) = delete;
        std::atomic<int>& m_count;
    };

    /// The server never speaks to an idle client, except to say goodbye (KILL, shutdown):
    /// anything to read on an idle lock session, or EOF, means the session (and its
    /// transaction's locks) is gone. One non-blocking peek; only where the socket is known.
    bool hung_up_while_idle() const noexcept {
        const auto started = m_statements_started.load();
        if (m_socket < 0 || m_busy.load() != 0)
            return false;
        const int saved_errno = errno;
        char first = 0;
        const auto n = ::recv(m_socket, &first, 1, MSG_PEEK | MSG_DONTWAIT);
        const bool hung_up = n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        errno = saved_errno;
        // A statement that started meanwhile may have put its reply there: no verdict.
        return hung_up && m_statements_started.load() == started;
    }

    void check_usable() const {
        if (!m_usable)
            throw error(errc::connection,
                        "mysql: the connection to " + m_config.redacted_url + " was lost",
                        backend_name);
    }

    /// Whether the connection was never made (mysql_real_connect failed): errors then are
    /// connection errors, whatever their number.
    bool connection_closed() const noexcept { return !m_connected; }

    [[noreturn]] void fail(const driver_failure& e, std::string_view what) {
        const int code = static_cast<int>(e.code);
        errc category = classify_mysql_errno(code);
        if (category != errc::connection && connection_closed())
            category = errc::connection;
        // Any other client library error (2xxx, e.g. 2014 "Commands out of sync") leaves the
        // protocol state in doubt: never hand this connection out again.
        if (category == errc::connection || (code >= 2000 && code < 3000))
            m_usable = false;
        std::string message = "mysql: ";
        if (what == "connect")
            message += "cannot connect to " + m_config.redacted_url + ": ";
        // The driver's text never quotes the password or a connection string today (it names
        // the user, host and database): should it ever, the password field is masked.
        message += redact_passwords(e.text);
        message += " (error " + std::to_string(code);
        if (what != "connect")
            message += ", " + std::string(what) + ", " + m_config.redacted_url;
        message += ")";
        error failure(category, message, backend_name, code, e.sqlstate);
        if (is_server_full(failure))
            throw error(category, message + std::string(mysql_full_hint), backend_name, code,
                        e.sqlstate);
        throw failure;
    }

    connection_config m_config;
    // Declared before the statements: they must be closed before the connection.
    std::unique_ptr<MYSQL, connection_closer> m_mysql;
    std::array<prepared_statement, statement_count> m_prepared;
    bool m_connected = false; ///< mysql_real_connect succeeded
    bool m_usable = true;
    /// A transaction may be open: after begin(), and after any statement on a lock-holder
    /// session (autocommit is off there). Lets rollback() skip a needless round trip.
    bool m_in_transaction = false;
    bool m_autocommit_off = false;
    std::int64_t m_connection_id = 0; ///< known for lock-holder sessions
    int m_socket = -1;                ///< lock-holder sessions: the connection's socket
    std::atomic<int> m_busy{0};       ///< statements in progress (see busy_guard)
    std::atomic<std::uint64_t> m_statements_started{0}; ///< ever (see hung_up_while_idle)
};

} // namespace

std::unique_ptr<session> open_mysql_session(const connection_config& config,
                                            const sql_catalog& catalog) {
    return std::make_unique<mysql_session>(config, catalog);
}

} // namespace sqlock::detail

SQLOCK_BACKEND_ENTRY_POINT(mysql, open_mysql_session)
