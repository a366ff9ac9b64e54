// The help texts of the sqlock command-line tool, as printed.
#pragma once

namespace sqlock::cli {

/// `sqlock --help`: the commands, the global options, exit codes and durations.
extern const char* const main_help;
/// `sqlock migrate --help`.
extern const char* const migrate_help;
/// `sqlock run --help`, with the scheduled jobs of --once-per.
extern const char* const run_help;
/// `sqlock history --help`.
extern const char* const history_help;
/// `sqlock check --help`.
extern const char* const check_help;
/// `sqlock status --help` and `sqlock list --help`, with the fields of --json and --prometheus.
extern const char* const list_help;
/// `sqlock reap --help`.
extern const char* const reap_help;
/// `sqlock leader --help`.
extern const char* const leader_help;
/// `sqlock release --help`.
extern const char* const release_help;
/// `sqlock reseed --help`.
extern const char* const reseed_help;

} // namespace sqlock::cli
