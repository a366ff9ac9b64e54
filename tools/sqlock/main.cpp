// sqlock — command-line tool: migrate, run a command under a lock, list locks.
#include "cli.hpp"
#include "job_group.hpp"
#include "lock_roles.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fnmatch.h>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <poll.h>
#include <random>
#include <spawn.h>
#include <sqlock/sqlock.hpp>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace sqlock::cli;
/// Ordered: the --json outputs keep the field order the help texts document.
using ojson = nlohmann::ordered_json;

constexpr const char* main_help =
    R"(sqlock — distributed locks in PostgreSQL, MySQL/MariaDB or SQLite

usage: sqlock [--url URL] COMMAND [OPTIONS]

commands:
  migrate   create or upgrade the lock tables (--print: the DDL; --status: versions)
  run       run a command while holding a lock (flock(1) for a fleet); with --once-per,
            at most one successful run per period across the fleet (scheduled jobs)
  history   the run ledger of a scheduled job (--json)
  check     Nagios-style check: did job NAME succeed recently enough? (--max-age D)
  status    who holds what, since when, until when (also: list; --json, --prometheus)
  reap      delete expired lock rows in small batches (for cron / systemd timers)
  release   break-glass: release someone else's lock (--force)
  leader    who leads election NAME (sqlock::leader_election): id, term, lease (--json)

global options (before or after COMMAND):
  --url URL            database URL; default: $SQLOCK_URL
                       postgresql://user:pw@host:port/db, mysql://..., mariadb://...,
                       sqlite:///abs/path.db, sqlite:relative.db
  --password-file F    read the password of a URL without one from file F (mode 600:
                       private to its owner); default: $SQLOCK_PASSWORD_FILE
  --table-prefix P     prefix of sqlock's tables (default sqlock_)
  --connect-timeout D  bound on connecting (default 5s); PostgreSQL keeps it to the
                       millisecond, MariaDB in whole seconds (rounded up: 500ms is 1s)
  -h, --help           help for sqlock or for COMMAND
  --version            print the version

exit codes: 0 ok; 1 release: nothing to release, leader: no leader; 64 bad usage; 69 database unreachable or
            login failed; 70 other error; 75 lock not granted within --wait; 76 lock lost
            while the command ran; 78 lock tables missing or of another version (migrate), or
            a database setup that cannot keep the lock safe (a standby; see `sqlock status`).
            `sqlock run` otherwise exits with the command's status (128+N if killed by signal N);
            `run --once-per` exits 0 (or --skipped-exit N) when the slot was already done.
            `check` uses Nagios codes: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
durations: 500ms, 30s, 10m, 2h, 1d, or a bare number of seconds.
options take their value as "--ttl 5s" or "--ttl=5s", before or after a command's NAME
(sqlock release --force NAME); what `run` starts always comes after "--". Commands that only
read (status, list, history, check, leader, migrate --status) never create an SQLite file.
)";

constexpr const char* migrate_help = R"(usage: sqlock [--url URL] migrate [--print | --status]

Creates or upgrades sqlock's tables in the database. Idempotent; safe when several hosts run it
at once. With --print, writes the DDL for the URL's backend to stdout instead (nothing is
applied; the database is not contacted), for a DBA's own migration tool. With --status, lists
each migration as applied or pending.
)";

constexpr const char* run_help =
    R"(usage: sqlock [--url URL] run NAME [--permits N | --shared | --exclusive [--max-readers N]]
                          [--strategy S] [--ttl D] [--wait D] [--grace D] [--no-renew] -- CMD [ARGS...]
       sqlock [--url URL] run NAME --once-per PERIOD [--slot KEY] [--skipped-exit N] [--verbose]
                          [--strategy S] [--ttl D] [--wait D] [--grace D] -- CMD [ARGS...]

Acquires lock NAME, runs CMD with the grant's fencing token in $SQLOCK_TOKEN (and the name in
$SQLOCK_NAME), releases the lock when CMD exits, and exits with CMD's status.

  --permits N    a semaphore: at most N commands run under NAME at once, across hosts (each
                 holds one permit, numbered 0 to N-1, in $SQLOCK_PERMIT; every process of
                 the fleet should pass the same N). Waiters are served in order.
  --shared       a reader of the reader-writer lock NAME: runs beside other --shared
                 commands, never beside an --exclusive one
  --exclusive    the writer of the reader-writer lock NAME: runs alone; readers that come
                 after it wait for it (a plain run NAME is a separate mutex, not this lock)
  --max-readers N  readers of NAME at once (default 16; every process should pass the same)
  --strategy S   unique_key (default), select_for_update or optimistic_version
  --ttl D        lease length (default 30s). The lock is renewed every D/3 while CMD runs, so
                 a holder that dies frees it within D (select_for_update: at once)
  --wait D       how long to wait for the lock (default: forever; 0 = one try).
                 When the lock is not granted in time, CMD does not run and sqlock exits 75.
                 A database server refusing connections because it is at its connection
                 limit is waited out within D too (exit 75 if it still refuses at the end);
                 a wrong password, unknown database or unreachable server fail at once (69),
                 but with several hosts in the URL a failover in progress is waited out.
                 sqlock returns within D + 1s whatever the server does: a connect still
                 in flight at the end is abandoned (exit 75; --wait 0: after 900 ms), and a
                 grant later than D + 1s is given back. On a terminal, a line on stderr
                 says who holds the lock and for how long while it waits
  --grace D      when renewals fail while CMD runs, CMD's process group gets SIGTERM, then
                 SIGKILL after D, timed so that it is gone before the lease can end (at
                 most half the TTL; default 10s, at most a quarter of the TTL); a lock lost
                 outright (taken over, force-released, its session killed) gets SIGKILL at
                 once; either way sqlock exits 76
  --no-renew     do not renew: CMD is stopped before --ttl has passed (as with --grace)

SIGINT, SIGTERM and SIGHUP are passed on to CMD.

Scheduled jobs (every host fires NAME from its own cron or timer; the guide "Scheduled jobs on
a fleet", docs/site/guides/scheduled-jobs.md): CMD succeeds at most once per slot across the fleet, for clock and cron skew below
PERIOD/2, on the database clock. A firing belongs to the slot whose opening firing fired less
than PERIOD/2 before or after it; a host that fires while a run of its slot is in progress
waits for the outcome: success -> CMD does not run here; failure, loss, or a crashed runner
whose lease ran out -> this host takes the slot over and runs CMD. Every attempt is recorded
(sqlock history NAME); CMD gets $SQLOCK_SLOT besides $SQLOCK_TOKEN and $SQLOCK_NAME.
  --once-per P       the period, 1s to 366d
  --slot KEY         name the slot yourself ("2026-11-22"): done once any run with KEY succeeded
                     (with or without --once-per; then --once-per only feeds status and check)
  --wait D           how long to wait for a run in progress elsewhere (default: PERIOD; forever
                     with --slot alone). Not granted in time: exit 75, CMD did not run
  --skipped-exit N   exit status when the slot was already done (default 0: cron stays quiet)
  --verbose          say on stderr what was decided (skipped, ran, took over)
--once-per needs a lease strategy (unique_key, optimistic_version) and renewal (no --no-renew).
)";

constexpr const char* history_help =
    R"(usage: sqlock [--url URL] history NAME [--limit N] [--json]

The run ledger of scheduled job NAME (sqlock run --once-per), newest first (default 20 rows):
slot, outcome (running, succeeded, failed, lost, abandoned), host:pid, fencing token, start on
the database clock, duration and exit status or signal. Skipped firings are only counted.
An abandoned attempt's end (and duration) is when a later holder of the job's lock found it.
  --json   an array; each object has exactly: name, slot, token, owner, host, pid, period_ms,
           started_at (UTC "YYYY-MM-DDTHH:MM:SS.mmmZ"), started_ms, ended_ms, duration_ms,
           exit_status, signal (null when none), outcome, message. *_ms are integers (ms since
           1970 for times), null while running.
)";

constexpr const char* check_help =
    R"(usage: sqlock [--url URL] check NAME [--max-age D] [--warn-age D]

A monitoring check (Nagios/Icinga plugin conventions) for scheduled job NAME. One line on
stdout, with performance data. Exit:
  0 OK        the last success started at most --max-age ago (and the last attempt succeeded)
  1 WARNING   older than --warn-age, or the last attempt failed / was lost / abandoned
  2 CRITICAL  no success within --max-age (default: 1.5 x the job's period), or never
  3 UNKNOWN   the job never fired, the database cannot be read, or bad usage
)";

constexpr const char* list_help =
    R"(usage: sqlock [--url URL] status [--json | --prometheus] [--expired] [--jobs] [--name GLOB]
       sqlock [--url URL] list   (the same, without the summary line)

