// PostgreSQL SQLSTATE -> sqlock error category. Pure data; unit-tested without a server.
// Codes: https://www.postgresql.org/docs/15/errcodes-appendix.html
#include "backends/backend.hpp"

#include <array>
#include <string_view>

namespace sqlock::detail {

namespace {

/// A 5-character entry matches that SQLSTATE exactly; a 2-character entry matches its class.
struct sqlstate_rule {
    std::string_view code;
    errc category;
};

constexpr std::array<sqlstate_rule, 23> sqlstate_rules{{
    // --- exact codes (checked first) ---
    {"28000", errc::connection},     // invalid_authorization_specification (pg_hba.conf reject)
    {"28P01", errc::connection},     // invalid_password: authentication failed
    {"3D000", errc::connection},     // invalid_catalog_name: the database does not exist
    {"53300", errc::connection},     // too_many_connections: the server refused us; retry later
    {"57P01", errc::connection},     // admin_shutdown (also pg_terminate_backend)
    {"57P02", errc::connection},     // crash_shutdown
    {"57P03", errc::connection},     // cannot_connect_now (server starting up / in recovery)
    {"25P03", errc::connection},     // idle_in_transaction_session_timeout: session was closed
    {"40003", errc::connection},     // statement_completion_unknown: outcome unknown, like a lost
                                     //   reply; re-read instead of retrying blindly
    {"40002", errc::backend},        // transaction_integrity_constraint_violation: retry won't help
    {"42P01", errc::schema_missing}, // undefined_table: lock tables not created yet
    {"42883", errc::schema_missing}, // undefined_function: a function from a migration is missing
    {"55P03", errc::timeout},        // lock_not_available: lock_timeout / NOWAIT
    {"57014", errc::timeout},        // query_canceled: statement_timeout (or a cancel request)
    {"40001", errc::conflict},       // serialization_failure
    {"40P01", errc::conflict},       // deadlock_detected
    {"42501", errc::backend},        // insufficient_privilege: a grant is missing, not transient
    // --- classes ---
    {"08", errc::connection}, // connection_exception
    {"40", errc::conflict},   // transaction_rollback: rolled back for concurrency; retry
    {"22", errc::backend},    // data_exception (bad encoding, out of range...)
    {"23", errc::backend},    // integrity_constraint_violation
    {"42", errc::backend},    // syntax_error_or_access_rule_violation (a bug in our SQL)
    {"XX", errc::backend},    // internal_error
}};

} // namespace

errc classify_postgres_sqlstate(std::string_view sqlstate) {
    for (const auto& rule : sqlstate_rules) {
        if (rule.code.size() == 5 && rule.code == sqlstate)
            return rule.category;
    }
    if (sqlstate.size() == 5) {
        for (const auto& rule : sqlstate_rules) {
            if (rule.code.size() == 2 && sqlstate.starts_with(rule.code))
                return rule.category;
        }
    }
    return errc::backend;
}

bool postgres_refused_for_capacity(std::string_view message) noexcept {
    for (const std::string_view text :
         {"sorry, too many clients already", "remaining connection slots are reserved",
          "too many connections for role", "too many connections for database"}) {
        if (message.find(text) != std::string_view::npos)
            return true;
    }
    return false;
}

} // namespace sqlock::detail
