// MySQL/MariaDB backend over Connector/C++ 1.1: one connection per session, server-side
// prepared statements cached per statement id, strict SQL mode, UTC session time zone.
#include "backends/backend.hpp"
#include "backends/module.hpp"
#include "base/rows.hpp"
#include "base/sql_text.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cppconn/connection.h>
#include <cppconn/datatype.h>
#include <cppconn/exception.h>
#include <cppconn/metadata.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/resultset_metadata.h>
#include <cppconn/statement.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <limits>
#include <map>
#include <memory>
#include <mysql_connection.h>
#include <mysql_driver.h>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace sqlock::detail {

namespace {

constexpr const char* backend_name = "mysql";

// A fixed mode instead of adding to the server's: a server configured with ANSI_QUOTES,
// PIPES_AS_CONCAT or ORACLE would parse our SQL differently. STRICT_ALL_TABLES makes an
// over-long name an error instead of a silent truncation into another lock's name.
constexpr const char* session_setup =
    "SET SESSION sql_mode = 'STRICT_ALL_TABLES,STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,"
    "NO_ENGINE_SUBSTITUTION', time_zone = '+00:00', autocommit = 1";

/// Whole seconds, rounded up (Connector/C++ timeouts are in seconds).
int ceil_seconds(std::chrono::milliseconds timeout) {
    const std::int64_t seconds = (std::max<std::int64_t>(timeout.count(), 0) + 999) / 1000;
    return static_cast<int>(std::min<std::int64_t>(seconds, std::numeric_limits<int>::max()));
}

/// "tcp://host:port". Stays TCP for any host but "localhost", which libmariadb maps to the
/// Unix socket: that is the user's explicit choice.
std::string host_uri(const connection_config& config) {
    std::string host = config.host.empty() ? std::string("127.0.0.1") : config.host;
    if (host.find(':') != std::string::npos && host.front() != '[')
        host = '[' + host + ']';
    return "tcp://" + host + ":" + std::to_string(config.port > 0 ? config.port : 3306);
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

sql::mysql::MySQL_Driver* driver() {
    // get_mysql_driver_instance() fills an unlocked global map on first use: call it once,
    // under the thread-safe static initialisation. Library-owned, never deleted.
    static sql::mysql::MySQL_Driver* const instance = sql::mysql::get_mysql_driver_instance();
    return instance;
}

/// This process's sockets: descriptor by socket inode, named by their /proc/self/fd links
/// (no call on a descriptor: other threads open and close descriptors meanwhile).
std::map<unsigned long, int> socket_descriptors() {
    std::map<unsigned long, int> sockets;
    DIR* dir = opendir("/proc/self/fd");
    if (!dir)
        return sockets;
    while (const dirent* entry = readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || fd == dirfd(dir))
            continue;
        char link[64];
        const std::string path = std::string("/proc/self/fd/") + entry->d_name;
        const ssize_t size = readlink(path.c_str(), link, sizeof link - 1);
        if (size <= 0)
            continue;
        link[size] = '\0';
        unsigned long inode = 0;
        if (std::sscanf(link, "socket:[%lu]", &inode) == 1)
            sockets[inode] = static_cast<int>(fd);
    }
    closedir(dir);
    return sockets;
}

/// Calls `visit(fd, local_port, remote_port)` for each TCP socket of this process until it
/// returns true. Connector/C++ 1.1 does not expose its socket, so sessions find theirs here:
/// the process's socket inodes first, then their ports in /proc/self/net/tcp and tcp6 (which
/// list the whole network namespace: reading stops once every socket of ours was seen).
template <typename Visit>
void for_each_tcp_socket(Visit&& visit) {
    const auto sockets = socket_descriptors();
    std::size_t seen = 0;
    for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
        if (seen == sockets.size())
            return;
        std::FILE* file = std::fopen(table, "re");
        if (!file)
            continue;
        char line[512];
        bool header = true;
        bool done = false;
        while (!done && seen < sockets.size() && std::fgets(line, sizeof line, file)) {
            if (std::exchange(header, false))
                continue;
            char local[64];
            char remote[64];
            unsigned long inode = 0;
            // sl local:PORT rem:PORT st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
            if (std::sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %*s %*s %lu", local, remote,
                            &inode) != 3)
                continue;
            const auto socket = sockets.find(inode);
            const char* local_port = std::strrchr(local, ':');
            const char* remote_port = std::strrchr(remote, ':');
            if (socket == sockets.end() || !local_port || !remote_port)
                continue;
            ++seen;
            done = visit(socket->second, static_cast<int>(std::strtol(local_port + 1, nullptr, 16)),
                         static_cast<int>(std::strtol(remote_port + 1, nullptr, 16)));
        }
        std::fclose(file);
        if (done)
            return;
    }
}