For every lock row: name, fencing token, hold count, strategy, holder (host:pid), how long it
has been held, and when its lease ends (relative and absolute UTC, by the database clock).
select_for_update holders: PostgreSQL always; SQLite from the lock files; MariaDB only with
its InnoDB lock monitor (SET GLOBAL innodb_status_output_locks = ON, and the PROCESS privilege
for status), else "unknown" (never "free"); MariaDB also shows who waits there. A semaphore
shows a row per permit in use, "NAME [permit K]", and "NAME [permit queue]" while someone
waits for a permit; a shared mutex "NAME [reader K]" per reader and "NAME [writer]" for a
writer. The summary counts holders (mutexes, permits, readers, writers), waiting (held
queues, waiters shown), free or expired rows, and unknown ones. Status takes no lock.
Durations read "45.2s", "2m46s", "3h12m"; control characters in names print as \n, \x1f.
  --expired     only leases that ran out without being released (a holder that died or
                was cut off; `sqlock reap` deletes them, and free rows)
  --name GLOB   only names matching a shell pattern ("reports:*"; a semaphore's or shared
                mutex's own name)
  --json        one JSON array; each object has exactly these fields:
                name, primitive ("mutex", "semaphore" or "shared_mutex"), role ("" for a
                mutex; "permit K" or "permit queue" for a semaphore; "reader K", "reader
                queue" or "writer" for a shared mutex), owner, host, pid, strategy, token,
                hold_count, held (bool; null: unknown), acquired_at, held_for_ms,
                expires_at, expires_in_ms, expired (bool), waiting (bool: a held queue row,
                or a writer gate whose writer waits for readers), waiters (array of {who,
                waited_for_ms, position}, first in line first; null: hidden by the server).
                Times are UTC "YYYY-MM-DD HH:MM:SS.ffffff"; *_ms are integers; null where a
                value is unknown or does not apply (no holder, no lease, no token).
  --prometheus  the Prometheus text format, for node_exporter's textfile collector:
                sqlock_locks_held{strategy}, sqlock_locks_waiting, sqlock_locks_unknown,
                sqlock_locks_expired,
                sqlock_oldest_lock_age_seconds, sqlock_lock_rows,
                sqlock_clock_steps_recent, sqlock_clock_step_last_seconds, and per scheduled
                job: sqlock_job_last_success_timestamp_seconds, sqlock_job_last_duration_seconds,
                sqlock_job_last_outcome{outcome}, sqlock_job_runs_total{outcome},
                sqlock_job_period_seconds, sqlock_job_running_seconds, sqlock_job_overdue
status (text) also lists scheduled jobs: period, last success and its age, last outcome,
whether the current slot is done, overdue (no success within 1.5 periods), running for. Its
summary line is followed by a "clock:" line when sqlock processes noticed the database server's
clock step in the last 24 hours (connect_options::clock_step_threshold), and by a
"replication:" line for each way the server's replication can lose a grant at a failover
(asynchronous replicas) or refuses a strategy (Galera: select_for_update).
  --jobs        status: only the scheduled jobs; with --json an array of objects with exactly:
                name, period_ms, first_fired_ms, last_fired_ms, last_outcome, last_started_ms,
                last_duration_ms, last_success_started_ms, last_success_age_ms (null: never),
                slot_done, overdue (bools), running_since_ms (null: none), succeeded, failed,
                lost, abandoned, skipped, now_ms (times: ms since 1970 UTC, database clock)
)";

constexpr const char* reap_help =
    R"(usage: sqlock [--url URL] reap [--dry-run] [--older-than D] [--batch N] [--settle D]
                          [--keep-history D] [--json]

Deletes expired lock rows (by the database clock) in batches of N (default 1000), each batch
one short statement: never a long table lock, never a live lease. Released rows go at once;
a lease that was never released (its holder crashed) only after this run has seen it unchanged
for its TTL, so that no step of the database's clock can make the reaper end a live lease:
the run waits up to --settle for that (default 1m); longer leases are left for a later run and
counted as deferred. Then prunes the run ledger of scheduled jobs (run --once-per) past
--keep-history, in batches too. Safe on several hosts at once.
  --older-than D  grace: only rows expired for at least D (default 0)
  --settle D      wait up to D for expired-looking leases to prove abandoned (default 1m)
  --keep-history D  run-ledger retention (default 90d, at least 1d): attempts of scheduled jobs
                  that started longer ago, and longer ago than their job's period, are deleted
  --dry-run       count what would be deleted; delete nothing
  --json          {"deleted", "expired", "deferred", "batches", "dry_run", "older_than_ms",
                   "batch", "elapsed_ms", "history_deleted", "history_expired",
                   "keep_history_ms"}: integers, except dry_run (bool); "expired" and
                   "history_expired" are the dry-run counts
Exit 0 when done; 69/70/78 on errors (see sqlock --help).
)";

constexpr const char* leader_help = R"(usage: sqlock [--url URL] leader NAME [--json]

Prints the current leader of election NAME (sqlock::leader_election; the election's lock row),
without campaigning: its owner id, host:pid, term (its fencing token), since when it leads and
when its lease ends unless renewed (UTC, by the database clock), and the time remaining.
A leader whose lease has expired by the database clock is no leader (it stopped renewing:
crashed, paused or cut off); it is mentioned as the last leader.
  --json  one object with exactly these fields: name, leader (bool), id, host, pid, term,
          since, expires, remaining_ms, leading_for_ms; all but name and leader are null when
          there is no leader. Times are UTC "YYYY-MM-DD HH:MM:SS.ffffff" (SQLite: .fff);
          *_ms are integers.
Exit 0 when there is a leader, 1 when there is none; 69/70/78 on errors (see sqlock --help).
)";

constexpr const char* release_help =
    R"(usage: sqlock [--url URL] release NAME --force [--permit K] [--actor WHO] [--json]

Break-glass for operators. With --permit K, NAME is a semaphore and its permit K is released.
Lease strategies: the row is freed and its fencing token moved forward, so the old holder's renewals, releases and fenced writes fail from now on (it gets
its lost signal). select_for_update on PostgreSQL: the holder's session is ended. Recorded in
the <prefix>audit table with WHO (default: $USER@host). A lock nobody holds (no row, or a free
row) is left alone: "nothing to release", exit 1, no token moved, nothing recorded; a holder
whose lease expired (not taken over) still holds it and is released as above.
  --json   {"name", "permit" (null without --permit), "released", "strategy", "previous_owner",
            "previous_token", "new_token", "sessions_ended", "actor"}
)";

struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct options {
    std::string url;
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
job_database& database_for_jobs() {
    static job_database d;
    return d;
}

std::chrono::milliseconds duration_arg(const std::string& flag, const std::string& value) {
    const auto d = parse_duration(value);
    if (!d)
        throw usage_error(flag + ": \"" + value + "\" is not a duration (try 500ms, 30s, 10m)");
    return *d;
}

/// `ps` shows every process's arguments to every user: the password of a `--url` is
/// overwritten with x's in our own argv (/proc/PID/cmdline reads that memory), as the mysql
/// client does, once it has been copied.
void hide_password(char* arg) {
    const std::string_view url(arg);
    const std::string without = sqlock::url_without_password(url);
    if (without.size() >= url.size())
        return;
    // `without` lacks ":password": the first byte that differs is that ':'.
    std::size_t colon = 0;
    while (colon < without.size() && url[colon] == without[colon])
        ++colon;
    std::memset(arg + colon + 1, 'x', url.size() - without.size() - 1);
}

options parse_args(int argc, char** argv) {
    options o;
    if (const char* env = std::getenv("SQLOCK_URL"))
        o.url = env;
    if (const char* env = std::getenv("SQLOCK_PASSWORD_FILE"))
        o.connect.password_file = env;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        // --option=value, for the global options: the same as "--option value". (Command
        // options are split by normalize_args below.)
        std::optional<std::string> inline_value;
        if (const auto eq = a.find('='); a.starts_with("--") && eq != std::string::npos) {
            const auto option = a.substr(0, eq);
            if (option == "--url" || option == "--password-file" || option == "--table-prefix" ||
                option == "--connect-timeout") {
                inline_value = a.substr(eq + 1);
                a = option;
            } else if (option == "--help" || option == "--version") {
                throw usage_error(option + " takes no value");
            }
        }
        auto value = [&]() -> std::string {
            if (inline_value)
                return *inline_value;
            if (i + 1 >= argc)
                throw usage_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--") {
            for (++i; i < argc; ++i)
                o.exec.emplace_back(argv[i]);
            break;
        }
        if (a == "-h" || a == "--help")
            o.help = true;
        else if (a == "--url") {
            o.url = value();
            // argv[i] is the URL, or "--url=URL": the password is overwritten either way.
            hide_password(argv[i] + (inline_value ? std::strlen("--url=") : 0));
        } else if (a == "--password-file") {
            o.connect.password_file = value();
            o.password_file_flag = true;
            if (o.connect.password_file.empty())
                throw usage_error("--password-file needs a file name");
        } else if (a == "--table-prefix")
            o.connect.table_prefix = value();
        else if (a == "--connect-timeout")
            o.connect.connect_timeout = duration_arg(a, value());
        else if (o.command.empty() && !a.starts_with("-"))
            o.command = a;
        else if (o.command.empty() && a == "--version")
            o.command = a;
        else
            o.args.push_back(a);
    }
    if (!o.help) {
        // Options before or after the NAME, --option=value (cli.hpp).
        auto normalized = normalize_args(o.command, std::move(o.args));
        o.args = std::move(normalized.args);
        o.args_error = std::move(normalized.error);
    }
    // Commands that only read never create a SQLite database (a mistyped path is an error,
    // not a new empty file); migrate --print does not connect at all.
    const bool reads_only =
        o.command == "status" || o.command == "list" || o.command == "history" ||
        o.command == "check" || o.command == "leader" ||
        (o.command == "migrate" &&
         std::any_of(o.args.begin(), o.args.end(),
                     [](const std::string& a) { return a == "--status" || a == "--print"; }));
    if (reads_only)
        o.connect.create_sqlite_file = false;
    return o;
}

sqlock::database open(const options& o) {
    if (o.url.empty())
        throw usage_error("no database: pass --url URL or set SQLOCK_URL");
    return sqlock::connect(o.url, o.connect);
}

using steady = std::chrono::steady_clock;

std::string human_ms(std::int64_t ms); // below, with the status output

/// The deadline of a wait of `wait` from now: time_point::max() without one (wait as long as
/// it takes), time_point::min() for no wait at all (--wait 0).
steady::time_point deadline_of(std::optional<std::chrono::milliseconds> wait) {
    if (!wait)
        return steady::time_point::max();
    if (wait->count() == 0)
        return steady::time_point::min();
    return steady::now() + *wait;
}

/// `run --wait`: the deadline passed while the database could not be reached in a way worth
/// waiting out (see open_waiting): like a lock held for all of --wait, exit 75.
class not_granted_in_time : public sqlock::error {
public:
    using sqlock::error::error;
};

