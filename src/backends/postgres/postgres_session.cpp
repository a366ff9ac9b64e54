// PostgreSQL backend: one libpqxx 6.4 connection per session.
//
// libpqxx 6.4 facts this file relies on:
//   - pqxx::work sends BEGIN when constructed; pqxx::nontransaction sends nothing, so every
//     statement runs through a short-lived nontransaction (one round trip, autocommit or inside
//     our own BEGIN ... COMMIT).
//   - Only one transaction object may exist per connection; none outlives a method call here.
//   - A broken connection is silently re-opened on next use unless reactivation is inhibited;
//     that would lose session settings and session-level advisory locks, so it is inhibited.
//   - Deadlock/serialization errors derive from transaction_rollback, not sql_error, and carry
//     no SQLSTATE; class 08 errors are thrown as broken_connection without one either.
#include "backends/backend.hpp"
#include "core/session.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <libpq-fe.h>
#include <memory>
#include <new>
#include <optional>
#include <pqxx/connection>
#include <pqxx/except>
#include <pqxx/nontransaction>
#include <pqxx/prepared_statement>
#include <pqxx/result>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <utility>
#include <variant>
#include <vector>

namespace sqlock::detail {

namespace {

const std::string backend_name = "postgresql";

/// Appends `key='value'` to a libpq conninfo string (inside quotes \ and ' are escaped).
void append_conninfo(std::string& out, std::string_view key, std::string_view value) {
    if (!out.empty())
        out += ' ';
    out.append(key);
    out += "='";
    for (const char c : value) {
        if (c == '\\' || c == '\'')
            out += '\\';
        out += c;
    }
    out += '\'';
}

std::string build_conninfo(const connection_config& config) {
    std::string info;
    if (!config.host.empty())
        append_conninfo(info, "host", config.host);
    if (config.port > 0)
        append_conninfo(info, "port", std::to_string(config.port));
    if (!config.user.empty())
        append_conninfo(info, "user", config.user);
    if (!config.password.empty())
        append_conninfo(info, "password", config.password);
    append_conninfo(info, "dbname", config.database);
    // libpq counts whole seconds and treats 1 as 2.
    const auto timeout_ms = config.connect_timeout.count();
    const long long timeout_s = std::max<long long>(2, (timeout_ms + 999) / 1000);
    append_conninfo(info, "connect_timeout", std::to_string(timeout_s));
    append_conninfo(info, "application_name", "sqlock");
    // Names and owners are UTF-8 text whatever the client's locale says.
    append_conninfo(info, "client_encoding", "UTF8");
    // Notice a dead peer within seconds, not the kernel's default two hours.
    append_conninfo(info, "keepalives", "1");
    append_conninfo(info, "keepalives_idle", "5");
    append_conninfo(info, "keepalives_interval", "2");
    append_conninfo(info, "keepalives_count", "3");
    // Unacknowledged writes (a vanished peer) fail after io_timeout instead of ~15 minutes.
    if (config.io_timeout.count() > 0) {
        const auto user_timeout_ms = std::min<long long>(config.io_timeout.count(), INT32_MAX);
        append_conninfo(info, "tcp_user_timeout", std::to_string(user_timeout_ms));
    }
    // URL options (sslmode, ...) come last so that they may override the defaults above.
    for (const auto& [key, value] : config.options)
        append_conninfo(info, key, value);
    return info;
}

/// Checks conninfo syntax and keywords locally, so that a typo in a URL option is an
/// invalid_argument rather than a connection failure. The message names the option only.
void validate_conninfo(const std::string& conninfo, const std::string& redacted_url) {
    char* errmsg = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &errmsg);
    if (parsed) {
        PQconninfoFree(parsed);
        return;
    }
    std::string why = errmsg ? errmsg : "out of memory";
    if (errmsg)
        PQfreemem(errmsg);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' '))
        why.pop_back();
    throw error(errc::invalid_argument,
                "postgresql: bad connection option in " + redacted_url + ": " + why, backend_name);
}

