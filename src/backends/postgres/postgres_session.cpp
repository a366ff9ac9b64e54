// PostgreSQL backend: one libpqxx 6.4 connection per session, used to connect and to hold
// the PGconn; every statement is sent through libpq directly.
//
// libpqxx 6.4 facts this file relies on:
//   - A broken connection is silently re-opened on next use unless reactivation is inhibited;
//     that would lose session settings and session-level advisory locks, so it is inhibited.
//   - raw_connection() is private; a connection policy (handle_policy below) is the supported
//     way to see the PGconn.
//   - Its exec paths are not used: when a statement fails on a connection the server has just
//     closed, make_result throws (no client encoding) before it owns the PGresult, which then
//     leaks. So single statements run as a one-item pipeline and simple queries via PQexec,
//     each result owned by a pq_result at once; errors carry the server's SQLSTATE as sent.
//
// execute_batch sends the whole batch in one round trip (libpq pipeline mode, one Sync at the
// end), so the items run the way the extended query protocol runs statements before a Sync:
//   - outside a transaction the items form one implicit transaction: a failure rolls back the
//     items before it too (one by one, each would have committed on its own);
//   - a BEGIN item turns that implicit transaction into the explicit one, so items before it
//     (e.g. set_config(..., false)) are undone if that transaction is rolled back;
//   - after the first failure the later items do not run.
#include "backends/backend.hpp"
#include "backends/module.hpp"
#include "backends/postgres/statement_cancel.hpp"
#include "base/io_wait.hpp"
#include "base/owner.hpp"
#include "base/session.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <libpq-fe.h>
#include <memory>
#include <new>
#include <optional>
#include <poll.h>
#include <pqxx/basic_connection>
#include <pqxx/connection>
#include <pqxx/except>
#include <pqxx/prepared_statement>
#include <pqxx/result>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <system_error>
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
    // libpq's own host list: it tries each host in turn (connect_timeout applies per host).
    std::string hosts;
    std::string ports;
    for (const auto& e : config.endpoints) {
        // Appended in two steps: ("," + string) trips GCC 12's -Wrestrict at -O2.
        hosts += hosts.empty() ? "" : ",";
        hosts += e.host;
        ports += ports.empty() ? "" : ",";
        ports += std::to_string(e.port);
    }
    if (config.endpoints.empty()) {
        hosts = config.host;
        ports = config.port > 0 ? std::to_string(config.port) : "";
    }
    if (!hosts.empty())
        append_conninfo(info, "host", hosts);
    if (!ports.empty())
        append_conninfo(info, "port", ports);
    // Only a server that accepts writes will do: of several hosts libpq takes the primary, and
    // a standby alone is refused (the topology check says why; docs/site/databases/replicated.md).
    append_conninfo(info, "target_session_attrs", "read-write");
    if (!config.user.empty())
        append_conninfo(info, "user", config.user);
    if (!config.password.empty())
        append_conninfo(info, "password", config.password);
    append_conninfo(info, "dbname", config.database);
    // libpq counts whole seconds and treats 1 as 2; and it applies only to a blocking connect.
    // Connections are made by connect_bounded, which keeps connect_timeout to the millisecond
    // itself; this stays for anything that reads the conninfo.
    const auto timeout_ms = config.connect_timeout.count();
    const long long timeout_s = std::max<long long>(2, (timeout_ms + 999) / 1000);
    append_conninfo(info, "connect_timeout", std::to_string(timeout_s));
    // "sqlock host:pid" (at most 63 bytes, the server's limit): a DBA sees which process a
    // session is, and sqlock status tells a lease's holder from the waiters in its queue.
    const auto& me = this_process();
    append_conninfo(info, "application_name",
                    ("sqlock " + me.host + ":" + std::to_string(me.pid)).substr(0, 63));
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