/// The URL names several hosts (host1:port,host2:port): a replicated setup that can fail over.
bool lists_several_hosts(const std::string& url) {
    const auto start = url.find("://");
    if (start == std::string::npos)
        return false;
    const auto end = url.find_first_of("/?", start + 3);
    const auto authority = url.substr(start + 3, end == std::string::npos ? end : end - start - 3);
    const auto at = authority.rfind('@');
    return authority.find(',', at == std::string::npos ? 0 : at + 1) != std::string::npos;
}

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
                              const std::string& lock_name) {
    const auto started = steady::now();
    std::optional<steady::time_point> refused_since;
    auto pause = std::chrono::milliseconds(50);
    std::mt19937_64 rng{std::random_device{}()};
    // A connect still in flight at the deadline is abandoned (exit 75): --wait bounds the
    // connect too, not only --connect-timeout. --wait 0 gives it at most 900 ms, so that one
    // try also returns within a second.
    auto bounded = o;
    if (deadline != steady::time_point::max())
        bounded.connect.connect_deadline = deadline == steady::time_point::min()
                                               ? started + std::chrono::milliseconds(900)
                                               : deadline;
    for (;;) {
        try {
            return open(bounded);
        } catch (const sqlock::error& e) {
            const bool full = sqlock::is_server_full(e);
            const bool failing_over = lists_several_hosts(o.url) &&
                                      ((e.code() == sqlock::errc::connection && e.retryable()) ||
                                       e.code() == sqlock::errc::topology);
            const bool unanswered = sqlock::is_connect_unanswered(e);
            if ((!full && !failing_over && !unanswered) ||
                (deadline == steady::time_point::min() && !unanswered))
                throw;
            const auto now = steady::now();
            if (!refused_since)
                refused_since = now;
            if (now >= deadline) {
                const auto ms = [](steady::duration d) {
                    return human_ms(
                        std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
                };
                throw not_granted_in_time(
                    sqlock::errc::timeout,
                    "lock \"" + lock_name + "\" not granted within --wait (waited " +
                        ms(now - started) + "): " +
                        (full ? "the database server refused new connections for " +
                                    ms(now - *refused_since) + " until the deadline"
                         : failing_over
                             ? "no host of the URL accepted writes (a failover?) for " +
                                   ms(now - *refused_since) + " until the deadline"
                             : std::string("the database server did not answer new "
                                           "connections in time; the connect still in flight "
                                           "at the deadline was abandoned")) +
                        " (" + e.what() + ")",
                    e.backend(), e.native_code(), e.sqlstate());
            }
            std::uniform_int_distribution<std::int64_t> jitter(0, pause.count());
            const auto sleep = pause / 2 + std::chrono::milliseconds(jitter(rng));
            pause = std::min(pause * 2, std::chrono::milliseconds(2000));
            std::this_thread::sleep_until(deadline - now < sleep ? deadline : now + sleep);
        }
    }
}

int cmd_migrate(const options& o) {
    bool print = false;
    bool status = false;
    for (const auto& a : o.args) {
        if (a == "--print")
            print = true;
        else if (a == "--status")
            status = true;
        else
            throw usage_error("migrate: unknown option " + a);
    }
    if (status) {
        auto connect = o.connect;
        connect.check_schema = false; // reporting versions is the point
        if (o.url.empty())
            throw usage_error("no database: pass --url URL or set SQLOCK_URL");
        auto db = sqlock::connect(o.url, connect);
        int pending = 0;
        for (const auto& m : db.migration_status()) {
            std::cout << (m.applied ? "applied  " : "pending  ") << m.name << "\n";
            pending += m.applied ? 0 : 1;
        }
        std::cout << "schema version " << db.schema_version() << ", this sqlock expects "
                  << sqlock::database::expected_schema_version(db.backend()) << " (" << pending
                  << " pending) in " << db.url() << "\n";
        return exit_ok;
    }
    if (print) {
        // Build the DDL without connecting: a DBA may not have access yet.
        std::cout << sqlock::migration_script_for(o.url, o.connect);
        return exit_ok;
    }
    auto connect = o.connect;
    connect.check_schema = false; // migrate is how an old schema gets current
    if (o.url.empty())
        throw usage_error("no database: pass --url URL or set SQLOCK_URL");
    auto db = sqlock::connect(o.url, connect);
    const int before = db.schema_version();
    db.migrate();
    const int after = db.schema_version();
    if (before == after)
        std::cout << "schema is up to date (version " << after << ") in " << db.url() << "\n";
    else
        std::cout << "migrated " << db.url() << " from version " << before << " to " << after
                  << "\n";
    return exit_ok;
}

/// Exit status of a finished child, shell style.
int status_of(int status) {
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return exit_software;
}

/// The child's environment: ours plus SQLOCK_TOKEN and SQLOCK_NAME (and SQLOCK_PERMIT for a
/// semaphore's permit), as the spawn wants it. SQLOCK_URL is the URL sqlock uses (--url or
/// $SQLOCK_URL) without its password, so that the job can run sqlock itself with
/// SQLOCK_PASSWORD_FILE (set to --password-file's path when that was given) or ~/.pgpass.
std::vector<std::string> child_environment(const std::string& token, const std::string& name,
                                           std::optional<std::int64_t> permit = std::nullopt) {
    const auto& database = database_for_jobs();
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string_view entry(*e);
        if (!entry.starts_with("SQLOCK_TOKEN=") && !entry.starts_with("SQLOCK_NAME=") &&
            !entry.starts_with("SQLOCK_PERMIT=") && !entry.starts_with("SQLOCK_URL=") &&
            (database.password_file.empty() || !entry.starts_with("SQLOCK_PASSWORD_FILE=")))
            env.emplace_back(entry);
    }
    if (!database.url.empty())
        env.push_back("SQLOCK_URL=" + sqlock::url_without_password(database.url));
    if (!database.password_file.empty())
        env.push_back("SQLOCK_PASSWORD_FILE=" + database.password_file);
    env.push_back("SQLOCK_TOKEN=" + token);
    env.push_back("SQLOCK_NAME=" + name);
    if (permit)
        env.push_back("SQLOCK_PERMIT=" + std::to_string(*permit));
    return env;
}

/// `sqlock run NAME --once-per PERIOD` / `--slot KEY`: the job path (sqlock::job).
struct job_run_args {
    std::string name;
    sqlock::job_options job;
    job_limits limits;
    int skipped_exit = 0;
    bool verbose = false;
};

int run_job(const options& o, job_run_args a, lock_watch& watch) {
    // A full server is waited out for as long as the firing would wait for the lock (--wait,
    // else the period; a --slot without --wait: as long as it takes), and that time counts.
    const auto budget = a.job.wait ? a.job.wait
                        : a.job.period.count() > 0
                            ? std::optional<std::chrono::milliseconds>(a.job.period)
                            : std::nullopt;
    const auto deadline = deadline_of(budget);
    auto db = open_waiting(o, deadline, a.name);
    if (budget && deadline != steady::time_point::min())
        a.job.wait =
            std::max(std::chrono::milliseconds(0),
                     std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now()));
    sqlock::job j(db, a.name, a.job);
    int raw_status = 0;
    const auto r = j.run_reporting([&](const sqlock::job_context& ctx) {
        // The grant's stop token: requested when the lock is lost (on_lost tells the watch
        // too; this covers a loss found by the job itself).
        std::stop_callback on_stop(ctx.stop, [&] {
            watch.lost({a.name, ctx.token, sqlock::loss_reason::lost, "the job's lock was lost"});
        });
        auto env = child_environment(std::to_string(ctx.token), a.name);
        std::erase_if(env, [](const std::string& e) { return e.starts_with("SQLOCK_SLOT="); });
        env.push_back("SQLOCK_SLOT=" + ctx.slot);
        std::string failure;
        raw_status = run_job_group(o.exec, env, a.limits, watch, failure);
        sqlock::job_report rep;
        if (raw_status < 0) {
            rep.exit_status = exit_software;
            rep.message = failure;
        } else if (WIFEXITED(raw_status)) {
            rep.exit_status = WEXITSTATUS(raw_status);
        } else if (WIFSIGNALED(raw_status)) {
            rep.signal = WTERMSIG(raw_status);
        }
        if (rep.exit_status != 0 || rep.signal != 0)
            rep.message =
                rep.message.empty() ? "the command " + o.exec[0] + " failed" : rep.message;
        return rep;
    });
    switch (r.outcome) {
    case sqlock::job_outcome::skipped:
        // Silent by default: cron mails whatever a job prints.
        if (a.verbose)
            std::cerr << "sqlock: job \"" << escape_control(a.name) << "\": slot " << r.slot
                      << " already done by " << r.done_by_host << ":" << r.done_by_pid << " (token "
                      << r.done_by_token << "); not running it\n";
        return a.skipped_exit;
    case sqlock::job_outcome::not_granted:
        std::cerr << "sqlock: job \"" << escape_control(a.name)
                  << "\": another run held its lock for longer than "
                  << "--wait; the command did not run\n";
        return exit_timeout;
    case sqlock::job_outcome::lost:
        std::cerr << "sqlock: job \"" << escape_control(a.name) << "\": the lock was lost ("
                  << r.message << "); the attempt is recorded as lost\n";
        return exit_lock_lost;
    case sqlock::job_outcome::succeeded:
        if (a.verbose)
            std::cerr << "sqlock: job \"" << escape_control(a.name) << "\": slot " << r.slot
                      << " done (token " << r.token
                      << (r.takeover ? ", took over after a failed attempt" : "") << ")\n";
        return exit_ok;
    default:
        if (watch.stopped_at_risk()) {
            std::cerr << "sqlock: job \"" << escape_control(a.name)
                      << "\": the command was stopped: its lock "
                      << "was at risk of being lost (" << watch.risk_message()
                      << "); another firing of the slot may take it over\n";
            return exit_lock_lost;
        }
        if (a.verbose)
            std::cerr << "sqlock: job \"" << escape_control(a.name) << "\": slot " << r.slot
                      << " failed; another firing of the slot may take it over\n";
        return raw_status < 0 ? exit_software : status_of(raw_status);
    }
}

/// The shared side of a shared_mutex, with a mutex's words (for run_holding).
struct shared_side {
    sqlock::shared_mutex& rw;
    void lock() { rw.lock_shared(); }
    bool try_lock() { return rw.try_lock_shared(); }
    bool try_lock_until(std::chrono::steady_clock::time_point deadline) {
        return rw.try_lock_shared_until(deadline);
    }
    void unlock() noexcept { rw.unlock_shared(); }
    std::int64_t token() const { return rw.token(); }
    const std::string& name() const noexcept { return rw.name(); }
    sqlock::loss_reason last_loss() const noexcept { return rw.last_loss(); }
    std::string last_error() const { return rw.last_error(); }
};