bool starts_with_any(std::string_view line, std::initializer_list<std::string_view> prefixes) {
    for (const auto p : prefixes)
        if (line.starts_with(p))
            return true;
    return false;
}

/// Server or libpq text as one line: the message plus DETAIL/HINT and libpq's continuation
/// lines, without the severity prefix, the LINE/caret echo of our SQL or the CONTEXT trace.
std::string clean_message(std::string_view text) {
    std::string out;
    bool first = true;
    while (!text.empty()) {
        const auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        if (first) {
            for (const auto severity : {"ERROR:", "FATAL:", "PANIC:"}) {
                if (line.starts_with(severity)) {
                    line.remove_prefix(std::string_view(severity).size());
                    break;
                }
            }
        } else {
            std::string_view trimmed = line;
            while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t'))
                trimmed.remove_prefix(1);
            if (trimmed.empty() || trimmed.front() == '^' ||
                starts_with_any(trimmed, {"LINE ", "CONTEXT:", "QUERY:", "STATEMENT:"}))
                continue;
        }
        // Collapse runs of whitespace (libpq pads with tabs and double spaces).
        for (const char c : line) {
            const bool space = c == ' ' || c == '\t' || c == '\r';
            if (space) {
                if (!out.empty() && out.back() != ' ')
                    out += ' ';
            } else {
                out += c;
            }
        }
        if (!out.empty() && out.back() != ' ')
            out += ' ';
        first = false;
    }
    while (!out.empty() && out.back() == ' ')
        out.pop_back();
    return out.empty() ? std::string("(no message)") : out;
}

/// Replaces the password if libpq ever echoed it (it does not today; this is a safety net).
std::string scrub(std::string message, const std::string& password) {
    if (password.size() < 4)
        return message; // too short to find without mangling the text
    for (auto pos = message.find(password); pos != std::string::npos;
         pos = message.find(password, pos + 3))
        message.replace(pos, password.size(), "***");
    return message;
}

class postgres_session final : public session {
public:
    postgres_session(const connection_config& config, const sql_catalog& catalog)
        : session(catalog), m_url(config.redacted_url) {
        const std::string conninfo = build_conninfo(config);
        validate_conninfo(conninfo, m_url);
        try {
            m_conn = std::make_unique<pqxx::connection>(conninfo);
        } catch (const std::bad_alloc&) {
            throw;
        } catch (const std::exception& e) {
            // libpq's text says what failed ("password authentication failed for user ...",
            // "Connection refused", "timeout expired") but not where: add the redacted URL.
            throw error(
                errc::connection,
                scrub("postgresql: cannot connect to " + m_url + ": " + clean_message(e.what()),
                      config.password),
                backend_name);
        }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        // Deprecated in 6.x but still effective: never reconnect behind our back.
        m_conn->inhibit_reactivation(true);
#pragma GCC diagnostic pop
        // One round trip for all session settings (statement_timeout is in ms, 0 = off).
        const auto statement_ms = std::clamp<long long>(config.io_timeout.count(), 0, INT32_MAX);
        run_simple("SET statement_timeout = " + std::to_string(statement_ms) +
                       "; SET TIME ZONE 'UTC'",
                   "session settings");
    }

    ~postgres_session() override {
        try {
            m_conn.reset(); // closing ends any open transaction server-side
        } catch (...) {
        }
    }

