// Native error codes -> sqlock categories, per backend (table-driven; no server needed). The
// backend tables are compiled in from the backends this build has (tests/CMakeLists.txt).
#include "backends/backend.hpp"

#include <doctest/doctest.h>
#ifdef SQLOCK_TEST_SQLITE
#include <sqlite3.h>
#endif

using sqlock::errc;
using namespace sqlock::detail;

#ifdef SQLOCK_TEST_POSTGRESQL
TEST_CASE("postgresql SQLSTATE classification") {
    const struct {
        const char* sqlstate;
        errc expected;
    } cases[] = {
        {"08006", errc::connection}, {"08001", errc::connection}, {"28P01", errc::connection},
        {"3D000", errc::connection}, {"57P01", errc::connection}, {"42P01", errc::schema_missing},
        {"55P03", errc::timeout},    {"57014", errc::timeout},    {"40001", errc::conflict},
        {"40P01", errc::conflict},   {"23505", errc::backend},    {"22001", errc::backend},
        {"42601", errc::backend},    {"53300", errc::connection},
    };
    for (const auto& c : cases) {
        CAPTURE(c.sqlstate);
        CHECK(classify_postgres_sqlstate(c.sqlstate) == c.expected);
    }
}
#endif

#ifdef SQLOCK_TEST_MYSQL
TEST_CASE("mysql errno classification") {
    const struct {
        int code;
        errc expected;
    } cases[] = {
        {1045, errc::connection}, {2003, errc::connection}, {2006, errc::connection},
        {2013, errc::connection}, {1049, errc::connection}, {1146, errc::schema_missing},
        {1205, errc::timeout},    {3572, errc::timeout},    {1213, errc::conflict},
        {1062, errc::backend},    {1406, errc::backend},    {1064, errc::backend},
        {1040, errc::connection}, {1203, errc::connection}, {1226, errc::connection},
        {1047, errc::connection}, // Galera: node not ready (not synced, not primary)
    };
    for (const auto& c : cases) {
        CAPTURE(c.code);
        CHECK(classify_mysql_errno(c.code) == c.expected);
    }
}
#endif

#ifdef SQLOCK_TEST_SQLITE
TEST_CASE("sqlite result code classification") {
    const struct {
        int code;
        errc expected;
    } cases[] = {
        {SQLITE_BUSY, errc::timeout},      {SQLITE_BUSY_SNAPSHOT, errc::conflict},
        {SQLITE_LOCKED, errc::conflict},   {SQLITE_CANTOPEN, errc::connection},
        {SQLITE_NOTADB, errc::connection}, {SQLITE_CONSTRAINT_PRIMARYKEY, errc::backend},
        {SQLITE_READONLY, errc::backend},  {SQLITE_ERROR, errc::backend},
    };
    for (const auto& c : cases) {
        CAPTURE(c.code);
        CHECK(classify_sqlite_code(c.code) == c.expected);
    }
}
#endif

TEST_CASE("retryable categories") {
    CHECK(sqlock::error(errc::connection, "x").retryable());
    CHECK(sqlock::error(errc::conflict, "x").retryable());
    CHECK_FALSE(sqlock::error(errc::schema_missing, "x").retryable());
    CHECK_FALSE(sqlock::error(errc::invalid_argument, "x").retryable());
    CHECK_FALSE(sqlock::error(errc::lock_lost, "x").retryable());
}

TEST_CASE("a server out of connection slots is told apart from other connection failures") {
    using sqlock::error;
    using sqlock::is_server_full;
    // PostgreSQL: SQLSTATE 53300 covers max_connections, the reserved slots and role/database
    // CONNECTION LIMITs.
    CHECK(is_server_full(error(errc::connection, "FATAL: too many connections for role \"x\"",
                               "postgresql", 0, "53300")));
    CHECK(is_server_full(error(errc::timeout, "waited", "postgresql", 0, "53300")));
    CHECK_FALSE(is_server_full(error(errc::connection, "password", "postgresql", 0, "28P01")));
    CHECK_FALSE(is_server_full(error(errc::connection, "no database", "postgresql", 0, "3D000")));
    CHECK_FALSE(is_server_full(error(errc::connection, "Connection refused", "postgresql")));
    // MariaDB / MySQL
    CHECK(is_server_full(error(errc::connection, "Too many connections", "mysql", 1040, "08004")));
    CHECK(is_server_full(error(errc::connection, "max_user_connections", "mysql", 1203, "42000")));
    CHECK(is_server_full(error(errc::connection,
                               "User 'u' has exceeded the 'max_user_connections' resource "
                               "(current value: 2)",
                               "mysql", 1226, "42000")));
    CHECK_FALSE(is_server_full(error(errc::connection,
                                     "User 'u' has exceeded the 'max_questions' resource "
                                     "(current value: 10)",
                                     "mysql", 1226, "42000")));
    CHECK_FALSE(is_server_full(error(errc::connection, "Access denied", "mysql", 1045, "28000")));
    CHECK_FALSE(is_server_full(error(errc::connection, "Unknown database", "mysql", 1049)));
    CHECK_FALSE(is_server_full(error(errc::connection, "Can't connect", "mysql", 2003)));
    // libmariadb over TLS quotes the refusal it could not authenticate in a client error.
    CHECK(is_server_full(error(errc::connection,
                               "Received error packet before completion of TLS handshake. The "
                               "authenticity of the following error cannot be verified: 1040 - "
                               "Too many connections",
                               "mysql", 2002, "HY000")));
    CHECK_FALSE(is_server_full(error(errc::connection,
                                     "Received error packet before completion of TLS handshake. "
                                     "The authenticity of the following error cannot be "
                                     "verified: 1045 - Access denied",
                                     "mysql", 2002, "HY000")));
    // A SQLite code never means a full server; nor does an error without a backend.
    CHECK_FALSE(is_server_full(error(errc::connection, "x", "sqlite", 1040, "53300")));
    CHECK_FALSE(is_server_full(error(errc::connection, "x")));
}

