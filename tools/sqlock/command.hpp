// The sqlock command-line tool: what its commands share (the command line as parsed, connecting,
// durations, output helpers) and one entry point per command, each in its own cmd_*.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <sqlock/database.hpp>
#include <sqlock/error.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sqlock::cli {

/// Ordered: the --json outputs keep the field order the help texts document.
using ojson = nlohmann::ordered_json;

/// A bad command line: main() prints it with "(see sqlock --help)" and exits 64 (exit_usage).
struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The command line as parse_args() (main.cpp) reads it.
struct options {
    std::string url;
    /// Every --url given, in order: several are the members of a quorum lock (run, migrate).
    std::vector<std::string> urls;
    sqlock::connect_options connect;
    std::string command;
    std::vector<std::string> args; ///< command arguments before "--"
    std::vector<std::string> exec; ///< after "--"
    bool help = false;
    bool password_file_flag = false; ///< --password-file given (not only $SQLOCK_PASSWORD_FILE)
    std::string args_error; ///< what is wrong with the command's arguments (normalize_args)
};

/// What the command `run` starts is told about the database (see child_environment): set
/// once in main(), before any thread starts.
struct job_database {
    std::string url;           ///< the URL sqlock uses; the job gets it without the password
    std::string password_file; ///< absolute path of --password-file; "" without the flag
};
/// The process's one job_database.
job_database& database_for_jobs();

/// `value`, given to option `flag`, as a duration (parse_duration); usage_error when it is none.
std::chrono::milliseconds duration_arg(const std::string& flag, const std::string& value);

/// Connects to o.url with o.connect; usage_error when there is no URL.
sqlock::database open(const options& o);

using steady = std::chrono::steady_clock;

/// The deadline of a wait of `wait` from now: time_point::max() without one (wait as long as
/// it takes), time_point::min() for no wait at all (--wait 0).
steady::time_point deadline_of(std::optional<std::chrono::milliseconds> wait);

/// `run --wait`: the deadline passed while the database could not be reached in a way worth
/// waiting out (see open_waiting): like a lock held for all of --wait, exit 75.
class not_granted_in_time : public sqlock::error {
public:
    using sqlock::error::error;
};

/// open(o) for a command that waits (`run`): a database server without a free connection
/// slot (sqlock::is_server_full), or one that took a new connection and never answered it
/// (sqlock::is_connect_unanswered: swamped by a fleet starting at once), is
/// waited out until `deadline`, with the library's backoff for a full server (a random pause
/// in [d/2, 3d/2), d from 50 ms doubling to 2 s), instead of failing at once; at the deadline,
/// errc::timeout that says so (exit 75). So is a failover in progress when the URL lists
/// several hosts: hosts refusing or dropping connections (retryable errc::connection) and
/// only standbys answering (errc::topology), until a standby is promoted. A connect still in
/// flight at the deadline is abandoned (errc::timeout, exit 75). With no time to wait
/// (time_point::min(); a connect unanswered within 900 ms is exit 75 too) and for every other
/// failure (wrong password, unknown database,
/// connection refused by a single-host URL, unknown host) the error is reported at once.
sqlock::database open_waiting(const options& o, steady::time_point deadline,
                              const std::string& lock_name);

/// "3h12m", "45.2s": a short human duration.
std::string human_ms(std::int64_t ms);

/// `text` with control characters escaped (\n, \t, \r, \xHH), so that a name cannot break
/// a table row or a message line.
std::string printable(std::string_view text);

/// A value, or null.
template <typename T>
ojson optional_json(const std::optional<T>& v) {
    return v ? ojson(*v) : ojson(nullptr);
}

/// Nagios plugin exit codes (`check`).
enum nagios : int { nagios_ok = 0, nagios_warning = 1, nagios_critical = 2, nagios_unknown = 3 };

// The commands. Each reads its arguments from o.args (its NAME first, for those that take
// one), writes what it has to say to stdout (progress and failures of `run` to stderr) and
// returns the exit status (cli.hpp). A bad command line throws usage_error, a database
// failure sqlock::error: main() turns them into a message on stderr and an exit status.

/// `migrate [--print | --status]`: creates or upgrades the lock tables; --print writes the
/// DDL without connecting, --status lists each migration as applied or pending. exit_ok.
int cmd_migrate(const options& o);

/// `run NAME [...] -- CMD`: takes the lock (a mutex, a semaphore's permit, a shared mutex's
/// side) or, with --once-per/--slot, runs CMD as a scheduled job (sqlock::job); runs CMD
/// under it and returns CMD's status (128+N when killed by signal N); exit_timeout when not
/// granted within --wait, exit_lock_lost when the lock was lost or at risk while CMD ran,
/// --skipped-exit when the job's slot was already done.
int cmd_run(const options& o);

/// `status` and `list` (o.command says which): the lock rows as a table, --json or
/// --prometheus; `status` adds a summary line and the scheduled jobs (--jobs: only those).
/// Takes no lock; exit_ok.
int cmd_status(const options& o);

/// `status` / `list` with several --url: what the members of a quorum say of each quorum lock
/// (sqlock::quorum_status), as text or --json, filtered by --name GLOB. exit_ok.
int cmd_status_quorum(const options& o);

/// `release NAME --force` with several --url: frees lock NAME on every quorum member that
/// answers (sqlock::quorum_force_release). exit_ok when released, exit_not_found when no
/// answering member held it, exit_unavailable when fewer than a majority answered.
int cmd_release_quorum(const options& o, const std::string& name, const std::string& actor,
                       bool json);

/// `reseed MEMBER` with three or more --url: raises a restored quorum member's marks from the
/// other members (sqlock::quorum_reseed). exit_ok; exit_unavailable when too few answered.
int cmd_reseed(const options& o);

/// `reap`: deletes expired lock rows and old run-ledger rows in batches (--dry-run: counts
/// them); prints what it did, as text or --json. exit_ok.
int cmd_reap(const options& o);

/// `release NAME --force [--permit K]`: breaks someone else's hold of lock NAME and records
/// it in the audit table. exit_ok when released, exit_not_found when nobody held it.
int cmd_release(const options& o);

/// `leader NAME [--json]`: the current leader of election NAME, without campaigning.
/// exit_ok when there is a leader, exit_not_found when there is none.
int cmd_leader(const options& o);

/// `history NAME [--limit N] [--json]`: the run ledger of scheduled job NAME, newest first.
/// exit_ok.
int cmd_history(const options& o);

/// `check NAME [--max-age D] [--warn-age D]`: a Nagios plugin line for scheduled job NAME;
/// returns a nagios code. Never throws: whatever prevents an answer is nagios_unknown.
int cmd_check(const options& o);

} // namespace sqlock::cli
