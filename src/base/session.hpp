// Internal: the one interface strategies and core code use to talk to any backend.
// Backends (src/backends/*) implement it; nothing above it sees libpqxx, MariaDB Connector/C or
// sqlite3 types.
#pragma once

#include "base/clock_watch.hpp"
#include "base/statements.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sqlock::detail {

/// A bound parameter: SQL NULL, an integer, or text (passed as bytes, never spliced into SQL).
using param = std::variant<std::nullptr_t, std::int64_t, std::string_view>;

/// One result row: each column rendered as text, nullopt for SQL NULL. Booleans come back as
/// "1"/"0" on every backend (statements cast them to integers).
using row = std::vector<std::optional<std::string>>;

struct result {
    std::vector<row> rows;
    /// Rows inserted/updated/deleted. Only meaningful for statements whose write always
    /// changes the row (MySQL reports changed, not matched, rows).
    std::uint64_t affected_rows = 0;
};

/// An integer column: 0 for NULL or text that is not a number (statements cast to integers).
std::int64_t column_int(const std::optional<std::string>& text) noexcept;

/// One statement of a batch: a catalog statement and its parameters.
/// One row lock a server reports (session::row_locks).
struct row_lock_report {
    std::string key;             ///< the row's primary key (a lock name), or its first bytes
    std::size_t key_length = 0;  ///< the key's whole length in bytes (more than key.size(): cut)
    bool waiting = false;        ///< a request not granted yet (else held)
    std::int64_t session_id = 0; ///< the server's id of the session (MariaDB thread id)
    std::int64_t waited_ms = 0;  ///< waiting: for how long so far
    std::int64_t client_pid = 0; ///< the client's process id where the server knows it, else 0
};

struct batch_item {
    statement id;
    std::vector<param> params;
};

/// While alive, the statements this thread sends through pooled sessions wait at most `limit`
/// for a write lock another connection holds on the whole database (SQLite's busy handler)
/// instead of connect_timeout; past it they fail with errc::timeout (retryable). For a caller
/// with a fairer place to wait: SQLite's busy handler sleeps and retries, so a process that
/// writes back to back (a releaser asking again at once) can keep it out for seconds, while
/// the name's waiter queue (local_queue.hpp) puts that process behind. Backends without a
/// database-wide write lock ignore it. Scopes nest; the innermost one counts.
class busy_wait_limit {
public:
    explicit busy_wait_limit(std::chrono::milliseconds limit) noexcept;
    ~busy_wait_limit();
    busy_wait_limit(const busy_wait_limit&) = delete;
    busy_wait_limit& operator=(const busy_wait_limit&) = delete;
    /// The calling thread's innermost limit, if any.
    static std::optional<std::chrono::milliseconds> current() noexcept;

private:
    std::optional<std::chrono::milliseconds> m_outer;
};

/// While alive, connections this thread opens give up at `deadline` (steady clock) when it
/// comes before their connect_timeout: the deadline of a lock wait (or of the caller of
/// connect(), connect_options::connect_deadline) also bounds a connect still in flight, which
/// is then abandoned with the connect timeout's error. Scopes nest; the innermost one counts.
class connect_deadline {
public:
    explicit connect_deadline(std::chrono::steady_clock::time_point deadline) noexcept;
    ~connect_deadline();
    connect_deadline(const connect_deadline&) = delete;
    connect_deadline& operator=(const connect_deadline&) = delete;
    /// The calling thread's innermost deadline, if any.
    static std::optional<std::chrono::steady_clock::time_point> current() noexcept;

private:
    std::optional<std::chrono::steady_clock::time_point> m_outer;
};

/// While alive, connections this thread (or fiber) opens are made to their end even when the
/// fiber's call is cancelled; otherwise a cancel abandons a connect in flight (io_wait.hpp),
/// since nothing is held before a connection exists. For reading back what an acquire whose
/// reply was lost did: a grant may exist that only that read can find, and give back. Scopes
/// nest.
class finish_connects {
public:
    finish_connects() noexcept;
    ~finish_connects();
    finish_connects(const finish_connects&) = delete;
    finish_connects& operator=(const finish_connects&) = delete;
    /// True inside a scope: a connect must not be abandoned on a cancel.
    static bool current() noexcept;

private:
    bool m_outer;
};

/// The calling thread's busy_wait_limit, connect_deadline and finish_connects scopes, as a
/// fiber host carries them: a fiber that waits keeps its scopes while other fibers run on its
/// thread, and takes them to whichever thread resumes it.
struct wait_scopes {
    std::optional<std::chrono::milliseconds> busy_wait_limit;
    std::optional<std::chrono::steady_clock::time_point> connect_deadline;
    bool finish_connects = false;
};

/// Installs `next` as the calling thread's scopes and returns the ones it had. Never throws.
wait_scopes exchange_wait_scopes(const wait_scopes& next) noexcept;

/// The shortest a connect is given under a connect_deadline (one made at or past the deadline:
/// a lock wait's last attempt), so that a server that answers at once is still reached.
inline constexpr std::chrono::milliseconds min_connect_budget{500};

/// How long a connection opened now may take: `connect_timeout`, or less when the thread's
/// connect_deadline comes sooner (but at least min_connect_budget).
std::chrono::milliseconds connect_budget(std::chrono::milliseconds connect_timeout) noexcept;

/// One database connection. Not thread-safe: a session is used by one thread at a time
/// (the pool hands it out exclusively, or a held lock pins it).
///
/// Every method reports failure by throwing sqlock::error with the backend's native code
/// translated (see each backend's error table). After an errc::connection error the session
/// reports usable() == false and the pool discards it.
///
/// A catalog statement whose SQL file holds only comments is a no-op for that backend (for
/// example MariaDB's fu_begin: its lock sessions run with autocommit off); execute() returns
/// an empty result without contacting the server.
class session {
public:
    explicit session(const sql_catalog& catalog) : m_catalog(catalog) {}
    virtual ~session() = default;
    session(const session&) = delete;
    session& operator=(const session&) = delete;