template <class Lock>
int run_holding(Lock& m, sqlock::database& db, const options& o,
                const std::optional<std::chrono::milliseconds>& wait,
                std::chrono::steady_clock::time_point deadline, const job_limits& limits,
                lock_watch& watch);

/// --grace checked against the TTL (see max_grace), or its default for the TTL.
job_limits limits_for(std::optional<std::chrono::milliseconds> grace,
                      std::chrono::milliseconds ttl) {
    const auto most = max_grace(ttl);
    if (grace && *grace > most)
        throw usage_error("--grace " + std::to_string(grace->count()) + " ms does not fit --ttl " +
                          std::to_string(ttl.count()) +
                          " ms: the command must be stopped before the lease can end, and a "
                          "lease is at risk only once half its TTL is left without a renewal; "
                          "use --grace " +
                          std::to_string(most.count()) + "ms or less, or a longer --ttl");
    return {grace.value_or(default_grace(ttl)), kill_margin(ttl)};
}

int cmd_run(const options& o) {
    if (o.args.empty())
        throw usage_error("run: missing lock NAME");
    const std::string name = o.args[0];
    sqlock::mutex_options mo;
    mo.renew = true;
    std::optional<std::chrono::milliseconds> grace;
    std::optional<std::chrono::milliseconds> wait;
    std::optional<std::chrono::milliseconds> once_per;
    std::optional<std::int64_t> permits;
    enum class rw_mode { none, shared, exclusive } rw = rw_mode::none;
    std::int64_t max_readers = sqlock::default_max_readers;
    bool max_readers_given = false;
    std::string slot;
    bool strategy_given = false;
    std::optional<int> skipped_exit;
    bool verbose = false;
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= o.args.size())
                throw usage_error(a + " needs a value");
            return o.args[++i];
        };
        if (a == "--strategy") {
            mo.strategy = sqlock::parse_strategy(value());
            strategy_given = true;
        } else if (a == "--ttl")
            mo.ttl = duration_arg(a, value());
        else if (a == "--wait")
            wait = duration_arg(a, value());
        else if (a == "--grace")
            grace = duration_arg(a, value());
        else if (a == "--no-renew")
            mo.renew = false;
        else if (a == "--permits") {
            const auto v = value();
            std::int64_t n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc{} || end != v.data() + v.size() || n < 1 || n > sqlock::max_permits)
                throw usage_error("--permits: \"" + v + "\" is not a number of permits (1-" +
                                  std::to_string(sqlock::max_permits) + ")");
            permits = n;
        } else if (a == "--shared" || a == "--exclusive") {
            const auto mode = a == "--shared" ? rw_mode::shared : rw_mode::exclusive;
            if (rw != rw_mode::none && rw != mode)
                throw usage_error("--shared and --exclusive exclude each other");
            rw = mode;
        } else if (a == "--max-readers") {
            const auto v = value();
            std::int64_t n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc{} || end != v.data() + v.size() || n < 1 || n > sqlock::max_permits)
                throw usage_error("--max-readers: \"" + v + "\" is not a number of readers (1-" +
                                  std::to_string(sqlock::max_permits) + ")");
            max_readers = n;
            max_readers_given = true;
        } else if (a == "--once-per")
            once_per = duration_arg(a, value());
        else if (a == "--slot") {
            slot = value();
            if (slot.empty())
                throw usage_error("--slot: the slot key must not be empty");
        } else if (a == "--skipped-exit") {
            const auto v = value();
            int n = -1;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc{} || end != v.data() + v.size() || n < 0 || n > 255)
                throw usage_error("--skipped-exit: \"" + v + "\" is not an exit status (0-255)");
            skipped_exit = n;
        } else if (a == "--verbose" || a == "-v")
            verbose = true;
        else
            throw usage_error("run: unknown option " + a);
    }
    if (o.exec.empty())
        throw usage_error("run: missing \"-- CMD\" to run under the lock");

    if (permits && rw != rw_mode::none)
        throw usage_error("--permits cannot be combined with --shared/--exclusive");
    if (max_readers_given && rw == rw_mode::none)
        throw usage_error("--max-readers needs --shared or --exclusive");
    if ((permits || rw != rw_mode::none) && (once_per || !slot.empty()))
        throw usage_error("--permits, --shared and --exclusive cannot be combined with "
                          "--once-per/--slot");
    const auto limits = limits_for(grace, mo.ttl);
    open_wakeup_pipe();
    // Shared with the lock's callbacks: sqlock's background thread may still be in one when
    // this returns.
    const auto watch = std::make_shared<lock_watch>();
    mo.on_lost = [watch](const sqlock::lock_lost_event& event) {
        watch->lost(event);
    };
    mo.on_at_risk = [watch](const sqlock::lock_at_risk_event& event) {
        watch->risk(event);
    };
    if (once_per || !slot.empty()) {
        // Checked before connecting, so a typo is a usage error (64) even when the database is
        // down.
        if (once_per && (*once_per < sqlock::min_job_period || *once_per > sqlock::max_job_period))
            throw usage_error("--once-per: the period must be between 1s and 366d, got " +
                              std::to_string(once_per->count()) + " ms");
        if (!mo.renew)
            throw usage_error("--once-per/--slot cannot be used with --no-renew: a lease that "
                              "runs out while the job runs lets another host run it too");
        if (strategy_given && mo.strategy == sqlock::strategy::select_for_update)
            throw usage_error("--once-per/--slot need a lease strategy (unique_key or "
                              "optimistic_version): the run ledger is fenced by the lease");
        job_run_args ja;
        ja.name = name;
        ja.job.period = once_per.value_or(std::chrono::milliseconds(0));
        ja.job.slot = slot;
        ja.job.wait = wait;
        ja.job.lock = mo;
        ja.limits = limits;
        ja.skipped_exit = skipped_exit.value_or(0);
        ja.verbose = verbose;
        return run_job(o, std::move(ja), *watch);
    }
    if (skipped_exit || verbose)
        throw usage_error("--skipped-exit and --verbose need --once-per or --slot");

    // --wait counts from here: a server without free connection slots is waited out first.
    const auto deadline = deadline_of(wait);
    auto db = open_waiting(o, deadline, name);
    if (permits) {
        sqlock::semaphore s(db, name, *permits, mo);
        return run_holding(s, db, o, wait, deadline, limits, *watch);
    }
    if (rw != rw_mode::none) {
        sqlock::shared_mutex rw_lock(db, name, mo, max_readers);
        if (rw == rw_mode::exclusive)
            return run_holding(rw_lock, db, o, wait, deadline, limits, *watch);
        shared_side reader{rw_lock};
        return run_holding(reader, db, o, wait, deadline, limits, *watch);
    }
    sqlock::mutex m(db, name, mo);
    return run_holding(m, db, o, wait, deadline, limits, *watch);
}

/// `sqlock run` waiting for its lock on a terminal: one line on stderr, rewritten every second
/// (\r), that says how long it has waited and (a mutex) who holds the lock and for how long;
/// cleared when the wait ends (destructor). Nothing when stderr is not a terminal, and nothing
/// for a wait that ends within the first second.
class wait_progress {
public:
    wait_progress(sqlock::database& db, const std::string& name, bool show_holder) {
        if (isatty(STDERR_FILENO) != 1)
            return;
        m_thread = std::thread([this, &db, name, show_holder] { show(db, name, show_holder); });
    }
    ~wait_progress() {
        if (!m_thread.joinable())
            return;
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
        }
        m_wake.notify_all();
        m_thread.join();
        if (m_shown) {
            std::fputs("\r\033[K", stderr);
            std::fflush(stderr);
        }
    }
    wait_progress(const wait_progress&) = delete;
    wait_progress& operator=(const wait_progress&) = delete;

private:
    void show(sqlock::database& db, const std::string& name, bool show_holder) {
        const auto start = steady::now();
        auto next = start + std::chrono::seconds(1);
        std::unique_lock lock(m_mutex);
        while (!m_wake.wait_until(lock, next, [&] { return m_stop; })) {
            lock.unlock();
            std::string holder;
            if (show_holder) {
                try {
                    if (const auto h = db.find(name); h && h->held())
                        holder = "; held by " + escape_control(h->host) + ":" +
                                 std::to_string(h->pid) + " for " + human_ms(h->held_for.count());
                } catch (const std::exception&) {
                    // Who holds it is a courtesy; the wait goes on.
                }
            }
            lock.lock();
            if (m_stop)
                break;
            const auto waited =
                std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start);
            const std::string line = "\r\033[Ksqlock: waiting for lock \"" +
                                     readable_lock_name(name) + "\" for " +
                                     human_ms(waited.count()) + holder;
            std::fputs(line.c_str(), stderr);
            std::fflush(stderr);
            m_shown = true;
            next += std::chrono::seconds(1);
        }
    }

    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_stop = false;
    bool m_shown = false;
    std::thread m_thread; ///< last: started once the rest is ready
};