TEST_CASE("a new connection that got no answer in time is told apart from a refused one") {
    using sqlock::error;
    using sqlock::is_connect_unanswered;
    // The texts seen with a stopped server (it accepts TCP, then never answers).
    CHECK(is_connect_unanswered(error(errc::connection,
                                      "postgresql: cannot connect to postgresql://u:***@h:5432/d: "
                                      "connection to server at \"127.0.0.1\", port 5432 failed: "
                                      "timeout expired",
                                      "postgresql")));
    CHECK(is_connect_unanswered(error(errc::connection,
                                      "mysql: cannot connect to mysql://u:***@h:3306/d: Lost "
                                      "connection to server at 'handshake: reading initial "
                                      "communication packet', system error: 110 (error 2013)",
                                      "mysql", 2013)));
    // Closed before any reply (a refusal lost under load, a server restarting).
    CHECK(is_connect_unanswered(error(errc::connection,
                                      "postgresql: cannot connect to ...: connection to server "
                                      "at \"127.0.0.1\", port 5432 failed: server closed the "
                                      "connection unexpectedly",
                                      "postgresql")));
    // Still recognised once `sqlock run --wait` gave up on it at its deadline.
    CHECK(is_connect_unanswered(error(errc::timeout,
                                      "lock \"x\" not granted within --wait: ... (postgresql: "
                                      "cannot connect to ...: timeout expired)",
                                      "postgresql")));
    // Refused, unknown host, wrong password: not timeouts.
    CHECK_FALSE(is_connect_unanswered(error(
        errc::connection, "postgresql: cannot connect to ...: Connection refused", "postgresql")));
    CHECK_FALSE(is_connect_unanswered(error(errc::connection,
                                            "postgresql: cannot connect to ...: password "
                                            "authentication failed for user \"u\"",
                                            "postgresql", 0, "28P01")));
    CHECK_FALSE(is_connect_unanswered(error(errc::connection,
                                            "mysql: cannot connect to ...: Can't connect to server "
                                            "on '127.0.0.1' (111) (error 2003)",
                                            "mysql", 2003)));
    // A statement that timed out on an open connection is not a connect timeout.
    CHECK_FALSE(is_connect_unanswered(
        error(errc::connection, "postgresql: connection lost: timeout expired", "postgresql")));
    CHECK_FALSE(is_connect_unanswered(error(errc::timeout, "x", "sqlite")));
}

#ifdef SQLOCK_TEST_POSTGRESQL
TEST_CASE("postgresql connection refusals for capacity are recognised in libpq's text") {
    // The texts PostgreSQL 15 sends (all SQLSTATE 53300), as libpq reports them.
    for (const char* text :
         {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  sorry, too many "
          "clients already",
          "connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  remaining connection "
          "slots are reserved for non-replication superuser connections",
          "FATAL:  remaining connection slots are reserved for roles with the SUPERUSER attribute",
          "FATAL:  too many connections for role \"app\"",
          "FATAL:  too many connections for database \"app\""}) {
        CAPTURE(text);
        CHECK(postgres_refused_for_capacity(text));
    }
    for (const char* text :
         {"FATAL:  password authentication failed for user \"app\"",
          "FATAL:  database \"nope\" does not exist",
          "connection to server at \"10.0.0.1\", port 5432 failed: Connection refused",
          "timeout expired"}) {
        CAPTURE(text);
        CHECK_FALSE(postgres_refused_for_capacity(text));
    }
}
#endif