/// This process's TCP socket whose local port is `local_port` and remote port `server_port`,
/// or -1 (the server tells us our port).
int find_tcp_socket(int local_port, int server_port) {
    int found = -1;
    for_each_tcp_socket([&](int fd, int local, int remote) {
        if (local != local_port || remote != server_port)
            return false;
        found = fd;
        return true;
    });
    return found;
}

/// Marks this process's sockets to `server_port` close-on-exec. The client library opens them
/// without it, so a command started by the process (`sqlock run -- CMD`) would inherit the
/// connection, and keep a select_for_update lock alive on the server after this process died.
void close_server_sockets_on_exec(int server_port) {
    for_each_tcp_socket([&](int fd, int, int remote) {
        if (remote == server_port) {
            const int flags = fcntl(fd, F_GETFD);
            if (flags >= 0 && (flags & FD_CLOEXEC) == 0)
                fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
        }
        return false;
    });
}

class mysql_session final : public session {
public:
    mysql_session(const connection_config& config, const sql_catalog& catalog)
        : session(catalog), m_config(config) {
        sql::ConnectOptionsMap options;
        options["hostName"] = sql::SQLString(host_uri(config));
        options["userName"] = sql::SQLString(config.user);
        options["password"] = sql::SQLString(config.password);
        if (!config.database.empty())
            options["schema"] = sql::SQLString(config.database);
        // Lock names and owners are VARBINARY; utf8mb4 only shapes host/strategy and messages.
        options["OPT_CHARSET_NAME"] = sql::SQLString("utf8mb4");
        // The connect timeout also bounds the wait for the server's greeting. The client counts
        // whole seconds: connect_timeout (or what is left to the thread's connect_deadline,
        // connect_budget) is rounded up, to at least 1 s.
        options["OPT_CONNECT_TIMEOUT"] =
            std::max(ceil_seconds(connect_budget(config.connect_timeout)), 1);
        if (const int io = ceil_seconds(config.io_timeout); io > 0) {
            options["OPT_READ_TIMEOUT"] = io;
            options["OPT_WRITE_TIMEOUT"] = io;
        }
        // A silent reconnect would drop session state (transaction, GET_LOCK, prepared
        // statements) behind our back: a broken connection must surface as errc::connection.
        options["OPT_RECONNECT"] = false;
        if (config.purpose == session_purpose::lock_holder && !config.client_identity.empty()) {
            // Operators see which process holds a FOR UPDATE lock in
            // performance_schema.session_connect_attrs (when performance_schema is on).
            std::map<sql::SQLString, sql::SQLString> attributes;
            attributes["sqlock_process"] = sql::SQLString(config.client_identity);
            options["OPT_CONNECT_ATTR_ADD"] = attributes;
        }
        try {
            m_conn.reset(driver()->connect(options));
            close_server_sockets_on_exec(config.port > 0 ? config.port : 3306);
            check_server_version();
            m_plain.reset(m_conn->createStatement());
            m_plain->execute(session_setup);
            // Lock sessions run with autocommit off: the locking SELECT itself opens the
            // transaction, so an acquire needs no START TRANSACTION round trip.
            if (config.purpose == session_purpose::lock_holder) {
                m_plain->execute("SET SESSION autocommit = 0, "
                                 "tx_isolation = 'READ-COMMITTED'");
                m_autocommit_off = true;
                // Operators (and tests) KILL a stuck holder by this id. The client address
                // the server sees ("127.0.0.1:PORT") finds our socket, so that usable() can see
                // a server that hung up (KILL, crash) without a round trip: a holder must learn
                // that its lock ended before it acts on it again.
                std::unique_ptr<sql::ResultSet> rs(m_plain->executeQuery(
                    "SELECT CONNECTION_ID(), (SELECT HOST FROM information_schema.PROCESSLIST "
                    "WHERE ID = CONNECTION_ID())"));
                if (rs->next()) {
                    m_connection_id = rs->getInt64(1);
                    const std::string client = rs->isNull(2) ? "" : rs->getString(2).asStdString();
                    const auto colon = client.rfind(':');
                    if (colon != std::string::npos)
                        m_socket = find_tcp_socket(std::atoi(client.c_str() + colon + 1),
                                                   config.port > 0 ? config.port : 3306);
                }
            }
        } catch (const sql::SQLException& e) {
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
            for (std::size_t i = 0; i < p.order.size(); ++i) {
                const auto index = static_cast<unsigned int>(i + 1);
                const auto number = static_cast<std::size_t>(p.order[i]);
                if (number >= params.size())
                    throw std::logic_error("statement " + std::string(name_of(id)) + " uses $" +
                                           std::to_string(number + 1) + " but got " +
                                           std::to_string(params.size()) + " parameters");
                const param& value = params[number];
                if (const auto* n = std::get_if<std::int64_t>(&value)) {
                    p.stmt->setInt64(index, *n);
                } else if (const auto* s = std::get_if<std::string_view>(&value)) {
                    p.stmt->setString(index, sql::SQLString(s->data(), s->size()));
                } else {
                    p.stmt->setNull(index, sql::DataType::VARCHAR);
                }
            }
            // PreparedStatement::getUpdateCount() is not implemented in 1.1 (it throws), and
            // executeUpdate() on a statement with rows leaves them unread ("Commands out of
            // sync"): so whether rows come back is decided once, at prepare time.
            result out;
            if (p.returns_rows) {
                read_rows(std::unique_ptr<sql::ResultSet>(p.stmt->executeQuery()), out);
            } else {
                const int affected = p.stmt->executeUpdate();
                if (affected < 0) {
                    // Rows came back after all and sit unread on the wire.
                    m_usable = false;
                    throw std::logic_error("statement " + std::string(name_of(id)) +
                                           " returned rows where none were expected");
                }
                out.affected_rows = static_cast<std::uint64_t>(affected);
            }
            return out;
        } catch (const sql::SQLException& e) {
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
        std::unique_ptr<sql::PreparedStatement> stmt;
        std::vector<int> order; ///< parameter index bound to each "?"
        bool returns_rows = false;
    };

    void check_server_version() {
        // The version from the server greeting costs no round trip; a proxy may announce its
        // own version there, so anything that does not pass is confirmed with the server.
        std::string version = m_conn->getMetaData()->getDatabaseProductVersion().asStdString();
        if (supported_version(version))
            return;
        std::unique_ptr<sql::Statement> stmt(m_conn->createStatement());
        std::unique_ptr<sql::ResultSet> rs(stmt->executeQuery("SELECT VERSION()"));
        version = rs->next() ? rs->getString(1).asStdString() : std::string();
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
            std::unique_ptr<sql::PreparedStatement> stmt(m_conn->prepareStatement(rewritten.text));
            const bool returns_rows =
                stmt->getMetaData()->getColumnCount() > 0 || has_returning_clause(rewritten.text);
            slot = {std::move(stmt), std::move(rewritten.order), returns_rows};
        }
        return slot;
    }