/// `sqlock run` once the database is open: takes `m` (a mutex, or a semaphore's permit), runs
/// the command, gives it back, and returns the exit status.
template <class Lock>
int run_holding(Lock& m, sqlock::database& db, const options& o,
                const std::optional<std::chrono::milliseconds>& wait,
                std::chrono::steady_clock::time_point deadline, const job_limits& limits,
                lock_watch& watch) {
    constexpr bool is_semaphore = std::is_same_v<Lock, sqlock::semaphore>;
    const std::string& name = m.name();
    // --wait D returns within D + 1 s: a grant that comes later than that (a reply delayed
    // past the deadline) is given back at once, not kept, and the command does not run.
    const auto wait_started = steady::now();
    const auto late_after =
        !wait ? steady::time_point::max()
              : (deadline == steady::time_point::min() ? wait_started : deadline) +
                    std::chrono::seconds(1);
    std::optional<wait_progress> progress;
    if (!wait || wait->count() > 0)
        progress.emplace(db, name, std::is_same_v<Lock, sqlock::mutex>);
    const bool granted = !wait                ? (m.lock(), true)
                         : wait->count() == 0 ? m.try_lock()
                                              : m.try_lock_until(deadline);
    progress.reset(); // the progress line is cleared before anything else is printed
    if (granted && steady::now() > late_after) {
        const auto took =
            std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - wait_started);
        try {
            m.unlock();
        } catch (const std::exception&) {
            // Given back or not, the lease ends at its TTL; the command does not run.
        }
        std::cerr << "sqlock: " << (is_semaphore ? "a permit of semaphore \"" : "lock \"") << name
                  << "\" was granted only after " << human_ms(took.count()) << ", past --wait "
                  << human_ms(wait->count())
                  << " and its second of grace: given back at once; the command did not run\n";
        return exit_timeout;
    }
    if (!granted) {
        std::cerr << "sqlock: " << (is_semaphore ? "no permit of semaphore \"" : "lock \"") << name
                  << "\" " << (is_semaphore ? "was granted" : "not granted") << " within "
                  << human_ms(wait->count());
        if constexpr (is_semaphore) {
            std::cerr << " (all " << m.permits() << " permits held)\n";
            return exit_timeout;
        } else if constexpr (!std::is_same_v<Lock, sqlock::mutex>) {
            std::cerr << " (see sqlock status --name '" << name << "')\n";
            return exit_timeout;
        }
        try {
            if (const auto holder = db.find(name); holder && holder->held()) {
                std::cerr << ": held by " << holder->host << ":" << holder->pid << " (owner "
                          << holder->owner << ", token " << holder->token;
                if (holder->strategy != "select_for_update")
                    std::cerr << ", lease ends in " << human_ms(holder->expires_in.count());
                std::cerr << ")";
            }
        } catch (const std::exception&) {
            // Who holds it is a courtesy; the timeout is the answer.
        }
        std::cerr << "\n";
        return exit_timeout;
    }

    std::optional<std::int64_t> permit;
    if constexpr (is_semaphore)
        permit = m.permit();
    std::string failure;
    const int status = run_job_group(
        o.exec, child_environment(std::to_string(m.token()), name, permit), limits, watch, failure);
    if (status < 0)
        std::cerr << "sqlock: " << failure << "\n";
    m.unlock();
    if (!watch.is_lost() && m.last_loss() != sqlock::loss_reason::none) {
        // Found only at release (say, force-released by an operator): the command may have
        // run without the lock for a while.
        watch.lost_at_release(std::string(sqlock::to_string(m.last_loss())) + ": " +
                              m.last_error());
    }
    // Names print readably: "NAME [permit 2]", never a raw 0x1f or other control byte.
    if (watch.is_lost()) {
        std::cerr << "sqlock: lock \"" << readable_lock_name(name)
                  << "\" was lost while the command ran (" << readable_message(watch.lost_message())
                  << ")\n";
        return exit_lock_lost;
    }
    if (watch.stopped_at_risk()) {
        std::cerr << "sqlock: the command was stopped: its lock \"" << readable_lock_name(name)
                  << "\" was at risk of being lost (" << readable_message(watch.risk_message())
                  << ")\n";
        return exit_lock_lost;
    }
    if (const auto failure_msg = m.last_error(); !failure_msg.empty())
        std::cerr << "sqlock: warning: " << readable_message(failure_msg) << "\n";
    return status < 0 ? exit_software : status_of(status);
}

/// A value, or null.
template <typename T>
ojson optional_json(const std::optional<T>& v) {
    return v ? ojson(*v) : ojson(nullptr);
}

/// One element of status/list --json (fields and order as list_help documents them).
/// "exports [permit 2]" for a semaphore's lock, the name itself for a mutex's.
/// `text` with control characters escaped (\n, \t, \r, \xHH), so that a name cannot break
/// a table row or a message line.
std::string printable(std::string_view text) {
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\r')
            out += "\\r";
        else if (u < 0x20 || u == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else
            out += c;
    }
    return out;
}

std::string display_name(const sqlock::lock_info& l) {
    std::string shown = printable(l.primitive_name());
    if (!l.role().empty())
        shown += " [" + printable(l.role()) + "]";
    return shown;
}

/// Which primitive a lock belongs to, from its role: "mutex", "semaphore" or "shared_mutex".
const char* primitive_of(const sqlock::lock_info& l) {
    const auto role = l.role();
    if (role.empty())
        return "mutex";
    return role.starts_with("permit") ? "semaphore" : "shared_mutex";
}

ojson lock_json(const sqlock::lock_info& l, row_count counted) {
    // null where a value is unknown or does not apply (no sentinel values): select_for_update
    // rows have no lease and no token in the row; a free row has no holder.
    const bool transactional = l.strategy == "select_for_update";
    const bool holder = l.held() || (!transactional && !l.owner.empty());
    const auto text_or_null = [](const std::string& v) {
        return v.empty() ? ojson(nullptr) : ojson(v);
    };
    auto waiters = l.waiters_hidden ? ojson(nullptr) : ojson::array();
    for (const auto& w : l.waiters)
        waiters.push_back(
            {{"who", w.who},
             {"waited_for_ms", w.waited_for ? ojson(w.waited_for->count()) : ojson(nullptr)},
             {"position", optional_json(w.position)}});
    return {{"name", std::string(l.primitive_name())},
            {"primitive", primitive_of(l)},
            {"role", std::string(l.role())},
            {"owner", holder ? ojson(l.owner) : ojson(nullptr)},
            {"host", holder ? text_or_null(l.host) : ojson(nullptr)},
            {"pid", holder && l.pid > 0 ? ojson(l.pid) : ojson(nullptr)},
            {"strategy", l.strategy},
            {"token", l.token > 0 ? ojson(l.token) : ojson(nullptr)},
            {"hold_count", holder ? ojson(l.hold_count) : ojson(nullptr)},
            {"held", l.holder_hidden ? ojson(nullptr) : ojson(l.held())},
            {"acquired_at", holder ? text_or_null(l.acquired_at) : ojson(nullptr)},
            {"held_for_ms",
             l.held() && !l.acquired_at.empty() ? ojson(l.held_for.count()) : ojson(nullptr)},
            {"expires_at", transactional || l.owner.empty() ? ojson(nullptr) : ojson(l.expires_at)},
            {"expires_in_ms",
             transactional || l.owner.empty() ? ojson(nullptr) : ojson(l.expires_in.count())},
            {"expired", transactional ? ojson(false) : ojson(!l.owner.empty() && l.expired())},
            {"waiting", counted == row_count::waiter},
            {"waiters", waiters}};
}

/// A lease whose holder never released it and whose time ran out (what `sqlock reap`
/// deletes): a free row, a select_for_update row or a live lease is none.
bool is_expired_lease(const sqlock::lock_info& l) {
    return l.strategy != "select_for_update" && !l.owner.empty() && l.expired();
}

/// Steps of the database's clock recorded in the last 24 hours, newest first (none when the
/// tables predate schema 5 or cannot be read: status still shows the locks).
std::vector<sqlock::clock_step_record> recent_clock_steps(sqlock::database& db) {
    std::vector<sqlock::clock_step_record> steps;
    try {
        steps = db.clock_steps(1000);
    } catch (const sqlock::error&) {
        return {};
    }
    std::erase_if(steps, [](const auto& s) { return s.age > std::chrono::hours(24); });
    return steps;
}

void print_prometheus(const std::vector<sqlock::lock_info>& locks,
                      const std::vector<sqlock::clock_step_record>& steps) {
    std::map<std::string, int> held;
    for (const char* s : {"unique_key", "select_for_update", "optimistic_version"})
        held[s] = 0;
    int expired = 0;
    int waiting = 0;
    int unknown = 0;
    double oldest = 0;
    const auto counted = classify_rows(locks);
    for (std::size_t i = 0; i < locks.size(); ++i) {
        const auto& l = locks[i];
        waiting += static_cast<int>(l.waiters.size());
        switch (counted[i]) {
        case row_count::holder:
            ++held[l.strategy];
            oldest = std::max(oldest, static_cast<double>(l.held_for.count()) / 1000.0);
            break;
        case row_count::waiter:
            ++waiting;
            break;
        case row_count::unknown:
            ++unknown;
            break;
        case row_count::free:
            expired += is_expired_lease(l) ? 1 : 0;
            break;
        case row_count::writers_slot:
            break;
        }
    }
    std::cout << "# HELP sqlock_locks_held Locks held right now, by strategy.\n"
              << "# TYPE sqlock_locks_held gauge\n";
    for (const auto& [strategy, n] : held)
        std::cout << "sqlock_locks_held{strategy=\"" << strategy << "\"} " << n << "\n";
    std::cout << "# HELP sqlock_locks_waiting Callers waiting for a lock where the database "
                 "shows them (see sqlock status --json, waiters), plus held queue rows of "
                 "semaphores and shared mutexes and writers waiting for their readers.\n"
              << "# TYPE sqlock_locks_waiting gauge\n"
              << "sqlock_locks_waiting " << waiting << "\n"
              << "# HELP sqlock_locks_unknown select_for_update locks whose holder the server "
                 "hides (MariaDB: innodb_status_output_locks OFF or no PROCESS privilege).\n"
              << "# TYPE sqlock_locks_unknown gauge\n"
              << "sqlock_locks_unknown " << unknown << "\n";
    std::cout << "# HELP sqlock_locks_expired Leases that ran out without being released, "
                 "waiting for the reaper.\n"
              << "# TYPE sqlock_locks_expired gauge\n"
              << "sqlock_locks_expired " << expired << "\n"
              << "# HELP sqlock_oldest_lock_age_seconds How long the longest-held lock has been "
                 "held (0 when none is).\n"
              << "# TYPE sqlock_oldest_lock_age_seconds gauge\n"
              << "sqlock_oldest_lock_age_seconds " << oldest << "\n"
              << "# HELP sqlock_lock_rows Rows in the lock table.\n"
              << "# TYPE sqlock_lock_rows gauge\n"
              << "sqlock_lock_rows " << locks.size() << "\n"
              << "# HELP sqlock_clock_steps_recent Steps of the database server's clock that "
                 "sqlock processes noticed in the last 24 hours.\n"
              << "# TYPE sqlock_clock_steps_recent gauge\n"
              << "sqlock_clock_steps_recent " << steps.size() << "\n"
              << "# HELP sqlock_clock_step_last_seconds The latest of them, signed (+ forward), "
                 "0 when none.\n"
              << "# TYPE sqlock_clock_step_last_seconds gauge\n"
              << "sqlock_clock_step_last_seconds "
              << (steps.empty() ? 0.0 : static_cast<double>(steps.front().step.count()) / 1000.0)
              << "\n";
}