/// True when libpq's connect error says that every host it tried was a read-only standby
/// (target_session_attrs=read-write): "server is in hot standby mode" / "session is
/// read-only" for each host. A host that failed otherwise (refused, timed out: a failover in
/// progress) makes it a connection error, which a caller retries.
bool only_standbys_answered(std::string_view why) {
    std::size_t hosts = 0;
    std::size_t standbys = 0;
    for (std::size_t at = why.find("failed:"); at != std::string_view::npos;
         at = why.find("failed:", at + 1))
        ++hosts;
    for (const auto text : {"server is in hot standby mode", "session is read-only"})
        for (std::size_t at = why.find(text); at != std::string_view::npos;
             at = why.find(text, at + 1))
            ++standbys;
    return standbys > 0 && standbys >= hosts;
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

/// Masks the password field of any URL or connection string in the text, should libpq ever
/// echo one (it does not today: its messages name the host, port, user and database only).
std::string scrub(std::string message) {
    return redact_passwords(std::move(message));
}

/// Where the next handle_policy reports libpq's handle. Set only around constructing a
/// connection, which libpqxx opens synchronously on the constructing thread.
thread_local PGconn** t_handle_slot = nullptr;

/// A connection made already (connect_bounded) that the next handle_policy hands to libpqxx
/// instead of connecting (connect_direct takes a handle it is given as it is). Set only
/// around constructing a connection, like t_handle_slot.
thread_local PGconn* t_adopt = nullptr;

struct pg_conn_deleter {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using pg_conn_ptr = std::unique_ptr<PGconn, pg_conn_deleter>;

/// libpq's text of a failed connect, one host's lines (they end in a newline).
std::string connect_error_text(const PGconn* c) {
    const char* text = PQerrorMessage(c);
    std::string out = text && *text ? text : "connection failed\n";
    if (out.back() != '\n')
        out += '\n';
    return out;
}

/// A connection to the URL's hosts, tried one at a time in order (as libpq's own host list
/// would), each for at most connect_timeout and all of them together at most until the
/// thread's connect_deadline (connect_budget). libpq's connect_timeout counts whole seconds,
/// at least 2, and PQconnectPoll ignores it; so the connect runs here, non-blocking
/// (PQconnectStart, PQconnectPoll and poll()), bounded to the millisecond: a connect still in
/// flight at its bound is abandoned. Throws std::runtime_error with libpq's text ("connection
/// to server at ... failed: ...", one such line per host; "timeout expired" for a host that
/// did not finish in time) when no host gave a connection that accepts writes, and at once
/// when the caller is a fiber whose call was cancelled (io_wait.hpp's fiber_stopped) outside
/// a finish_connects scope.
pg_conn_ptr connect_bounded(const connection_config& config) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto budget = connect_budget(config.connect_timeout);
    const auto all_end = start + budget;
    const bool cancellable = !finish_connects::current();
    // One host (or libpq's defaults: none given) is one attempt with the conninfo as it is.
    std::vector<endpoint> hosts = config.endpoints;
    const bool several = hosts.size() > 1;
    if (!several)
        hosts = {endpoint{config.host, config.port}};
    std::string failures;
    for (const auto& host : hosts) {
        auto one = config;
        if (several)
            one.endpoints = {host};
        const auto host_start = clock::now();
        if (host_start >= all_end && !failures.empty())
            break;
        const auto end = std::min(all_end, host_start + config.connect_timeout);
        pg_conn_ptr c(PQconnectStart(build_conninfo(one).c_str()));
        if (!c)
            throw std::bad_alloc();
        PostgresPollingStatusType polled = PGRES_POLLING_WRITING; // as after PQconnectStart
        if (PQstatus(c.get()) == CONNECTION_BAD)
            polled = PGRES_POLLING_FAILED;
        for (;;) {
            if (polled == PGRES_POLLING_OK)
                return c;
            if (polled == PGRES_POLLING_FAILED) {
                failures += connect_error_text(c.get());
                break;
            }
            const auto now = clock::now();
            if (now >= end) {
                const auto waited =
                    std::chrono::duration_cast<std::chrono::milliseconds>(now - host_start);
                failures += "connection to server at \"" + host.host + "\", port " +
                            std::to_string(host.port > 0 ? host.port : 5432) +
                            " failed: timeout expired after " + std::to_string(waited.count()) +
                            " ms" +
                            (end == all_end && budget < config.connect_timeout
                                 ? " (abandoned at the caller's deadline)"
                                 : "") +
                            "\n";
                break;
            }
            bool ready = false;
            try {
                // poll() on this thread, or a fiber's wait (io_wait.hpp), which a cancel of
                // the fiber's call ends (nothing is held yet, so the connect is abandoned)
                // unless the caller must finish it.
                ready = wait_for_fd(PQsocket(c.get()),
                                    polled == PGRES_POLLING_READING ? io_wait::fd_event::readable
                                                                    : io_wait::fd_event::writable,
                                    end, cancellable);
            } catch (const std::system_error& e) {
                failures += "connection to server at \"" + host.host +
                            "\" failed: poll: " + std::to_string(e.code().value()) + "\n";
                break;
            }
            if (!ready && cancellable && fiber_stopped())
                throw std::runtime_error(failures + "connection to server at \"" + host.host +
                                         "\" abandoned: the waiting call was cancelled\n");
            if (ready)
                polled = PQconnectPoll(c.get());
        }
    }
    throw std::runtime_error(failures);
}

/// Sets t_handle_slot for one connection's construction.
class handle_capture {
public:
    explicit handle_capture(PGconn** slot) noexcept : m_previous(t_handle_slot) {
        t_handle_slot = slot;
    }
    ~handle_capture() { t_handle_slot = m_previous; }
    handle_capture(const handle_capture&) = delete;
    handle_capture& operator=(const handle_capture&) = delete;

private:
    PGconn** m_previous;
};

/// connect_direct that also keeps the session's copy of the PGconn current: written when
/// libpqxx connects, nulled when it drops or closes the connection (so never dangling).
class handle_policy final : public pqxx::connect_direct {
public:
    explicit handle_policy(const std::string& options)
        : pqxx::connect_direct(options), m_slot(t_handle_slot) {}

    handle do_startconnect(handle orig) override {
        if (!orig && t_adopt) {
            orig = t_adopt; // connected already (connect_bounded): libpqxx takes it as it is
            t_adopt = nullptr;
        }
        return record(pqxx::connect_direct::do_startconnect(orig));
    }
    handle do_completeconnect(handle orig) override {
        return record(pqxx::connect_direct::do_completeconnect(orig));
    }
    handle do_dropconnect(handle orig) noexcept override {
        return record(pqxx::connect_direct::do_dropconnect(orig));
    }
    handle do_disconnect(handle orig) noexcept override {
        return record(pqxx::connect_direct::do_disconnect(orig));
    }

private:
    handle record(handle h) noexcept {
        if (m_slot)
            *m_slot = h;
        return h;
    }

    PGconn** m_slot;
};

using pq_connection = pqxx::basic_connection_base<handle_policy>;

struct pq_result_deleter {
    void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using pq_result = std::unique_ptr<PGresult, pq_result_deleter>;

/// libpq's limit on bound parameters per statement.
constexpr std::size_t max_params = 65535;

/// Text values for libpq, same conversions for every path: a null pointer is SQL NULL,
/// integers in decimal, strings as their bytes. `storage` owns the text `values` points to.
void text_params(std::span<const param> params, std::vector<std::string>& storage,
                 std::vector<const char*>& values) {
    storage.clear();
    storage.reserve(params.size()); // no reallocation below: the c_str() pointers stay valid
    values.assign(params.size(), nullptr);
    for (std::size_t i = 0; i < params.size(); ++i) {
        if (const auto* n = std::get_if<std::int64_t>(&params[i])) {
            values[i] = storage.emplace_back(std::to_string(*n)).c_str();
        } else if (const auto* s = std::get_if<std::string_view>(&params[i])) {
            values[i] = storage.emplace_back(*s).c_str();
        }
    }
}

/// A statement's I/O on a fiber (io_wait.hpp): libpq in non-blocking mode, its socket waited on
/// through the hook, so that the fiber's thread runs other work meanwhile. Without a hook (the
/// synchronous API) it does nothing and libpq blocks in its own poll() as before. The
/// connection goes back to blocking mode when it ends.
class fiber_io {
public:
    /// `cancellable`: the statements wait in the server (a row lock, a queue lock); when the
    /// fiber's waiter is stopped meanwhile, the server is asked to cancel them
    /// (statement_cancel.hpp), and their results (an error, or what they got first) are read
    /// as usual.
    explicit fiber_io(PGconn* conn, bool cancellable = false) noexcept
        : m_conn(conn), m_on(current_io_wait() != nullptr && PQsetnonblocking(conn, 1) == 0),
          m_cancellable(m_on && cancellable) {}
    ~fiber_io() {
        if (m_on)
            PQsetnonblocking(m_conn, 0); // nothing left to send: no blocking flush
    }
    fiber_io(const fiber_io&) = delete;
    fiber_io& operator=(const fiber_io&) = delete;

    /// Sends what libpq has queued, waiting for the socket as needed. False when libpq failed
    /// (the connection broke): PQgetResult then reports it.
    bool flush() {
        if (!m_on)
            return true;
        for (;;) {
            const int left = PQflush(m_conn);
            if (left <= 0)
                return left == 0;
            // Read too while the send waits: the server may be blocked writing to us.
            wait(io_wait::fd_event::writable);
            if (PQconsumeInput(m_conn) == 0)
                return false;
        }
    }

    /// Waits until PQgetResult would not block. False when libpq failed (PQgetResult then
    /// returns the error).
    bool await_result() {
        if (!m_on)
            return true;
        while (PQisBusy(m_conn)) {
            wait(io_wait::fd_event::readable);
            if (PQconsumeInput(m_conn) == 0)
                return false;
        }
        return true;
    }

    /// After the results were read: false when a cancel request sent meanwhile is still on
    /// its way after a second (the connection must then be closed: the request could cancel
    /// its next statement). Never throws.
    bool cancel_settled() noexcept {
        return m_cancel.finish(std::chrono::steady_clock::now() + std::chrono::seconds(1));
    }

private:
    void wait(io_wait::fd_event event) {
        const bool interruptible = m_cancellable && !m_cancel_tried;
        try {
            if (!wait_for_fd(PQsocket(m_conn), event, io_wait::time_point::max(), interruptible) &&
                interruptible && fiber_stopped()) {
                m_cancel_tried = true; // once: if it cannot start, the statement's bound holds
                m_cancel.start(m_conn);
            }
        } catch (const std::system_error&) {
            // PQconsumeInput/PQflush next finds what is wrong with the socket
        }
    }

    PGconn* m_conn;
    bool m_on;
    bool m_cancellable;
    bool m_cancel_tried = false;
    statement_cancel m_cancel;
};

class postgres_session final : public session {
public:
    postgres_session(const connection_config& config, const sql_catalog& catalog)
        : session(catalog), m_url(config.redacted_url) {
        const std::string conninfo = build_conninfo(config);
        validate_conninfo(conninfo, m_url);
        try {
            auto connected = connect_bounded(config);
            const handle_capture capture(&m_pg);
            t_adopt = connected.release();
            try {
                m_conn = std::make_unique<pq_connection>(conninfo);
            } catch (...) {
                if (t_adopt) // not handed to libpqxx
                    PQfinish(std::exchange(t_adopt, nullptr));
                throw;
            }
            if (t_adopt)
                PQfinish(std::exchange(t_adopt, nullptr));
        } catch (const std::bad_alloc&) {
            throw;
        } catch (const std::exception& e) {
            // libpq's text says what failed ("password authentication failed for user ...",
            // "Connection refused", "timeout expired") but not where: add the redacted URL.
            // A server without a free slot is told apart (SQLSTATE 53300, see is_server_full):
            // waiting for a lock outlasts it.
            // Only the driver's text is scrubbed: m_url is redacted already.
            const std::string why = scrub(clean_message(e.what()));
            if (only_standbys_answered(why))
                throw error(errc::topology,
                            "postgresql: " + m_url + " reached only a read-only standby (" + why +
                                "); locks need the primary (the server that accepts "
                                "writes). Put the primary in the URL, or list every node "
                                "(postgresql://user:pw@host1:port,host2:port/db) to "
                                "connect to whichever accepts writes",
                            backend_name, 0, "25006");
            const bool full = postgres_refused_for_capacity(why);
            throw error(errc::connection,
                        "postgresql: cannot connect to " + m_url + ": " + why +
                            (full ? std::string(postgres_full_hint) : std::string()),
                        backend_name, 0, full ? "53300" : "");
        }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        // Deprecated in 6.x but still effective: never reconnect behind our back.
        m_conn->inhibit_reactivation(true);
#pragma GCC diagnostic pop
        // One round trip for all session settings (statement_timeout is in ms, 0 = off), and
        // for telling a transaction-mode pooler (PgBouncer) apart: it gives the client a
        // backend pid of its own, so the server's pg_backend_pid() differs. Behind one, a
        // session setting would stay on a server connection other clients then get, so the
        // server sets statement_timeout only when it is ours alone. (TimeZone is one of the
        // parameters poolers track per client.)
        const auto statement_ms = std::clamp<long long>(config.io_timeout.count(), 0, INT32_MAX);
        const auto pid = std::to_string(PQbackendPID(m_pg));
        const auto settings =
            simple_query("SET TIME ZONE 'UTC'; SELECT CAST(pg_backend_pid() = " + pid +
                             " AS integer), CASE WHEN pg_backend_pid() = " + pid +
                             " THEN set_config('statement_timeout', '" +
                             std::to_string(statement_ms) + "', false) END",
                         "session settings");
        m_behind_pooler = PQntuples(settings.get()) == 1 &&
                          std::string_view(PQgetvalue(settings.get(), 0, 0)) == "0";
    }

    bool pipelines() const noexcept override {
        return true;
    }

    /// Behind a pooler that shares server connections between transactions (PgBouncer in
    /// transaction mode): statements go unprepared, and nothing session-level is kept.
    bool behind_transaction_pooler() const noexcept override {
        return m_behind_pooler;
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
    /// One statement: a batch of one item (below), so every statement goes through libpq
    /// directly. libpqxx 6.4's exec paths leak the PGresult when a statement fails on a
    /// connection the server has just closed (make_result throws on the bad connection before
    /// it owns the result; seen by LeakSanitizer after pg_terminate_backend).
    result do_execute(statement id, std::span<const param> params) override {
        const batch_item item{id, std::vector<param>(params.begin(), params.end())};
        std::vector<result> out(1);
        do_execute_batch(std::span<const batch_item>(&item, 1), out);
        return std::move(out[0]);
    }

    /// The whole batch in one round trip: libpq pipeline mode, each statement prepared once
    /// per connection (its Parse rides in the pipeline before its first Execute), one Sync at
    /// the end. A batch of one item is pipelined too: same one round trip as do_execute, and
    /// one instead of two when the statement is new on this connection.
    void do_execute_batch(std::span<const batch_item> items, std::vector<result>& out) override {
        for (const auto& item : items) {
            if (static_cast<std::size_t>(item.id) >= statement_count)
                throw std::logic_error("postgresql: bad statement id");
            if (item.params.size() > max_params)
                throw error(errc::backend,
                            "postgresql: statement " + std::string(name_of(item.id)) +
                                " has more than 65535 parameters",
                            backend_name);
        }
        if (std::all_of(items.begin(), items.end(),
                        [this](const batch_item& item) { return m_catalog.is_noop(item.id); }))
            return;
        require_usable();
        PGconn* const conn = m_pg;
        if (!conn || PQstatus(conn) != CONNECTION_OK || PQpipelineStatus(conn) != PQ_PIPELINE_OFF)
            pipeline_trouble(conn, "batch");
        if (PQenterPipelineMode(conn) != 1)
            pipeline_trouble(conn, "batch: entering pipeline mode");
        try {
            fiber_io io(conn, waits_in_server(items));
            run_pipeline(conn, items, out, io);
        } catch (const error&) {
            throw;
        } catch (...) {
            // Out of memory half-way: libpq may still hold queued commands or results.
            if (PQpipelineStatus(conn) != PQ_PIPELINE_OFF)
                m_broken = true;
            throw;
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

    bool listen(std::string_view channel) override {
        require_usable();
        run_simple("LISTEN " + quote_identifier(backend_kind::postgresql, channel), "LISTEN");
        m_listening = true;
        return true;
    }

    bool listening() const noexcept override {
        return m_listening;
    }

    bool in_transaction() const noexcept override {
        return m_in_transaction;
    }

    void unlisten() noexcept override {
        if (!m_listening)
            return;
        m_listening = false;
        try {
            require_usable();
            run_simple("UNLISTEN *", "UNLISTEN");
        } catch (...) {
            // Still subscribed, maybe: never pool it (the server would queue every release for
            // a reader that is gone).
            m_broken = true;
        }
        drop_notifications();
    }

    std::vector<std::string> wait_notifications(std::chrono::milliseconds timeout) override {
        require_usable();
        PGconn* const conn = m_pg;
        std::vector<std::string> payloads;
        auto collect = [&] {
            while (PGnotify* n = PQnotifies(conn)) {
                payloads.emplace_back(n->extra ? n->extra : "");
                PQfreemem(n);
            }
        };
        if (PQconsumeInput(conn) == 0) {
            m_broken = true;
            throw error(errc::connection,
                        "postgresql: listener connection to " + m_url +
                            " broke: " + PQerrorMessage(conn),
                        backend_name);
        }
        collect();
        if (!payloads.empty())
            return payloads;
        const auto until = std::chrono::steady_clock::now() +
                           std::clamp(timeout, std::chrono::milliseconds::zero(),
                                      std::chrono::milliseconds(60'000));
        bool ready = false;
        try {
            // a stop request ends a fiber's wait at once (the caller looks at it next)
            ready = wait_for_fd(PQsocket(conn), io_wait::fd_event::readable, until, true);
        } catch (const std::system_error&) {
            ready = false; // as a failed poll() was: nothing read, the caller asks again
        }
        if (ready) {
            if (PQconsumeInput(conn) == 0) {
                m_broken = true;
                throw error(errc::connection,
                            "postgresql: listener connection to " + m_url +
                                " broke: " + PQerrorMessage(conn),
                            backend_name);
            }
            collect();
        }
        return payloads;
    }

    std::int64_t server_session_id() const noexcept override {
        return m_pg ? static_cast<std::int64_t>(PQbackendPID(m_pg)) : 0;
    }

    bool usable() const noexcept override {
        return open() && !hung_up_while_idle();
    }

private:
    bool open() const noexcept {
        return !m_broken && m_conn && m_conn->is_open();
    }

    /// libpq notices a server-side close only when it next reads. An idle connection has
    /// nothing to read unless the server hung up: EOF, the FATAL ErrorResponse ('E') it sends
    /// first (pg_terminate_backend, shutdown, idle timeouts), or, from a backend killed by a
    /// crash or an immediate shutdown, a WARNING NoticeResponse ('N') with an
    /// operator-intervention SQLSTATE (57P..) before it exits. One non-blocking peek lets the
    /// pool drop such a session before sending anything on it, and a select_for_update holder
    /// see at once that its lock is gone. Under TLS the first byte is a record type
    /// (0x14-0x18), never 'E' or 'N', so only EOF counts there.
    bool hung_up_while_idle() const noexcept {
        const int fd = m_conn->sock();
        if (fd < 0)
            return true;
        const int saved_errno = errno;
        std::array<char, 512> peeked{};
        const auto n = ::recv(fd, peeked.data(), peeked.size(), MSG_PEEK | MSG_DONTWAIT);
        bool hung_up =
            n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        if (n > 0 && peeked[0] == 'E')
            hung_up = true;
        if (n > 0 && peeked[0] == 'N') {
            // Fields follow the 5-byte header as (type byte, text, NUL); the SQLSTATE is 'C'.
            const std::string_view body(peeked.data(), static_cast<std::size_t>(n));
            hung_up = body.find(std::string_view("\0C57P", 5), 4) != std::string_view::npos;
        }
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
public:
    result query(std::string_view sql) override {
        require_usable();
        try {
            return to_result(simple_query(std::string(sql), "query").get());
        } catch (...) {
            if (m_in_transaction)
                m_transaction_failed = true;
            throw;
        }
    }

private:
    /// Frees the notifications libpq has parsed so far (they pile up in its list otherwise).
    void drop_notifications() noexcept {
        if (!m_pg)
            return;
        while (PGnotify* n = PQnotifies(m_pg))
            PQfreemem(n);
    }

    void run_simple(const std::string& sql, const std::string& what) {
        simple_query(sql, what);
    }

    /// SQL text (one or more statements, no parameters) as one simple query, through libpq
    /// directly for the reason given at do_execute. Returns the last statement's result.
    pq_result simple_query(const std::string& sql, const std::string& what) {
        PGconn* const conn = m_pg;
        if (!conn || PQstatus(conn) != CONNECTION_OK || PQpipelineStatus(conn) != PQ_PIPELINE_OFF)
            pipeline_trouble(conn, what);
        pq_result res =
            current_io_wait() ? exec_on_fiber(conn, sql) : pq_result(PQexec(conn, sql.c_str()));
        if (res) {
            switch (PQresultStatus(res.get())) {
            case PGRES_COMMAND_OK:
            case PGRES_TUPLES_OK:
            case PGRES_EMPTY_QUERY:
                return res;
            default:
                break;
            }
        }
        const char* state = res ? PQresultErrorField(res.get(), PG_DIAG_SQLSTATE) : nullptr;
        batch_failed(batch_failure{what,
                                   res ? PQresultErrorMessage(res.get()) : PQerrorMessage(conn),
                                   state ? state : ""});
    }

    /// PQexec's work on a fiber: sends `sql`, waits for its results through the hook and
    /// returns the last (null when libpq could not send it: PQerrorMessage says why).
    static pq_result exec_on_fiber(PGconn* conn, const std::string& sql) {
        fiber_io io(conn);
        if (PQsendQuery(conn, sql.c_str()) != 1)
            return nullptr;
        io.flush();
        pq_result last;
        for (;;) {
            io.await_result();
            pq_result next(PQgetResult(conn));
            if (!next)
                return last;
            last = std::move(next);
            const auto status = PQresultStatus(last.get());
            if (status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH ||
                PQstatus(conn) == CONNECTION_BAD)
                return last; // as PQexec stops there
        }
    }

    /// One queued pipeline operation: the Parse of item `item`'s statement, or its Execute.
    struct pipeline_op {
        std::size_t item;
        bool prepare;
    };

    /// The first failure of a batch, translated once the pipeline is drained.
    struct batch_failure {
        std::string what;
        std::string message;
        std::string sqlstate;
    };

    static std::string pipeline_name(std::size_t index) {
        // Separate from libpqxx's "sqlock_<index>": the two paths prepare independently.
        return "sqlock_p" + std::to_string(index);
    }

    static std::string batch_what(statement id) {
        return "statement " + std::string(name_of(id)) + " in a batch";
    }

    /// Queues item `i` of a batch (its Parse first, unless prepared already or being prepared
    /// in this batch) and notes its operations in `ops`. A failure libpq reports at once.
    std::optional<batch_failure> queue_item(PGconn* conn, std::size_t i, const batch_item& item,
                                            std::array<bool, statement_count>& preparing,
                                            std::vector<pipeline_op>& ops) {
        std::vector<std::string> storage;
        std::vector<const char*> values;
        text_params(item.params, storage, values);
        const auto index = static_cast<std::size_t>(item.id);
        const auto refused = [&] {
            return batch_failure{batch_what(item.id), PQerrorMessage(conn), {}};
        };
        if (m_behind_pooler) {
            // Unnamed: a named statement would live on a server connection that the next
            // transaction may not get (PgBouncer 1.18 keeps no prepared statements).
            if (PQsendQueryParams(conn, m_catalog[item.id].c_str(), static_cast<int>(values.size()),
                                  nullptr, values.data(), nullptr, nullptr, 0) != 1)
                return refused();
            ops.push_back({i, false});
            return std::nullopt;
        }
        const std::string name = pipeline_name(index);
        if (!m_pipe_prepared[index] && !preparing[index]) {
            if (PQsendPrepare(conn, name.c_str(), m_catalog[item.id].c_str(), 0, nullptr) != 1)
                return refused();
            preparing[index] = true;
            ops.push_back({i, true});
        }
        if (PQsendQueryPrepared(conn, name.c_str(), static_cast<int>(values.size()), values.data(),
                                nullptr, nullptr, 0) != 1)
            return refused();
        ops.push_back({i, false});
        return std::nullopt;
    }

    /// Reads the result of each of `ops` into `out` (the first failure into `failure`), then
    /// the Sync's. Each operation yields one result then a null; after a failure, the later
    /// ones yield PGRES_PIPELINE_ABORTED. False when anything else came (a lost connection):
    /// the count bounds the loop.
    bool read_pipeline(PGconn* conn, std::span<const batch_item> items,
                       const std::vector<pipeline_op>& ops, std::vector<result>& out,
                       std::optional<batch_failure>& failure, fiber_io& io) {
        for (const auto& op : ops) {
            io.await_result();
            const pq_result res(PQgetResult(conn));
            if (!res)
                return false;
            const auto& item = items[op.item];
            switch (PQresultStatus(res.get())) {
            case PGRES_COMMAND_OK:
            case PGRES_TUPLES_OK:
            case PGRES_EMPTY_QUERY:
                if (op.prepare)
                    m_pipe_prepared[static_cast<std::size_t>(item.id)] = true;
                else if (!failure)
                    out[op.item] = to_result(res.get());
                break;
            case PGRES_PIPELINE_ABORTED:
                break; // skipped after the failure
            case PGRES_COPY_IN:
            case PGRES_COPY_OUT:
            case PGRES_COPY_BOTH:
                return false; // no catalog statement copies
            default: {
                const char* state = PQresultErrorField(res.get(), PG_DIAG_SQLSTATE);
                if (!failure)
                    failure = batch_failure{batch_what(item.id), PQresultErrorMessage(res.get()),
                                            state ? state : ""};
                break;
            }
            }
            io.await_result();
            if (const pq_result extra(PQgetResult(conn)); extra)
                return false;
        }
        io.await_result();
        const pq_result sync(PQgetResult(conn));
        return sync && PQresultStatus(sync.get()) == PGRES_PIPELINE_SYNC;
    }

    /// After a batch: the server's ReadyForQuery says where the transaction stands (a
    /// BEGIN/COMMIT/ROLLBACK item that ran, or a failure inside a transaction: then
    /// rollback() is needed).
    void note_transaction_status(PGconn* conn) {
        switch (PQtransactionStatus(conn)) {
        case PQTRANS_IDLE:
            m_in_transaction = false;
            m_transaction_failed = false;
            break;
        case PQTRANS_INTRANS:
            m_in_transaction = true;
            m_transaction_failed = false;
            break;
        case PQTRANS_INERROR:
            m_in_transaction = true;
            m_transaction_failed = true;
            break;
        default:
            m_broken = true;
            break;
        }
    }

    /// A batch that waits in the server for a lock: an acquire's (its lock_timeout first).
    static bool waits_in_server(std::span<const batch_item> items) noexcept {
        return !items.empty() && (items.front().id == statement::fu_wait ||
                                  items.front().id == statement::uk_queue_wait);
    }

    void run_pipeline(PGconn* conn, std::span<const batch_item> items, std::vector<result>& out,
                      fiber_io& io) {
        // Queue everything; libpq keeps it in its buffer (below 64 KB) until the Sync.
        std::vector<pipeline_op> ops;
        ops.reserve(2 * items.size());
        std::array<bool, statement_count> preparing{};
        std::optional<batch_failure> queue_failure; // libpq refused to queue an item
        for (std::size_t i = 0; i < items.size() && !queue_failure; ++i)
            if (!m_catalog.is_noop(items[i].id))
                queue_failure = queue_item(conn, i, items[i], preparing, ops);
        if (PQpipelineSync(conn) != 1) // the one send
            pipeline_trouble(conn, "batch: sending it");
        io.flush();
        std::optional<batch_failure> failure;
        if (!read_pipeline(conn, items, ops, out, failure, io) || PQexitPipelineMode(conn) != 1)
            m_broken = true; // results or commands left behind: libpqxx cannot use it now
        if (!io.cancel_settled())
            m_broken = true; // a late cancel request would hit the next statement
        if (!m_broken)
            note_transaction_status(conn);
        if (!failure && m_broken)
            failure = batch_failure{"batch", PQerrorMessage(conn), {}};
        if (!failure)
            failure = std::move(queue_failure);
        if (failure)
            batch_failed(*failure);
    }

    /// Throws the first failure of a batch with do_execute's classification.
    [[noreturn]] void batch_failed(const batch_failure& f) {
        if (!m_conn->is_open()) {
            m_broken = true;
            if (f.sqlstate.empty())
                lost(f.what, f.message); // libpq's own text ("server closed the connection...")
            server_error(f.what, f.message, f.sqlstate); // e.g. 57P01: errc::connection
        }
        if (m_broken)
            throw error(errc::connection,
                        "postgresql: " + clean_message(f.message) + " (" + f.what +
                            "; libpq and the server are out of step; reconnect)",
                        backend_name, 0, f.sqlstate);
        server_error(f.what, f.message, f.sqlstate);
    }

    /// libpq refused a pipeline step on a connection that should have been idle and healthy.
    [[noreturn]] void pipeline_trouble(PGconn* conn, const std::string& what) {
        m_broken = true;
        const std::string why = conn ? clean_message(PQerrorMessage(conn)) : "no libpq handle";
        if (!conn || !m_conn->is_open())
            lost(what, why);
        throw error(errc::connection, "postgresql: " + why + " (" + what + "); reconnect",
                    backend_name);
    }

    static result to_result(PGresult* r) {
        result out;
        const int rows = PQntuples(r);
        const int columns = PQnfields(r);
        out.rows.reserve(static_cast<std::size_t>(rows));
        for (int i = 0; i < rows; ++i) {
            row& fields = out.rows.emplace_back();
            fields.reserve(static_cast<std::size_t>(columns));
            for (int c = 0; c < columns; ++c) {
                if (PQgetisnull(r, i, c))
                    fields.emplace_back(std::nullopt);
                else
                    fields.emplace_back(std::in_place, PQgetvalue(r, i, c),
                                        static_cast<std::size_t>(PQgetlength(r, i, c)));
            }
        }
        const std::string_view count = PQcmdTuples(r); // "" when not applicable
        std::uint64_t affected = 0;
        if (std::from_chars(count.data(), count.data() + count.size(), affected).ec == std::errc{})
            out.affected_rows = affected;
        return out;
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

    PGconn* m_pg = nullptr; // kept current by handle_policy; declared before m_conn, which
                            // writes it until it is closed
    std::unique_ptr<pq_connection> m_conn;
    std::array<bool, statement_count> m_pipe_prepared{}; // "sqlock_p<index>" exists server-side
    bool m_behind_pooler = false;                        // see behind_transaction_pooler()
    std::string m_url;                                   // redacted, for messages
    bool m_broken = false;
    bool m_listening = false; ///< LISTEN sent, no UNLISTEN since
    bool m_in_transaction = false;
    bool m_transaction_failed = false;
};

} // namespace

std::unique_ptr<session> open_postgres_session(const connection_config& config,
                                               const sql_catalog& catalog) {
    return std::make_unique<postgres_session>(config, catalog);
}

} // namespace sqlock::detail

SQLOCK_BACKEND_ENTRY_POINT(postgresql, open_postgres_session)
