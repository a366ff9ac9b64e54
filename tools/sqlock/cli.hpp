// The sqlock command-line tool: argument parsing helpers (pure, unit-tested).
#pragma once

#include <chrono>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// A command's arguments (those before "--", the global options taken out) in the order its
/// parser reads them, or what is wrong with them.
struct command_args {
    std::vector<std::string> args; ///< NAME first (for a command that takes one), then options
    std::string error;             ///< non-empty: a usage error, to print as it is
};

/// Brings the arguments of `command` into one form, so that every command accepts the habits
/// of the tools around it: "--opt=value" becomes "--opt", "value" (for every option; a flag
/// given a value is an error); options may come before or after the NAME of run, release,
/// leader, history and check (the NAME is moved to the front; a value option's value is never
/// taken for the NAME); a value option without its value is an error. Words left over after
/// the NAME are an error; for `run` with a hint to put the command after "--". Commands without
/// a NAME keep their order (only "--opt=value" is split); unknown commands are left alone.
command_args normalize_args(std::string_view command, std::vector<std::string> args);

/// `text` with its control characters (bytes below 0x20, and 0x7f) written as escapes: "\n",
/// "\t", "\x1f" (and a backslash as "\\"), so that a name prints on one line, readably.
std::string escape_control(std::string_view text);

/// A lock's name as people read it: an internal name "NAME<0x1f>ROLE" (a semaphore's permit,
/// a shared mutex's reader or writer) becomes "NAME [ROLE]"; control characters escaped.
std::string readable_lock_name(std::string_view internal_name);

/// A message (the library's, which may quote internal names) for a terminal: each internal
/// name's "<0x1f>ROLE" up to the closing quote becomes " [ROLE]", other control characters are
/// escaped as by escape_control (a backslash is left as it is).
std::string readable_message(std::string_view message);

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