/// Prometheus label value: backslash, quote and newline escaped.
std::string label_value(std::string_view v) {
    std::string out;
    for (const char c : v) {
        if (c == '\\' || c == '"')
            out += '\\';
        if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

void print_prometheus_jobs(const std::vector<sqlock::job_info>& jobs) {
    const auto each = [&](const char* metric, const char* help, const char* type, auto value) {
        std::cout << "# HELP " << metric << " " << help << "\n# TYPE " << metric << " " << type
                  << "\n";
        for (const auto& j : jobs)
            value(j, "job=\"" + label_value(j.name) + "\"");
    };
    // Exact decimal seconds: a double printed by iostream would lose a timestamp's digits.
    const auto secs = [](std::int64_t ms) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "%s%lld.%03lld", ms < 0 ? "-" : "",
                      static_cast<long long>(std::abs(ms) / 1000),
                      static_cast<long long>(std::abs(ms) % 1000));
        return std::string(buf);
    };
    each("sqlock_job_last_success_timestamp_seconds",
         "Start of the job's last successful run, Unix time on the database clock (0: never).",
         "gauge", [&](const sqlock::job_info& j, const std::string& l) {
             std::cout << "sqlock_job_last_success_timestamp_seconds{" << l << "} "
                       << secs(j.last_success_started_ms) << "\n";
         });
    each("sqlock_job_last_duration_seconds", "Duration of the job's last ended attempt.", "gauge",
         [&](const sqlock::job_info& j, const std::string& l) {
             std::cout << "sqlock_job_last_duration_seconds{" << l << "} "
                       << secs(j.last_duration_ms) << "\n";
         });
    each("sqlock_job_last_outcome",
         "1 for the outcome of the job's last ended attempt, 0 for the others.", "gauge",
         [&](const sqlock::job_info& j, const std::string& l) {
             for (const char* outcome : {"succeeded", "failed", "lost", "abandoned"})
                 std::cout << "sqlock_job_last_outcome{" << l << ",outcome=\"" << outcome << "\"} "
                           << (j.last_outcome == outcome ? 1 : 0) << "\n";
         });
    each("sqlock_job_runs_total",
         "Attempts of the job by outcome; skipped counts firings whose slot was already done.",
         "counter", [&](const sqlock::job_info& j, const std::string& l) {
             const std::pair<const char*, std::int64_t> counts[] = {{"succeeded", j.succeeded},
                                                                    {"failed", j.failed},
                                                                    {"lost", j.lost},
                                                                    {"abandoned", j.abandoned},
                                                                    {"skipped", j.skipped}};
             for (const auto& [outcome, n] : counts)
                 std::cout << "sqlock_job_runs_total{" << l << ",outcome=\"" << outcome << "\"} "
                           << n << "\n";
         });
    each("sqlock_job_period_seconds", "The job's period (0: caller-named slots).", "gauge",
         [&](const sqlock::job_info& j, const std::string& l) {
             std::cout << "sqlock_job_period_seconds{" << l << "} " << secs(j.period_ms) << "\n";
         });
    each("sqlock_job_running_seconds",
         "How long the job's attempt in progress has been running (0: none).", "gauge",
         [&](const sqlock::job_info& j, const std::string& l) {
             std::cout << "sqlock_job_running_seconds{" << l << "} "
                       << (j.running_since_ms ? secs(j.now_ms - *j.running_since_ms) : "0") << "\n";
         });
    each("sqlock_job_overdue", "1 when the job had no success within 1.5 periods.", "gauge",
         [&](const sqlock::job_info& j, const std::string& l) {
             std::cout << "sqlock_job_overdue{" << l << "} " << (j.overdue() ? 1 : 0) << "\n";
         });
}