    /// Runs catalog statement `id` with `params` bound to $1, $2, ... in order. Outside
    /// begin()/commit() each call is its own autocommit transaction. One round trip.
    result execute(statement id, std::span<const param> params);
    result execute(statement id, std::initializer_list<param> params) {
        return execute(id, std::span<const param>(params.begin(), params.size()));
    }

    /// Runs `items` in order and returns one result per item. Stops at the first failure and
    /// throws it (later items do not run). Backends that can pipeline (PostgreSQL) send the
    /// whole batch in one round trip; the others run one statement after another.
    std::vector<result> execute_batch(std::span<const batch_item> items);

    /// Runs SQL text without parameters; may hold several statements separated by ";" at line
    /// ends (migration scripts). Used for DDL only.
    virtual void execute_script(std::string_view sql) = 0;

    /// Runs one SQL statement given as text, without parameters, and returns its rows and
    /// affected-row count. For administration and tests with trusted SQL only: sqlock's own
    /// operations use catalog statements with bound parameters.
    virtual result query(std::string_view sql) = 0;

    /// Explicit transactions. On SQLite begin() is BEGIN IMMEDIATE (takes the write lock up
    /// front so it never fails half-way with SQLITE_BUSY).
    virtual void begin() = 0;
    virtual void commit() = 0;
    virtual void rollback() noexcept = 0;
    /// True while a transaction may be open: after begin(), a BEGIN in a batch, or (MariaDB
    /// lock sessions, which run with autocommit off) any statement since the last commit.
    virtual bool in_transaction() const noexcept { return false; }

    /// False once the connection is known to be broken. Never blocks; where the backend
    /// allows it (PostgreSQL), it also notices a server that hung up while we were idle.
    virtual bool usable() const noexcept = 0;

    /// Subscribes this session to notifications on `channel` (PostgreSQL LISTEN). Returns false
    /// where the backend has no notifications (then the caller polls).
    virtual bool listen(std::string_view channel) {
        (void)channel;
        return false;
    }
    /// True between listen() and unlisten().
    virtual bool listening() const noexcept { return false; }
    /// Ends every subscription (UNLISTEN *) and drops notifications not read yet, so that the
    /// session can be pooled. A session where that fails reports usable() == false. Never throws.
    virtual void unlisten() noexcept {}
    /// After listen(): waits up to `timeout` for notifications and returns their payloads
    /// (empty on timeout). Throws errc::connection when the connection broke.
    virtual std::vector<std::string> wait_notifications(std::chrono::milliseconds timeout) {
        (void)timeout;
        return {};
    }

    /// True when execute_batch() sends the whole batch in one round trip (PostgreSQL's
    /// pipeline); elsewhere a batch is one round trip per statement, so a caller may stop
    /// after a statement whose answer decides whether the rest is worth sending.
    virtual bool pipelines() const noexcept { return false; }

    /// True when a pooler between us and the server shares server connections between
    /// transactions (PgBouncer in transaction mode): session-level features (LISTEN, session
    /// advisory locks, prepared statements, session settings) do not work on this session.
    virtual bool behind_transaction_pooler() const noexcept { return false; }

    /// The server's id for this connection (PostgreSQL backend pid, MariaDB connection id), as
    /// pg_terminate_backend() / KILL take it; 0 where there is none (SQLite) or it is unknown.
    virtual std::int64_t server_session_id() const noexcept { return 0; }

    /// Row locks the server holds or is asked for on `table` (its unquoted name), for servers
    /// whose SQL views hide the holder of an uncontended row lock (MariaDB: read from the InnoDB
    /// lock monitor, SHOW ENGINE INNODB STATUS with innodb_status_output_locks = ON and the
    /// PROCESS privilege). Takes no lock. nullopt when the server does not show them (the
    /// setting is off, the privilege is missing, or the backend has no such view).
    virtual std::optional<std::vector<row_lock_report>> row_locks(std::string_view table) {
        (void)table;
        return std::nullopt;
    }
    /// SQLite: who holds the write lock of lock file `file` (a select_for_update hold), asked
    /// without taking any lock: 0 when nobody does or there is no such file, the holder's
    /// process id, or -1 when held by a process that cannot be named. nullopt
    /// elsewhere and when it cannot be told.
    virtual std::optional<std::int64_t> lock_file_holder(const std::string& file) {
        (void)file;
        return std::nullopt;
    }

    /// Shows the replies of statements that return the server's clock ("-- sqlock:
    /// server-clock") to `watch` (the database handle's; nullptr: to nobody).
    void watch_clock(clock_watch* watch) noexcept { m_clock = watch; }

protected:
    virtual result do_execute(statement id, std::span<const param> params) = 0;
    /// Runs every item (no-ops and unchanged settings are already filtered out); default: one
    /// after another. `out` has one slot per item.
    virtual void do_execute_batch(std::span<const batch_item> items, std::vector<result>& out);

    const sql_catalog& m_catalog;

private:
    /// False for no-op statements and for skip-if-unchanged ones whose used parameters match
    /// the last call on this connection (remembers them otherwise).
    bool needs_sending(statement id, std::span<const param> params);
    void show_clock(statement id, const result& res, std::chrono::steady_clock::time_point sent);
    clock_watch* m_clock = nullptr;
    std::array<std::optional<std::vector<std::optional<std::string>>>, statement_count>
        m_last_params;
};

} // namespace sqlock::detail
