// The sqlock command-line tool: argument parsing helpers (pure, unit-tested).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace sqlock::cli {

/// Exit codes (sysexits.h values where one fits). Documented in `sqlock --help`.
enum exit_code : int {
    exit_ok = 0,
    exit_usage = 64,       ///< EX_USAGE: bad command line
    exit_unavailable = 69, ///< EX_UNAVAILABLE: database unreachable / authentication failed
    exit_software = 70,    ///< EX_SOFTWARE: any other sqlock or database error
    exit_timeout = 75,     ///< EX_TEMPFAIL: the lock was not granted within --wait
    exit_lock_lost = 76,   ///< EX_PROTOCOL: run: the lock was lost while the command ran
    exit_not_found = 1,    ///< release --force: nothing to release
    exit_config = 78,      ///< EX_CONFIG: lock tables missing or mismatched: run sqlock migrate
};

/// Parses "500ms", "30s", "10m", "2h", "1d" or a bare number of seconds ("0", "1.5").
/// Returns nullopt for anything else, including negative values.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

/// JSON string literal for `s` (quotes included; control characters and non-UTF-8 bytes
/// escaped).
std::string json_quote(std::string_view s);

} // namespace sqlock::cli