/// "3h12m", "45.2s": a short human duration.
std::string human_ms(std::int64_t ms) {
    char buf[48];
    const double s = static_cast<double>(ms) / 1000.0;
    if (ms < 0)
        return "-" + human_ms(-ms);
    if (ms < 60'000)
        std::snprintf(buf, sizeof buf, "%.1fs", s);
    else if (ms < 3'600'000)
        std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(ms / 60'000),
                      static_cast<long long>(ms / 1000 % 60));
    else if (ms < 86'400'000)
        std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(ms / 3'600'000),
                      static_cast<long long>(ms / 60'000 % 60));
    else
        std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(ms / 86'400'000),
                      static_cast<long long>(ms / 3'600'000 % 24));
    return buf;
}

void print_jobs_table(const std::vector<sqlock::job_info>& jobs) {
    std::cout << "\n" << jobs.size() << " scheduled job" << (jobs.size() == 1 ? "" : "s") << ":\n";
    std::printf("%-32s %-8s %-14s %-10s %-9s %-8s %s\n", "JOB", "PERIOD", "LAST SUCCESS", "LAST",
                "SLOT DONE", "OVERDUE", "RUNNING");
    for (const auto& j : jobs) {
        const auto age = j.success_age();
        const std::string success = age ? human_ms(age->count()) + " ago" : "never";
        const std::string period = j.period_ms > 0 ? human_ms(j.period_ms) : "-";
        const std::string done = j.period_ms > 0 ? (j.slot_done() ? "yes" : "no") : "-";
        const std::string overdue = j.period_ms > 0 ? (j.overdue() ? "OVERDUE" : "no") : "-";
        const std::string running =
            j.running_since_ms ? "for " + human_ms(j.now_ms - *j.running_since_ms) : "-";
        std::printf("%-32s %-8s %-14s %-10s %-9s %-8s %s\n", j.name.c_str(), period.c_str(),
                    success.c_str(), j.last_outcome.empty() ? "-" : j.last_outcome.c_str(),
                    done.c_str(), overdue.c_str(), running.c_str());
    }
}

/// One element of status --jobs --json (fields and order as list_help documents them).
ojson job_json(const sqlock::job_info& j) {
    const auto age = j.success_age();
    return {{"name", j.name},
            {"period_ms", j.period_ms},
            {"first_fired_ms", j.first_fired_ms},
            {"last_fired_ms", j.last_fired_ms},
            {"last_outcome", j.last_outcome},
            {"last_started_ms", j.last_started_ms},
            {"last_duration_ms", j.last_duration_ms},
            {"last_success_started_ms", j.last_success_started_ms},
            {"last_success_age_ms", age ? ojson(age->count()) : ojson(nullptr)},
            {"slot_done", j.slot_done()},
            {"overdue", j.overdue()},
            {"running_since_ms", optional_json(j.running_since_ms)},
            {"succeeded", j.succeeded},
            {"failed", j.failed},
            {"lost", j.lost},
            {"abandoned", j.abandoned},
            {"skipped", j.skipped},
            {"now_ms", j.now_ms}};
}

/// "; 2 waiting: connection 7 for 3.0s, connection 9 for 1.2s": the first few waiters of a
/// lock, first in line first, for the status table.
std::string waiters_text(const std::vector<sqlock::lock_waiter>& waiters) {
    if (waiters.empty())
        return {};
    constexpr std::size_t shown = 3;
    std::string text = "; " + std::to_string(waiters.size()) + " waiting: ";
    for (std::size_t i = 0; i < waiters.size() && i < shown; ++i) {
        text += (i ? ", " : "") + printable(waiters[i].who);
        if (waiters[i].waited_for)
            text += " for " + human_ms(waiters[i].waited_for->count());
    }
    if (waiters.size() > shown)
        text += ", ...";
    return text;
}

int cmd_status(const options& o) {
    bool json = false;
    bool prometheus = false;
    bool only_expired = false;
    bool jobs_only = false;
    std::string glob;
    for (std::size_t i = 0; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        if (a == "--json")
            json = true;
        else if (a == "--prometheus")
            prometheus = true;
        else if (a == "--expired")
            only_expired = true;
        else if (a == "--jobs" && o.command == "status")
            jobs_only = true;
        else if (a == "--name" && i + 1 < o.args.size())
            glob = o.args[++i];
        else
            throw usage_error(o.command + ": unknown option " + a);
    }
    auto db = open(o);
    if (jobs_only) {
        // The scheduled jobs alone (status --json keeps its array of locks).
        auto jobs = sqlock::list_jobs(db);
        std::erase_if(jobs, [&](const sqlock::job_info& j) {
            return !glob.empty() && fnmatch(glob.c_str(), j.name.c_str(), 0) != 0;
        });
        if (!json) {
            if (jobs.empty())
                std::cout << "no scheduled jobs in " << db.url() << "\n";
            else
                print_jobs_table(jobs);
            return exit_ok;
        }
        auto rows = ojson::array();
        for (const auto& j : jobs)
            rows.push_back(job_json(j));
        std::cout << json_rows(rows);
        return exit_ok;
    }
    auto locks = db.list();
    if (prometheus) {
        print_prometheus(locks, recent_clock_steps(db));
        print_prometheus_jobs(sqlock::list_jobs(db));
        return exit_ok;
    }
    std::erase_if(locks, [&](const sqlock::lock_info& l) {
        if (only_expired && !is_expired_lease(l))
            return true;
        return !glob.empty() &&
               fnmatch(glob.c_str(), std::string(l.primitive_name()).c_str(), 0) != 0;
    });
    const auto counted = classify_rows(locks);
    if (json) {
        auto rows = ojson::array();
        for (std::size_t i = 0; i < locks.size(); ++i)
            rows.push_back(lock_json(locks[i], counted[i]));
        std::cout << json_rows(rows);
        return exit_ok;
    }
    if (o.command == "status") {
        // Counted as what the rows are: a held queue row is someone waiting, a held writer
        // gate is a writer (its permits are its hold), a permit or mutex held is a holder.
        std::size_t held = 0, waiting = 0, unknown = 0, other = 0;
        for (std::size_t i = 0; i < locks.size(); ++i) {
            waiting += locks[i].waiters.size();
            held += counted[i] == row_count::holder ? 1U : 0U;
            waiting += counted[i] == row_count::waiter ? 1U : 0U;
            unknown += counted[i] == row_count::unknown ? 1U : 0U;
            other += counted[i] == row_count::free ? 1U : 0U;
        }
        std::cout << held << " held, " << waiting << " waiting, " << other << " free or expired";
        if (unknown > 0)
            std::cout << ", " << unknown << " unknown";
        std::cout << ", in " << db.url() << "\n";
        if (unknown > 0)
            std::cout << "unknown: select_for_update holders are hidden by this server; MariaDB "
                         "shows them with SET GLOBAL innodb_status_output_locks = ON and the "
                         "PROCESS privilege\n";
        if (std::any_of(locks.begin(), locks.end(),
                        [](const sqlock::lock_info& l) { return l.waiters_hidden; }))
            std::cout << "waiters: hidden by this server for unique_key and optimistic_version "
                         "locks; MariaDB shows them with performance_schema = ON and "
                         "performance_schema_instrument = 'wait/lock/metadata/sql/mdl=ON' "
                         "(server options) and SELECT on performance_schema\n";
        if (const auto steps = recent_clock_steps(db); !steps.empty()) {
            const auto& last = steps.front();
            std::printf("clock: the database's clock stepped %zu time%s in the last 24 h; latest "
                        "%+.1fs at %s UTC, seen by %s (locks are unaffected)\n",
                        steps.size(), steps.size() == 1 ? "" : "s",
                        static_cast<double>(last.step.count()) / 1000.0, last.seen_at.c_str(),
                        last.observer.c_str());
        }
        for (const auto& warning : db.topology().warnings)
            std::cout << "replication: " << warning << "\n";
    }
    // status: the scheduled jobs follow the locks (list shows locks only).
    const auto print_jobs = [&] {
        if (o.command != "status" || only_expired)
            return;
        auto jobs = sqlock::list_jobs(db);
        std::erase_if(jobs, [&](const sqlock::job_info& j) {
            return !glob.empty() && fnmatch(glob.c_str(), j.name.c_str(), 0) != 0;
        });
        if (!jobs.empty())
            print_jobs_table(jobs);
    };
    if (locks.empty()) {
        if (o.command != "status")
            std::cout << "no locks in " << db.url() << "\n";
        print_jobs();
        return exit_ok;
    }
    std::printf("%-32s %10s %5s %-18s %-24s %-14s %s\n", "NAME", "TOKEN", "HOLDS", "STRATEGY",
                "HOLDER", "HELD FOR", "EXPIRES");
    for (std::size_t i = 0; i < locks.size(); ++i) {
        const auto& l = locks[i];
        const bool transactional = l.strategy == "select_for_update";
        std::string holder = "-";
        if (l.holder_hidden)
            holder = "unknown";
        else if (l.held() && l.pid > 0 && l.host.empty()) // MariaDB: a session and its pid
            holder = printable(l.owner) + " (pid " + std::to_string(l.pid) + ")";
        else if (l.held())
            holder =
                l.pid > 0 ? printable(l.host) + ":" + std::to_string(l.pid) : printable(l.owner);
        const std::string held_for =
            l.held() && !l.acquired_at.empty() ? human_ms(l.held_for.count()) : "-";
        std::string expires;
        if (l.holder_hidden) {
            expires = "unknown (holder hidden)";
        } else if (transactional) {
            // Held by an open transaction: no lease, it lasts as long as the holder's session.
            expires = l.held() ? "with its session" : "free";
        } else if (l.owner.empty()) {
            expires = "free";
        } else if (l.expired()) {
            expires =
                "expired " + human_ms(-l.expires_in.count()) + " ago (" + l.expires_at + " UTC)";
        } else {
            expires = "in " + human_ms(l.expires_in.count()) + " (" + l.expires_at + " UTC)";
        }
        if (counted[i] == row_count::waiter)
            expires += is_gate_row(l) ? "; the writer waits for readers" : "; someone waits";
        else if (counted[i] == row_count::writers_slot)
            expires += "; collected by the writer";
        expires += waiters_text(l.waiters);
        const std::string token = l.token > 0 ? std::to_string(l.token) : "-";
        std::printf("%-32s %10s %5lld %-18s %-24s %-14s %s\n", display_name(l).c_str(),
                    token.c_str(), static_cast<long long>(l.hold_count), l.strategy.c_str(),
                    holder.c_str(), held_for.c_str(), expires.c_str());
    }
    print_jobs();
    return exit_ok;
}

int cmd_reap(const options& o) {
    sqlock::reap_options ro;
    ro.settle = std::chrono::minutes(1);
    bool json = false;
    for (std::size_t i = 0; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= o.args.size())
                throw usage_error(a + " needs a value");
            return o.args[++i];
        };
        if (a == "--dry-run")
            ro.dry_run = true;
        else if (a == "--older-than")
            ro.older_than = duration_arg(a, value());
        else if (a == "--settle")
            ro.settle = duration_arg(a, value());
        else if (a == "--keep-history")
            ro.keep_history = duration_arg(a, value());
        else if (a == "--batch") {
            const auto v = value();
            std::size_t n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc{} || end != v.data() + v.size() || n == 0)
                throw usage_error("--batch: \"" + v + "\" is not a positive number");
            ro.batch = n;
        } else if (a == "--json")
            json = true;
        else
            throw usage_error("reap: unknown option " + a);
    }
    if (ro.keep_history < std::chrono::hours(24))
        throw usage_error("--keep-history: the run ledger must be kept at least 1d");
    auto db = open(o);
    const auto start = std::chrono::steady_clock::now();
    const auto r = db.reap(ro);
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (json) {
        const ojson out = {{"deleted", r.deleted},
                           {"expired", r.expired},
                           {"deferred", r.deferred},
                           {"batches", r.batches},
                           {"dry_run", ro.dry_run},
                           {"older_than_ms", ro.older_than.count()},
                           {"batch", ro.batch},
                           {"elapsed_ms", elapsed.count()},
                           {"history_deleted", r.history_deleted},
                           {"history_expired", r.history_expired},
                           {"keep_history_ms", ro.keep_history.count()}};
        std::cout << json_line(out) << "\n";
    } else if (ro.dry_run) {
        std::cout << r.expired << " expired rows and " << r.history_expired
                  << " run-ledger rows would be deleted from " << db.url() << "\n";
    } else {
        std::cout << "deleted " << r.deleted << " expired rows in " << r.batches << " batches and "
                  << r.history_deleted << " run-ledger rows from " << db.url() << " ("
                  << elapsed.count() << " ms)";
        if (r.deferred > 0)
            std::cout << "; " << r.deferred
                      << " expired-looking leases deferred (not yet seen unchanged for their TTL)";
        std::cout << "\n";
    }
    return exit_ok;
}

int cmd_release(const options& o) {
    if (o.args.empty())
        throw usage_error("release: missing lock NAME");
    const std::string name = o.args[0];
    bool force = false;
    bool json = false;
    std::optional<std::int64_t> permit;
    std::string actor;
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        if (a == "--force")
            force = true;
        else if (a == "--json")
            json = true;
        else if (a == "--actor" && i + 1 < o.args.size())
            actor = o.args[++i];
        else if (a == "--permit" && i + 1 < o.args.size()) {
            const auto& v = o.args[++i];
            std::int64_t k = -1;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), k);
            if (ec != std::errc{} || end != v.data() + v.size() || k < 0 ||
                k >= sqlock::max_permits)
                throw usage_error("--permit: \"" + v + "\" is not a permit number");
            permit = k;
        } else
            throw usage_error("release: unknown option " + a);
    }
    // A semaphore's permit K is the lock "NAME<0x1f>permit K" (sqlock/semaphore.hpp).
    const std::string row_name = permit ? name + "\x1fpermit " + std::to_string(*permit) : name;
    if (!force)
        throw usage_error("release: breaking someone else's lock needs --force (the holder "
                          "loses it; its fenced writes will be refused)");
    if (actor.empty()) {
        const char* user = std::getenv("USER");
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        actor = std::string(user ? user : "unknown") + "@" + host + " (sqlock release --force)";
    }
    auto db = open(o);
    const std::string shown = readable_lock_name(row_name); // "NAME [permit K]", escaped
    const auto r = db.force_release(row_name, actor);
    if (json) {
        const ojson out = {{"name", name},
                           {"permit", optional_json(permit)},
                           {"released", r.released},
                           {"strategy", r.strategy},
                           {"previous_owner", r.previous_owner},
                           {"previous_token", r.previous_token},
                           {"new_token", r.new_token},
                           {"sessions_ended", r.sessions_ended},
                           {"actor", actor}};
        std::cout << json_line(out) << "\n";
    } else if (!r.released) {
        std::cout << "nothing to release: lock \"" << shown << "\" is not held in " << db.url()
                  << "\n";
    } else if (r.strategy == "select_for_update") {
        std::cout << "released \"" << shown << "\": ended " << r.sessions_ended
                  << " holder session(s); recorded as " << actor << "\n";
    } else {
        std::cout << "released \"" << shown << "\" (was "
                  << (r.previous_owner.empty() ? std::string("free") : r.previous_owner)
                  << "); token " << r.previous_token << " -> " << r.new_token
                  << ", so the old holder's fenced writes fail; recorded as " << actor << "\n";
    }
    return r.released ? exit_ok : exit_not_found;
}

