// sqlock — distributed locks in the SQL database you already have.
/// @file
/// error.hpp: the one exception type sqlock throws, and its categories.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace sqlock {

/// What went wrong, coarse enough that a caller can act on it.
enum class errc {
    invalid_argument, ///< bad input from the caller: lock name, TTL, URL, table prefix...
    connection,       ///< could not reach or stay connected to the database (incl. wrong password)
    timeout,          ///< a deadline passed (server-side lock wait, statement or connect timeout)
    conflict,         ///< deadlock or serialization failure reported by the database; retry
    lock_lost,        ///< the lock is no longer held by this owner (expired and taken over...)
    schema_missing,   ///< lock tables are missing: run "sqlock migrate"
    schema_mismatch,  ///< lock tables exist but at a version this library does not understand
    unsupported,      ///< the backend or strategy cannot do what was asked
    /// the database's replication cannot keep this lock safe: a read-only standby or
    /// replica, select_for_update on a multi-node Galera cluster, asynchronous replicas
    /// when connect_options::require_synchronous_replication is set (docs: databases/replicated.md)
    topology,
    backend, ///< any other database error; see native_code() / sqlstate()
};

/// A short stable name for `code` ("connection", "lock_lost", ...).
std::string_view to_string(errc code) noexcept;

/// Every failure sqlock reports is a sqlock::error.
///
/// The message names the lock or database involved and, where there is one, what to do next.
/// Connection URLs in messages never contain passwords.
class error : public std::runtime_error {
public:
    /// An error of category `code` whose what() is `message`; the other arguments are what
    /// backend(), native_code() and sqlstate() return. sqlock's own components throw these;
    /// applications may too (a test that simulates a failure, say).
    error(errc code, const std::string& message, std::string backend = {}, int native_code = 0,
          std::string sqlstate = {});

    /// The category.
    errc code() const noexcept { return m_code; }
    /// "postgresql", "mysql", "sqlite", or empty when no database was involved.
    const std::string& backend() const noexcept { return m_backend; }
    /// MySQL errno or SQLite extended result code; 0 when there is none.
    int native_code() const noexcept { return m_native_code; }
    /// Five-character SQLSTATE when the backend reported one, else empty.
    const std::string& sqlstate() const noexcept { return m_sqlstate; }
    /// True when trying the same operation again later may succeed (connection trouble,
    /// lock/serialization conflicts, timeouts).
    bool retryable() const noexcept;

private:
    errc m_code;
    std::string m_backend;
    int m_native_code;
    std::string m_sqlstate;
};

/// True when `e` says the database server refused a connection for lack of free connection
/// slots: PostgreSQL SQLSTATE 53300 ("sorry, too many clients already", "remaining connection
/// slots are reserved...", "too many connections for role/database"), MariaDB/MySQL 1040
/// (max_connections), 1203 (max_user_connections) or 1226 for an account's
/// MAX_USER_CONNECTIONS. Such a refusal is temporary: a lock wait retries it until its deadline
/// (then errc::timeout, still recognised here). A wrong password, an unknown database or an
/// unreachable host are not "full" (false). Also true when libmariadb, over TLS, quotes such a
/// refusal in a client error (2002/2026).
bool is_server_full(const error& e) noexcept;

/// True when `e` says the server took a new connection but never answered it: no complete
/// answer within connect_timeout (PostgreSQL "timeout expired", MariaDB/MySQL 2002/2003 with
/// system error 110, ETIMEDOUT), or the connection closed before any reply (PostgreSQL "server
/// closed the connection unexpectedly", MariaDB/MySQL 2013 "Lost connection ... at
/// 'handshake'"). A server swamped by a fleet starting at once answers that way (its accept
/// queue overflows, it forks and authenticates too slowly, a refusal it sends is lost), and so
/// does a network that drops packets; both may pass, so `sqlock run --wait` retries it until
/// its deadline, as it does a full server (then errc::timeout, still recognised here). A
/// refused connection (nothing listening), an unknown host, a wrong password or an unknown
/// database are not (false).
bool is_connect_unanswered(const error& e) noexcept;

} // namespace sqlock
