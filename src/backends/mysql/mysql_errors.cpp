// MySQL/MariaDB error number -> sqlock error category.
//
// Server errors are < 2000 or >= 3000 (MySQL 5.7+/8.0 and MariaDB 10.x add codes >= 3000 and
// >= 4000 independently, so a few numbers mean different things on each: noted per row).
// 2000-2999 are client library (libmariadb) errors.
#include "backends/backend.hpp"

#include <array>
#include <utility>

namespace sqlock::detail {

errc classify_mysql_errno(int code) {
    static constexpr std::array<std::pair<int, errc>, 44> table = {{
        // --- could not reach the server, or the connection is gone ---
        {1040, errc::connection}, // ER_CON_COUNT_ERROR: too many connections (server full)
        {1044, errc::connection}, // ER_DBACCESS_DENIED_ERROR: no access to the database
        {1045, errc::connection}, // ER_ACCESS_DENIED_ERROR: wrong user or password
        // ER_UNKNOWN_COM_ERROR, which Galera reuses for "WSREP has not yet prepared node for
        // application use": the node is not synced or not in the primary component. Another
        // node (or this one, later) can serve: retryable, and a host list moves on.
        {1047, errc::connection},
        {1049, errc::connection}, // ER_BAD_DB_ERROR: unknown database in the URL
        {1053, errc::connection}, // ER_SERVER_SHUTDOWN: server shutting down
        {1129, errc::connection}, // ER_HOST_IS_BLOCKED: too many connection errors from us
        {1130, errc::connection}, // ER_HOST_NOT_PRIVILEGED: host may not connect
        {1152, errc::connection}, // ER_ABORTING_CONNECTION
        {1158, errc::connection}, // ER_NET_READ_ERROR: server side network read failed
        {1159, errc::connection}, // ER_NET_READ_INTERRUPTED: server side read timed out
        {1160, errc::connection}, // ER_NET_ERROR_ON_WRITE
        {1161, errc::connection}, // ER_NET_WRITE_INTERRUPTED
        {1203, errc::connection}, // ER_TOO_MANY_USER_CONNECTIONS: max_user_connections (full)
        // ER_USER_LIMIT_REACHED: an account's resource limit (GRANT ... WITH
        // MAX_USER_CONNECTIONS: full; MAX_CONNECTIONS_PER_HOUR, MAX_QUESTIONS, MAX_UPDATES: the
        // account is refused until its hour has passed)
        {1226, errc::connection},
        {1927, errc::connection}, // ER_CONNECTION_KILLED (MariaDB): KILL of our connection
        {2002, errc::connection}, // CR_CONNECTION_ERROR: Unix socket connect failed
        {2003, errc::connection}, // CR_CONN_HOST_ERROR: TCP connect failed or timed out
        {2005, errc::connection}, // CR_UNKNOWN_HOST: host name does not resolve
        {2006, errc::connection}, // CR_SERVER_GONE_ERROR: server closed the connection
        {2013, errc::connection}, // CR_SERVER_LOST: lost during a query (incl. read timeout)
        {2026, errc::connection}, // CR_SSL_CONNECTION_ERROR
        {2055, errc::connection}, // CR_SERVER_LOST_EXTENDED: lost, with the system error
        {2059, errc::connection}, // CR_AUTH_PLUGIN_CANNOT_LOAD
        // MySQL 8.0.24+ ER_CLIENT_INTERACTION_TIMEOUT (idle disconnect). MariaDB uses 4031 for
        // a CREATE TRIGGER ... FOLLOWS error that sqlock never issues.
        {4031, errc::connection},

        // --- lock tables (or the token sequence) missing: run "sqlock migrate" ---
        {1146, errc::schema_missing}, // ER_NO_SUCH_TABLE
        {4091, errc::schema_missing}, // ER_UNKNOWN_SEQUENCES (MariaDB): SELECT NEXTVAL(missing)
        // (inside INSERT a missing sequence reports 1146 instead)

        // --- something else sits under a sqlock name ---
        {4089, errc::schema_mismatch}, // ER_NOT_SEQUENCE (MariaDB): a table named like the sequence

        // --- a server-side wait or statement deadline passed ---
        {1205, errc::timeout}, // ER_LOCK_WAIT_TIMEOUT (MariaDB also uses it for NOWAIT / WAIT n)
        {1969, errc::timeout}, // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time)
        {3024, errc::timeout}, // ER_QUERY_TIMEOUT (MySQL max_execution_time)
        {3572, errc::timeout}, // ER_LOCK_NOWAIT (MySQL): NOWAIT found the row locked

        // --- the transaction lost a race and was rolled back: retry it ---
        {1020, errc::conflict}, // ER_CHECKREAD: row changed since read (innodb_snapshot_isolation)
        {1213, errc::conflict}, // ER_LOCK_DEADLOCK (also Galera certification failures)

        // --- our statement or data was rejected: retrying the same thing will not help ---
        {1062, errc::backend}, // ER_DUP_ENTRY
        {1064, errc::backend}, // ER_PARSE_ERROR
        {1180, errc::backend}, // ER_ERROR_DURING_COMMIT: storage engine error, not a race
        {1181, errc::backend}, // ER_ERROR_DURING_ROLLBACK
        {1264, errc::backend}, // ER_WARN_DATA_OUT_OF_RANGE (strict mode)
        {1292, errc::backend}, // ER_TRUNCATED_WRONG_VALUE: bad date/number (strict mode)
        {1366, errc::backend}, // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD (strict mode)
        {1406, errc::backend}, // ER_DATA_TOO_LONG: value longer than the column (strict mode)
        {1142, errc::backend}, // ER_TABLEACCESS_DENIED_ERROR: missing grant on a lock table
        {1290, errc::backend}, // ER_OPTION_PREVENTS_STATEMENT: e.g. server is --read-only
    }};
    for (const auto& [number, category] : table)
        if (number == code)
            return category;
    return errc::backend;
}

} // namespace sqlock::detail