int cmd_leader(const options& o) {
    if (o.args.empty())
        throw usage_error("leader: missing election NAME");
    const std::string name = o.args[0];
    bool json = false;
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        if (o.args[i] == "--json")
            json = true;
        else
            throw usage_error("leader: unknown option " + o.args[i]);
    }
    auto db = open(o);
    const sqlock::leader_election election(db, name);
    const auto who = election.leader();
    if (json) {
        ojson out = {{"name", name}, {"leader", who.has_value()}};
        if (who) {
            out["id"] = who->id;
            out["host"] = who->host;
            out["pid"] = who->pid;
            out["term"] = who->term;
            out["since"] = who->since;
            out["expires"] = who->expires;
            out["remaining_ms"] = who->remaining.count();
            out["leading_for_ms"] = who->leading_for.count();
        } else {
            for (const char* key : {"id", "host", "pid", "term", "since", "expires", "remaining_ms",
                                    "leading_for_ms"})
                out[key] = nullptr;
        }
        std::cout << json_line(out) << "\n";
    } else if (who) {
        std::cout << "leader of \"" << name << "\": " << who->host << ":" << who->pid << ", term "
                  << who->term << ", leading since " << who->since << " UTC, lease expires "
                  << who->expires << " UTC (in " << who->remaining.count() << " ms)\n  id "
                  << who->id << "\n";
    } else {
        std::cout << "no leader for \"" << name << "\"";
        // The last leader, when its lease is still in the row: it stopped renewing.
        if (const auto row = db.find(name); row && !row->owner.empty())
            std::cout << ": the last leader, " << row->host << ":" << row->pid << " term "
                      << row->token << ", stopped renewing; its lease expired "
                      << -row->expires_in.count() << " ms ago";
        std::cout << "\n";
    }
    return who ? exit_ok : exit_not_found;
}

int cmd_history(const options& o) {
    if (o.args.empty())
        throw usage_error("history: missing job NAME");
    const std::string name = o.args[0];
    std::size_t limit = 20;
    bool json = false;
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        if (a == "--json") {
            json = true;
        } else if (a == "--limit" && i + 1 < o.args.size()) {
            const auto v = o.args[++i];
            std::size_t n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc{} || end != v.data() + v.size() || n == 0)
                throw usage_error("--limit: \"" + v + "\" is not a positive number");
            limit = n;
        } else {
            throw usage_error("history: unknown option " + a);
        }
    }
    auto db = open(o);
    const auto runs = sqlock::job_history(db, name, limit);
    if (json) {
        // Fields and order as history_help documents them.
        auto rows = ojson::array();
        for (const auto& r : runs)
            rows.push_back({{"name", r.name},
                            {"slot", r.slot},
                            {"token", r.token},
                            {"owner", r.owner},
                            {"host", r.host},
                            {"pid", r.pid},
                            {"period_ms", r.period_ms},
                            {"started_at", sqlock::format_utc_ms(r.started_ms)},
                            {"started_ms", r.started_ms},
                            {"ended_ms", optional_json(r.ended_ms)},
                            {"duration_ms", optional_json(r.duration_ms)},
                            {"exit_status", optional_json(r.exit_status)},
                            {"signal", optional_json(r.signal)},
                            {"outcome", r.outcome},
                            {"message", r.message}});
        std::cout << json_rows(rows);
        return exit_ok;
    }
    if (runs.empty()) {
        std::cout << "no recorded runs of job \"" << name << "\" in " << db.url() << "\n";
        return exit_ok;
    }
    std::printf("%-26s %-10s %-24s %10s %-26s %-10s %s\n", "SLOT", "OUTCOME", "HOST:PID", "TOKEN",
                "STARTED (UTC, db clock)", "DURATION", "EXIT");
    for (const auto& r : runs) {
        const auto who = r.host + ":" + std::to_string(r.pid);
        const auto duration = r.duration_ms ? human_ms(*r.duration_ms) : std::string("-");
        const auto exit = r.signal        ? "signal " + std::to_string(*r.signal)
                          : r.exit_status ? std::to_string(*r.exit_status)
                                          : std::string("-");
        std::printf("%-26s %-10s %-24s %10lld %-26s %-10s %s\n", r.slot.c_str(), r.outcome.c_str(),
                    who.c_str(), static_cast<long long>(r.token),
                    sqlock::format_utc_ms(r.started_ms).c_str(), duration.c_str(), exit.c_str());
    }
    if (const auto jobs = sqlock::list_jobs(db); !jobs.empty()) {
        for (const auto& j : jobs)
            if (j.name == name)
                std::cout << "skipped firings (slot already done): " << j.skipped << "\n";
    }
    return exit_ok;
}

/// Nagios plugin exit codes.
enum nagios : int { nagios_ok = 0, nagios_warning = 1, nagios_critical = 2, nagios_unknown = 3 };

int check_job(const options& o) {
    if (o.args.empty())
        throw usage_error("check: missing job NAME");
    const std::string name = o.args[0];
    std::optional<std::chrono::milliseconds> max_age;
    std::optional<std::chrono::milliseconds> warn_age;
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        if (a == "--max-age" && i + 1 < o.args.size())
            max_age = duration_arg(a, o.args[++i]);
        else if (a == "--warn-age" && i + 1 < o.args.size())
            warn_age = duration_arg(a, o.args[++i]);
        else
            throw usage_error("check: unknown option " + a);
    }
    auto db = open(o);
    std::optional<sqlock::job_info> job;
    for (auto& j : sqlock::list_jobs(db))
        if (j.name == name)
            job = std::move(j);
    if (!job) {
        std::cout << "SQLOCK UNKNOWN - job \"" << name << "\" has never fired in " << db.url()
                  << "\n";
        return nagios_unknown;
    }
    if (!max_age) {
        if (job->period_ms <= 0)
            throw usage_error("check: job \"" + name + "\" has no period: pass --max-age D");
        max_age = std::chrono::milliseconds(job->period_ms * 3 / 2); // as the alert rule
    }
    const auto age = job->success_age();
    const std::string last = job->last_outcome.empty() ? "none" : job->last_outcome;
    const auto perf = [&] {
        std::ostringstream p;
        p << " | age=" << (age ? age->count() / 1000 : -1) << "s;"
          << (warn_age ? std::to_string(warn_age->count() / 1000) : "") << ";"
          << max_age->count() / 1000 << " failed=" << job->failed << "c lost=" << job->lost
          << "c abandoned=" << job->abandoned << "c";
        return p.str();
    };
    const std::string subject = "job \"" + name + "\": ";
    if (!age) {
        std::cout << "SQLOCK CRITICAL - " << subject << "never succeeded (first fired "
                  << human_ms(job->now_ms - job->first_fired_ms) << " ago, last outcome " << last
                  << ")" << perf() << "\n";
        return nagios_critical;
    }
    const std::string ago = "last success " + human_ms(age->count()) + " ago";
    if (*age > *max_age) {
        std::cout << "SQLOCK CRITICAL - " << subject << ago << ", more than "
                  << human_ms(max_age->count()) << " (last outcome " << last << ")" << perf()
                  << "\n";
        return nagios_critical;
    }
    if (warn_age && *age > *warn_age) {
        std::cout << "SQLOCK WARNING - " << subject << ago << ", more than "
                  << human_ms(warn_age->count()) << perf() << "\n";
        return nagios_warning;
    }
    if (last != "succeeded" && last != "none") {
        std::cout << "SQLOCK WARNING - " << subject << ago << ", but the last attempt " << last
                  << perf() << "\n";
        return nagios_warning;
    }
    std::cout << "SQLOCK OK - " << subject << ago << " (max " << human_ms(max_age->count()) << ")"
              << perf() << "\n";
    return nagios_ok;
}

int cmd_check(const options& o) {
    // A monitoring plugin: whatever prevents an answer is UNKNOWN (3), never another code.
    try {
        return check_job(o);
    } catch (const std::exception& e) {
        std::cout << "SQLOCK UNKNOWN - " << e.what() << "\n";
        return nagios_unknown;
    }
}

int exit_code_for(const sqlock::error& e) {
    // `run --wait`: the server refused connections (no free slot), did not answer them in
    // time, or (several hosts) none accepted writes, until the deadline; like a lock held for
    // all of --wait, the command did not run and may be tried again later.
    if (dynamic_cast<const not_granted_in_time*>(&e) != nullptr)
        return exit_timeout;
    switch (e.code()) {
    case sqlock::errc::invalid_argument:
        return exit_usage;
    case sqlock::errc::connection:
        return exit_unavailable;
    case sqlock::errc::schema_missing:
    case sqlock::errc::schema_mismatch:
    case sqlock::errc::topology:
        return exit_config;
    default:
        return exit_software;
    }
}

} // namespace

int main(int argc, char** argv) {
    try {
        const auto o = parse_args(argc, argv);
        database_for_jobs().url = o.url;
        if (o.password_file_flag) {
            std::error_code ec;
            const auto path = std::filesystem::absolute(o.connect.password_file, ec);
            database_for_jobs().password_file = ec ? o.connect.password_file : path.string();
        }
        static const std::map<std::string, std::pair<int (*)(const options&), const char*>>
            commands = {
                {"migrate", {cmd_migrate, migrate_help}}, {"run", {cmd_run, run_help}},
                {"list", {cmd_status, list_help}},        {"status", {cmd_status, list_help}},
                {"reap", {cmd_reap, reap_help}},          {"release", {cmd_release, release_help}},
                {"history", {cmd_history, history_help}}, {"check", {cmd_check, check_help}},
                {"leader", {cmd_leader, leader_help}}};
        if (o.command == "--version") {
            std::cout << "sqlock " << SQLOCK_VERSION_STRING << "\n";
            return exit_ok;
        }
        if (o.command.empty() || o.command == "help") {
            std::cout << main_help;
            return o.help || o.command == "help" ? exit_ok : exit_usage;
        }
        const auto it = commands.find(o.command);
        if (it == commands.end())
            throw usage_error("unknown command \"" + o.command + "\"");
        if (o.help) {
            std::cout << it->second.second;
            return exit_ok;
        }
        if (!o.args_error.empty()) {
            if (o.command == "check") { // a monitoring plugin: bad usage is UNKNOWN (3) too
                std::cout << "SQLOCK UNKNOWN - " << o.args_error << "\n";
                return nagios_unknown;
            }
            throw usage_error(o.args_error);
        }
        return it->second.first(o);
    } catch (const usage_error& e) {
        std::cerr << "sqlock: " << e.what() << "\n(see sqlock --help)\n";
        return exit_usage;
    } catch (const sqlock::error& e) {
        std::cerr << "sqlock: " << readable_message(e.what()) << "\n"; // no raw control bytes
        return exit_code_for(e);
    } catch (const std::exception& e) {
        std::cerr << "sqlock: " << readable_message(e.what()) << "\n";
        return exit_software;
    }
}
