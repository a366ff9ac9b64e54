// Internal: what each backend provides to the core. One implementation per backend under
// src/backends/<backend>/; the core picks one by connection_config::kind.
#pragma once

#include "core/config.hpp"
#include "core/session.hpp"
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

/// Quotes an (already validated) identifier for the backend: "x" or `x`.
std::string quote_identifier(backend_kind kind, std::string_view identifier);

/// Native error -> category tables (each backend's errors.cpp; unit-tested without a server).
errc classify_postgres_sqlstate(std::string_view sqlstate);
errc classify_mysql_errno(int code);
errc classify_sqlite_code(int extended_code);

} // namespace sqlock::detail
