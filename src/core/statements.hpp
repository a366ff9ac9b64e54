// Internal: the catalog of runtime SQL statements.
//
// The SQL text of statement X for backend B lives in sql/B/X.sql and is embedded at build time.
// Conventions in those files:
//   - parameters are written $1, $2, ... on every backend (a backend rewrites them to its own
//     placeholder syntax; a number may appear several times);
//   - identifiers are written {locks}, {token_seq}, {token_counter}, {migrations} and replaced by
//   the
//     quoted, prefixed table names when a database is opened;
//   - boolean result columns are cast to integers (0/1).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace sqlock::detail {

enum class statement : std::size_t {
    acquire_unique_key,   ///< $1 name $2 owner $3 ttl_ms $4 host $5 pid $6 held token|NULL
                          ///<   -> 0 or 1 row (token, hold_count, granted)
    release_delete,       ///< $1 name $2 owner $3 token -> affected rows
    release_decrement,    ///< $1 name $2 owner $3 token $4 current hold count -> affected rows
    inspect_lock,         ///< $1 name -> 0..1 row (owner, token, hold_count, expires_in_ms)
    list_locks,           ///< -> rows (name owner host pid strategy token hold_count
                          ///<          acquired_at expires_at expires_in_ms)
    reap_expired,         ///< $1 batch -> affected rows
    migrations_bootstrap, ///< DDL: create the schema-version table if missing
    migrations_applied,   ///< -> rows (version)
    migration_record,     ///< $1 version $2 name -> affected rows
    migrate_lock,         ///< take the cross-process migration lock (session level)
    migrate_unlock,       ///< release it
    count_
};

inline constexpr std::size_t statement_count = static_cast<std::size_t>(statement::count_);

/// File stem of each statement: sql/<backend>/<name>.sql.
inline constexpr std::array<std::string_view, statement_count> statement_names = {
    "acquire_unique_key", "release_delete", "release_decrement",    "inspect_lock",
    "list_locks",         "reap_expired",   "migrations_bootstrap", "migrations_applied",
    "migration_record",   "migrate_lock",   "migrate_unlock",
};

inline std::string_view name_of(statement id) {
    return statement_names[static_cast<std::size_t>(id)];
}

/// A backend's statements with table names substituted.
struct sql_catalog {
    std::array<std::string, statement_count> text;
    std::array<bool, statement_count> noop{}; ///< the file holds only comments: nothing to send
    const std::string& operator[](statement id) const { return text[static_cast<std::size_t>(id)]; }
    bool is_noop(statement id) const { return noop[static_cast<std::size_t>(id)]; }
};

} // namespace sqlock::detail