    static void read_rows(std::unique_ptr<sql::ResultSet> rs, result& out) {
        auto* meta = rs->getMetaData();
        const auto columns = meta->getColumnCount();
        // Signed integers (tokens, counts, flags) are read as numbers: getString on them
        // formats through snprintf, a measurable part of a lock's client CPU.
        std::vector<bool> signed_integer(columns + 1, false);
        for (unsigned int c = 1; c <= columns; ++c) {
            const int type = meta->getColumnType(c);
            signed_integer[c] = meta->isSigned(c) &&
                                (type == sql::DataType::BIGINT || type == sql::DataType::INTEGER ||
                                 type == sql::DataType::MEDIUMINT ||
                                 type == sql::DataType::SMALLINT || type == sql::DataType::TINYINT);
        }
        while (rs->next()) {
            row r;
            r.reserve(columns);
            for (unsigned int c = 1; c <= columns; ++c) {
                if (rs->isNull(c))
                    r.emplace_back(std::nullopt);
                else if (signed_integer[c])
                    r.emplace_back(std::to_string(rs->getInt64(c)));
                else
                    r.emplace_back(rs->getString(c).asStdString());
            }
            out.rows.push_back(std::move(r));
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
            if (!m_plain)
                m_plain.reset(m_conn->createStatement());
            if (m_plain->execute(std::string(sql)))
                read_rows(std::unique_ptr<sql::ResultSet>(m_plain->getResultSet()), out);
            else
                out.affected_rows = static_cast<std::uint64_t>(m_plain->getUpdateCount());
            while (m_plain->getMoreResults())
                std::unique_ptr<sql::ResultSet> discard(m_plain->getResultSet());
        } catch (const sql::SQLException& e) {
            fail(e, "query");
        }
        return out;
    }

private:
    void run_plain(const std::string& sql, std::string_view what) {
        check_usable();
        const busy_guard busy(m_busy, m_statements_started);
        try {
            if (!m_plain)
                m_plain.reset(m_conn->createStatement());
            // Drain every result: an unread one makes the next command fail "out of sync".
            bool has_result = m_plain->execute(sql);
            for (;;) {
                if (has_result)
                    std::unique_ptr<sql::ResultSet> discard(m_plain->getResultSet());
                if (!m_plain->getMoreResults())
                    break;
                has_result = true;
            }
        } catch (const sql::SQLException& e) {
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

    /// The driver's own "closed" flag (a local check in 1.1, no ping).
    bool connection_closed() noexcept {
        if (!m_conn)
            return true;
        try {
            return m_conn->isClosed();
        } catch (...) {
            return true;
        }
    }

    [[noreturn]] void fail(const sql::SQLException& e, std::string_view what) {
        const int code = e.getErrorCode();
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
        message += redact_passwords(e.what());
        message += " (error " + std::to_string(code);
        if (what != "connect")
            message += ", " + std::string(what) + ", " + m_config.redacted_url;
        message += ")";
        error failure(category, message, backend_name, code, e.getSQLState());
        if (is_server_full(failure))
            throw error(category, message + std::string(mysql_full_hint), backend_name, code,
                        e.getSQLState());
        throw failure;
    }

    connection_config m_config;
    // Declared before the statements: they must be closed before the connection.
    std::unique_ptr<sql::Connection> m_conn;
    std::unique_ptr<sql::Statement> m_plain;
    std::array<prepared_statement, statement_count> m_prepared;
    bool m_usable = true;
    /// A transaction may be open: after begin(), and after any statement on a lock-holder
    /// session (autocommit is off there). Lets rollback() skip a needless round trip.
    bool m_in_transaction = false;
    bool m_autocommit_off = false;
    std::int64_t m_connection_id = 0; ///< known for lock-holder sessions
    int m_socket = -1;                ///< lock-holder sessions over TCP: the connection's socket
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