    postgres_session(const postgres_session&) = delete;
    postgres_session& operator=(const postgres_session&) = delete;

protected:
    result do_execute(statement id, std::span<const param> params) override {
        const auto index = static_cast<std::size_t>(id);
        if (index >= statement_count)
            throw std::logic_error("postgresql: bad statement id");
        require_usable();

        // Text values for libpq; a null pointer is SQL NULL.
        std::vector<std::string> storage;
        storage.reserve(params.size());
        std::vector<const char*> values(params.size(), nullptr);
        for (std::size_t i = 0; i < params.size(); ++i) {
            if (const auto* n = std::get_if<std::int64_t>(&params[i])) {
                values[i] = storage.emplace_back(std::to_string(*n)).c_str();
            } else if (const auto* s = std::get_if<std::string_view>(&params[i])) {
                values[i] = storage.emplace_back(*s).c_str();
            }
        }

        const std::string name = "sqlock_" + std::to_string(index);
        try {
            // Declared locally only; libpqxx sends the PREPARE on first execution.
            if (!m_declared[index]) {
                m_conn->prepare(name, m_catalog.text[index]);
                m_declared[index] = true;
            }
            pqxx::nontransaction tx(*m_conn);
            const pqxx::result r =
                tx.exec_prepared(name, pqxx::prepare::make_dynamic_params(values));
            tx.commit();
            return to_result(r);
        } catch (...) {
            if (m_in_transaction)
                m_transaction_failed = true;
            fail("statement " + std::string(name_of(id)));
        }
    }

public:
    void execute_script(std::string_view sql) override {
        require_usable();
        try {
            // One simple query: libpq sends all statements at once and the server runs them as
            // one implicit transaction (or inside ours after begin()).
            run_simple(std::string(sql), "script");
        } catch (...) {
            if (m_in_transaction)
                m_transaction_failed = true;
            throw;
        }
    }

    void begin() override {
        require_usable();
        if (m_in_transaction)
            throw error(errc::backend, "postgresql: begin() called inside a transaction",
                        backend_name);
        run_simple("BEGIN", "BEGIN");
        m_in_transaction = true;
        m_transaction_failed = false;
    }

    void commit() override {
        require_usable();
        if (!m_in_transaction)
            throw error(errc::backend, "postgresql: commit() called without begin()", backend_name);
        if (m_transaction_failed) {
            // The server would answer COMMIT with a silent ROLLBACK: say so instead.
            rollback();
            throw error(errc::backend,
                        "postgresql: transaction rolled back because a statement in it failed",
                        backend_name, 0, "25P02");
        }
        m_in_transaction = false;
        try {
            run_simple("COMMIT", "COMMIT");
        } catch (const error& e) {
            if (e.code() != errc::connection)
                throw;
            throw error(errc::connection,
                        std::string(e.what()) + " (the transaction may or may not have committed)",
                        backend_name, 0, e.sqlstate());
        }
    }

    void rollback() noexcept override {
        if (!m_in_transaction)
            return;
        m_in_transaction = false;
        m_transaction_failed = false;
        if (!usable()) {
            m_broken = true;
            return;
        }
        try {
            run_simple("ROLLBACK", "ROLLBACK");
        } catch (...) {
            // The transaction state is unknown now: let the pool drop this connection.
            m_broken = true;
        }
    }

    bool usable() const noexcept override {
        return open() && !hung_up_while_idle();
    }

private:
    bool open() const noexcept {
        return !m_broken && m_conn && m_conn->is_open();
    }

