// The sqlock command-line tool: argument parsing helpers (pure, unit-tested).
#pragma once

#include <chrono>
#include <nlohmann/json_fwd.hpp>
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

/// `v` as JSON text on one line, laid out as sqlock has always printed it: `{"key": value, ...}`
/// (", " and ": " between items, no newline). Strings are escaped by nlohmann::json; UTF-8 passes
/// through, bytes that are not UTF-8 become U+FFFD, so the text is always valid JSON.
std::string json_line(const nlohmann::ordered_json& v);

/// An array of `rows`, one per line: "[\n {...},\n {...}\n]\n", or "[]\n" when empty.
std::string json_rows(const nlohmann::ordered_json& rows);

} // namespace sqlock::cli
