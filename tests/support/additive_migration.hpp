// A migration the schema compatibility contract allows (docs: operations, "Upgrades"), as a
// later release might ship one: a new table and a nullable column on the lock table. For the
// rolling-upgrade tests (tests/conformance/upgrade_test.cpp) and the torture's migrate
// nemesis (tools/torture/migrate.cpp), which apply it while locks are held and waited for.
#pragma once

#include "database/database_impl.hpp"

#include <sqlock/database.hpp>
#include <string>

namespace sqlock::test_support {

/// Migration `version`, compatible from `from`: table <prefix>extra_<version> and column
/// note_<version> on the lock table. On MariaDB, whose DDL commits as it goes (a step may run
/// again after a failed try), every statement is idempotent, as the contract asks.
inline detail::database_impl::migration additive_migration(database& db, int version, int from) {
    auto& impl = detail::impl_of(db);
    const auto locks = impl.expand("{locks}");
    const auto v = std::to_string(version);
    const auto extra = db.table_prefix() + "extra_" + v;
    std::string sql;
    switch (db.backend()) {
    case backend_kind::postgresql:
        sql = "CREATE TABLE " + extra + " (id INTEGER PRIMARY KEY, note TEXT);\n" + "ALTER TABLE " +
              locks + " ADD COLUMN note_" + v + " text NULL;\n";
        break;
    case backend_kind::mysql:
        sql = "CREATE TABLE IF NOT EXISTS " + extra +
              " (id INT PRIMARY KEY, note TEXT) ENGINE = InnoDB;\n" + "ALTER TABLE " + locks +
              " ADD COLUMN IF NOT EXISTS note_" + v + " VARCHAR(64) NULL;\n";
        break;
    case backend_kind::sqlite:
        sql = "CREATE TABLE " + extra + " (id INTEGER PRIMARY KEY, note TEXT);\n" + "ALTER TABLE " +
              locks + " ADD COLUMN note_" + v + " TEXT;\n";
        break;
    }
    return {version, v + "_test_additive.sql", sql, from};
}

} // namespace sqlock::test_support