    /// libpq notices a server-side close only when it next reads. An idle connection has
    /// nothing to read unless the server hung up: EOF, or the FATAL ErrorResponse ('E') it
    /// sends first (pg_terminate_backend, shutdown, idle timeouts). One non-blocking peek lets
    /// the pool drop such a session before sending anything on it. Under TLS the first byte is
    /// a record type (0x14-0x18), never 'E', so only EOF counts there.
    bool hung_up_while_idle() const noexcept {
        const int fd = m_conn->sock();
        if (fd < 0)
            return true;
        const int saved_errno = errno;
        char first = 0;
        const auto n = ::recv(fd, &first, 1, MSG_PEEK | MSG_DONTWAIT);
        const bool hung_up = n == 0 ||
                             (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
                             (n > 0 && first == 'E');
        errno = saved_errno;
        return hung_up;
    }

    /// Cheap check before each call (no syscall: the hot path stays one round trip).
    void require_usable() {
        if (open())
            return;
        m_broken = true;
        throw error(errc::connection,
                    "postgresql: the connection to " + m_url +
                        " was closed (by the server or after an earlier error); reconnect",
                    backend_name);
    }

    /// Runs SQL text as one simple query (no parameters).
    void run_simple(const std::string& sql, const std::string& what) {
        try {
            pqxx::nontransaction tx(*m_conn);
            tx.exec(sql);
            tx.commit();
        } catch (...) {
            fail(what);
        }
    }

    static result to_result(const pqxx::result& r) {
        result out;
        out.rows.reserve(r.size());
        for (const auto& pr : r) {
            row& columns = out.rows.emplace_back();
            columns.reserve(pr.size());
            for (const auto& f : pr) {
                if (f.is_null())
                    columns.emplace_back(std::nullopt);
                else
                    columns.emplace_back(std::in_place, f.c_str(), f.size());
            }
        }
        out.affected_rows = r.affected_rows();
        return out;
    }

    /// Translates the exception being handled into sqlock::error; `what` names the operation.
    [[noreturn]] void fail(const std::string& what) {
        try {
            throw;
        } catch (const error&) {
            throw;
        } catch (const std::bad_alloc&) {
            throw;
        } catch (const pqxx::broken_connection& e) {
            lost(what, e.what());
        } catch (const pqxx::in_doubt_error& e) {
            m_broken = true;
            throw error(errc::connection,
                        "postgresql: " + clean_message(e.what()) + " (outcome of " + what +
                            " unknown)",
                        backend_name);
        } catch (const pqxx::sql_error& e) {
            std::string state = e.sqlstate();
            // 6.4 throws insufficient_privilege without its code.
            if (state.empty() && dynamic_cast<const pqxx::insufficient_privilege*>(&e))
                state = "42501";
            server_error(what, e.what(), state);
        } catch (const pqxx::serialization_failure& e) {
            server_error(what, e.what(), "40001");
        } catch (const pqxx::deadlock_detected& e) {
            server_error(what, e.what(), "40P01");
        } catch (const pqxx::statement_completion_unknown& e) {
            server_error(what, e.what(), "40003");
        } catch (const pqxx::transaction_rollback& e) {
            server_error(what, e.what(), "40000");
        } catch (const std::exception& e) {
            if (!m_conn || !m_conn->is_open())
                lost(what, e.what());
            throw error(errc::backend, "postgresql: " + clean_message(e.what()) + " (" + what + ")",
                        backend_name);
        }
    }

    /// Connection trouble. libpqxx 6.4 maps SQLSTATE class 08 to broken_connection without
    /// the code, and replaces libpq's reason for a dropped connection by texts of its own.
    [[noreturn]] void lost(const std::string& what, std::string_view message) {
        m_broken = true;
        if (m_conn && m_conn->is_open()) // the server reported it, e.g. 08P01 protocol_violation
            throw error(errc::connection,
                        "postgresql: " + clean_message(message) + " (" + what + ")", backend_name);
        const bool placeholder = message.starts_with("Could not obtain client encoding") ||
                                 message.starts_with("Connection to database failed");
        throw error(errc::connection,
                    "postgresql: lost the connection to " + m_url + " during " + what + ": " +
                        (placeholder ? std::string("the server closed it (backend terminated, "
                                                   "server restarted or network failure)")
                                     : clean_message(message)),
                    backend_name);
    }

    [[noreturn]] void server_error(const std::string& what, std::string_view message,
                                   const std::string& state) {
        errc code = classify_postgres_sqlstate(state);
        if (!m_conn || !m_conn->is_open())
            code = errc::connection;
        if (code == errc::connection)
            m_broken = true;
        std::string text = "postgresql: " + clean_message(message);
        if (!state.empty())
            text += " (SQLSTATE " + state + ", " + what + ")";
        else
            text += " (" + what + ")";
        throw error(code, text, backend_name, 0, state);
    }

    std::unique_ptr<pqxx::connection> m_conn;
    std::array<bool, statement_count> m_declared{};
    std::string m_url; // redacted, for messages
    bool m_broken = false;
    bool m_in_transaction = false;
    bool m_transaction_failed = false;
};

} // namespace

std::unique_ptr<session> open_postgres_session(const connection_config& config,
                                               const sql_catalog& catalog) {
    return std::make_unique<postgres_session>(config, catalog);
}

} // namespace sqlock::detail
