// Internal: what each backend provides to the core. One implementation per backend under
// src/backends/<backend>/; the core picks one by connection_config::kind.
#pragma once

#include "base/config.hpp"
#include "base/session.hpp"
#include "sqlock/error.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace sqlock::detail {

/// Opens one connection and applies the session settings sqlock relies on (timeouts, strict
/// modes, time zone, WAL...). Throws sqlock::error (errc::connection for unreachable servers
/// and failed authentication; the message never contains the password).
std::unique_ptr<session> open_postgres_session(const connection_config& config,
                                               const sql_catalog& catalog);
std::unique_ptr<session> open_mysql_session(const connection_config& config,
                                            const sql_catalog& catalog);
std::unique_ptr<session> open_sqlite_session(const connection_config& config,
                                             const sql_catalog& catalog);

/// Appended to the message of a connection refused for lack of server slots (is_server_full):
/// what it means and what to do about it.
inline constexpr std::string_view postgres_full_hint =
    "; the server is at its connection limit (max_connections, or a role's or database's "
    "CONNECTION LIMIT): raise the limit, or put a connection pooler such as PgBouncer in front "
    "of it";
inline constexpr std::string_view mysql_full_hint =
    "; the server is at its connection limit (max_connections, or max_user_connections / an "
    "account's MAX_USER_CONNECTIONS): raise the limit, or put a connection pooler such as "
    "ProxySQL in front of it";

/// PostgreSQL reports a failed connection attempt as libpq text only (no SQLSTATE reaches the
/// client). True when that text is one of the server's "no free connection slot" refusals, all
/// SQLSTATE 53300 too_many_connections (PostgreSQL 15: "sorry, too many clients already",
/// "remaining connection slots are reserved for ...", "too many connections for role/database
/// ..."). The server's untranslated (lc_messages C/English) texts are recognised.
bool postgres_refused_for_capacity(std::string_view libpq_message) noexcept;

/// The directory of a backend's embedded SQL: "sql/<dir>/", "migrations/<dir>/".
std::string_view backend_dir(backend_kind kind) noexcept;

/// Quotes an (already validated) identifier for the backend: "x" or `x`.
std::string quote_identifier(backend_kind kind, std::string_view identifier);

/// Native error -> category tables (each backend's errors.cpp; unit-tested without a server).
errc classify_postgres_sqlstate(std::string_view sqlstate);
errc classify_mysql_errno(int code);
errc classify_sqlite_code(int extended_code);

} // namespace sqlock::detail
