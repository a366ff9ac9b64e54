// Native error codes -> sqlock categories, per backend (table-driven; no server needed).
#include "backends/backend.hpp"

#include <doctest/doctest.h>
#include <sqlite3.h>

using sqlock::errc;
using namespace sqlock::detail;

TEST_CASE("postgresql SQLSTATE classification") {
    const struct {
        const char* sqlstate;
        errc expected;
    } cases[] = {
        {"08006", errc::connection}, {"08001", errc::connection}, {"28P01", errc::connection},
        {"3D000", errc::connection}, {"57P01", errc::connection}, {"42P01", errc::schema_missing},
        {"55P03", errc::timeout},    {"57014", errc::timeout},    {"40001", errc::conflict},
        {"40P01", errc::conflict},   {"23505", errc::backend},    {"22001", errc::backend},
        {"42601", errc::backend},
    };
    for (const auto& c : cases) {
        CAPTURE(c.sqlstate);
        CHECK(classify_postgres_sqlstate(c.sqlstate) == c.expected);
    }
}

TEST_CASE("mysql errno classification") {
    const struct {
        int code;
        errc expected;
    } cases[] = {
        {1045, errc::connection}, {2003, errc::connection}, {2006, errc::connection},
        {2013, errc::connection}, {1049, errc::connection}, {1146, errc::schema_missing},
        {1205, errc::timeout},    {3572, errc::timeout},    {1213, errc::conflict},
        {1062, errc::backend},    {1406, errc::backend},    {1064, errc::backend},
    };
    for (const auto& c : cases) {
        CAPTURE(c.code);
        CHECK(classify_mysql_errno(c.code) == c.expected);
    }
}

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

TEST_CASE("retryable categories") {
    CHECK(sqlock::error(errc::connection, "x").retryable());
    CHECK(sqlock::error(errc::conflict, "x").retryable());
    CHECK_FALSE(sqlock::error(errc::schema_missing, "x").retryable());
    CHECK_FALSE(sqlock::error(errc::invalid_argument, "x").retryable());
    CHECK_FALSE(sqlock::error(errc::lock_lost, "x").retryable());
}
