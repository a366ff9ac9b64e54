// Internal: the one interface strategies and core code use to talk to any backend.
// Backends (src/backends/*) implement it; nothing above it sees libpqxx, Connector/C++ or
// sqlite3 types.
#pragma once

#include "core/statements.hpp"

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

/// One database connection. Not thread-safe: a session is used by one thread at a time
/// (the pool hands it out exclusively).
///
/// Every method reports failure by throwing sqlock::error with the backend's native code
/// translated (see each backend's error table). After an errc::connection error the session
/// reports usable() == false and the pool discards it.
class session {
public:
    virtual ~session() = default;

    /// Runs catalog statement `id` with `params` bound to $1, $2, ... in order. Outside
    /// begin()/commit() each call is its own autocommit transaction. One round trip.
    virtual result execute(statement id, std::span<const param> params) = 0;
    result execute(statement id, std::initializer_list<param> params) {
        return execute(id, std::span<const param>(params.begin(), params.size()));
    }

    /// Runs SQL text without parameters; may hold several statements separated by ";" at line
    /// ends (migration scripts). Used for DDL only.
    virtual void execute_script(std::string_view sql) = 0;

    /// Explicit transactions. On SQLite begin() is BEGIN IMMEDIATE (takes the write lock up
    /// front so it never fails half-way with SQLITE_BUSY).
    virtual void begin() = 0;
    virtual void commit() = 0;
    virtual void rollback() noexcept = 0;

    /// False once the connection is known to be broken.
    virtual bool usable() const noexcept = 0;
};

} // namespace sqlock::detail
