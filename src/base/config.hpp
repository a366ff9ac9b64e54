// Internal: a parsed connection URL plus the options that shape every connection.
#pragma once

#include "sqlock/database.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace sqlock::detail {

/// What a session is for; backends set sessions up differently for each.
enum class session_purpose {
    pooled,      ///< short autocommit statements from the shared pool
    lock_holder, ///< keeps a select_for_update lock: its transaction stays open for the hold
};

/// One server of a URL's host list.
struct endpoint {
    std::string host;
    int port = 0;
};

/// Most hosts one URL may list.
inline constexpr std::size_t max_endpoints = 16;

struct connection_config {
    backend_kind kind{}; ///< set by parse_url
    std::string host;    ///< server host (PostgreSQL, MySQL): the one to connect to
    int port = 0;        ///< its port
    /// Every server the URL lists, in order (PostgreSQL, MySQL): host/port is the first until
    /// a backend that tries them one by one sets it to the one it tries.
    std::vector<endpoint> endpoints;
    std::string user;     ///< percent-decoded
    std::string password; ///< percent-decoded; never put into messages
    std::string database; ///< database name (PostgreSQL, MySQL)
    std::string path;     ///< SQLite file path
    /// Query-string options (?key=value&...), percent-decoded, in order.
    std::vector<std::pair<std::string, std::string>> options;
    std::chrono::milliseconds connect_timeout{5000};
    std::chrono::milliseconds io_timeout{30000};
    session_purpose purpose = session_purpose::pooled;
    /// SQLite lock_holder sessions open this per-name lock file instead of `path`.
    std::string lock_file;
    /// host:pid:nonce of this process; lock_holder sessions carry it where the server shows
    /// it to operators (MariaDB connection attribute "sqlock_process").
    std::string client_identity;
    /// The URL with the password replaced by "***": the only form used in messages.
    std::string redacted_url;
    /// SQLite: create `path` when missing (connect_options::create_sqlite_file).
    bool create_file = true;
};

/// Parses a sqlock URL (see sqlock::connect). Throws errc::invalid_argument with a message
/// that shows the redacted URL and says what is wrong.
connection_config parse_url(std::string_view url);

/// Copies the options that only some backends read into `config` (a local file's creation).
void apply_backend_options(connection_config& config, const connect_options& options);

/// `message` with the password field of every URL in it ("scheme://user:PASSWORD@host...")
/// and every connection-string value "password=..." replaced by "***", found by structure, not
/// by the password's text: user, host and database names stay whole. For messages that quote a
/// server's or a client library's text (neither libpq nor MariaDB Connector/C quotes the
/// password or the connection string today; this holds should a future version do so).
std::string redact_passwords(std::string message);

/// The password in the file at `path` (connect_options::password_file): one trailing newline
/// is dropped. Throws errc::invalid_argument, naming the file and the fix, for a file that is
/// not a regular file, that group or others may read or write, that is empty or unreadable.
std::string read_password_file(const std::string& path);

} // namespace sqlock::detail
