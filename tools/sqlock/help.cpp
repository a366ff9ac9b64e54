// The help texts of the sqlock command-line tool (sqlock --help, sqlock COMMAND --help). The
// manual page (docs/sqlock.1.scd) says the same at length; tests/docs/check_cli_docs.sh checks
// that the two name the same commands and options.
#include "help.hpp"

namespace sqlock::cli {

const char* const main_help =
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
  reseed    quorum locks: raise a restored member's marks from the other members

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

const char* const migrate_help =
    R"(usage: sqlock [--url URL] migrate [--wait D] [--lock-wait D] [--print | --status]

Creates or upgrades sqlock's tables in the database. Idempotent; safe when several hosts run it
at once, and beside their lock traffic: each DDL statement waits at most --lock-wait (default
1s) for a lock on a table, so lock traffic queued behind it waits no longer; a step that could
not get its lock is tried again, with pauses, for up to --wait (default 5m), then exit 75.
With --print, writes the DDL for the URL's backend to stdout instead (nothing is applied; the
database is not contacted), for a DBA's own migration tool. With --status, lists each
migration as applied or pending. Several --url (a quorum lock's members): each is migrated in
turn (--print and --status take one).
)";

const char* const run_help =
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

A quorum lock (the guide "Quorum locks", docs/site/guides/quorum.md): with three or more --url,
NAME is held on a majority of those independent databases (sqlock::quorum_mutex), so CMD still
runs while a minority of them is down or cannot be reached; $SQLOCK_TOKEN strictly increases
across the quorum's grants. A plain lock only: not with --permits, --shared, --exclusive,
--once-per, --slot or select_for_update. Each member needs `sqlock migrate` (schema 9).
)";

const char* const history_help =
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

const char* const check_help =
    R"(usage: sqlock [--url URL] check NAME [--max-age D] [--warn-age D]

A monitoring check (Nagios/Icinga plugin conventions) for scheduled job NAME. One line on
stdout, with performance data. Exit:
  0 OK        the last success started at most --max-age ago (and the last attempt succeeded)
  1 WARNING   older than --warn-age, or the last attempt failed / was lost / abandoned
  2 CRITICAL  no success within --max-age (default: 1.5 x the job's period), or never
  3 UNKNOWN   the job never fired, the database cannot be read, or bad usage
)";

const char* const list_help =
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
With three or more --url (a quorum lock's members): each quorum lock and what every member says
of it: held (one owner's lease live on a majority), free (a majority answered, none holds it)
or undecided (too few answered, or they differ), the highest token, and per member its holder,
token and lease, or why it did not answer. Takes --name GLOB and --json only; --json: an array
of {name, primitive ("quorum_mutex"), state, owner, host, pid, held_on, token, members: [{url,
answered, error, token, owner, host, pid, acquired_at, expires_in_ms, live}]}.
)";

const char* const reap_help =
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

const char* const leader_help = R"(usage: sqlock [--url URL] leader NAME [--json]

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

const char* const release_help =
    R"(usage: sqlock [--url URL] release NAME --force [--permit K] [--actor WHO] [--json]

Break-glass for operators. With --permit K, NAME is a semaphore and its permit K is released.
Lease strategies: the row is freed and its fencing token moved forward, so the old holder's renewals, releases and fenced writes fail from now on (it gets
its lost signal). select_for_update on PostgreSQL: the holder's session is ended. Recorded in
the <prefix>audit table with WHO (default: $USER@host). A lock nobody holds (no row, or a free
row) is left alone: "nothing to release", exit 1, no token moved, nothing recorded; a holder
whose lease expired (not taken over) still holds it and is released as above.
  --json   {"name", "permit" (null without --permit), "released", "strategy", "previous_owner",
            "previous_token", "new_token", "sessions_ended", "actor"}
With three or more --url (a quorum lock's members): the holder's row is freed on every member
that answers, each recorded in that member's audit table; the holder is told at its next
renewal (a `run` stops its command, exit 76). Tokens stay: the next grant's is higher anyway.
Exit 0 released, 1 nothing held on the members that answered, 69 fewer than a majority
answered (the lock may still be held on the others). --json: {"name", "released",
"released_on", "answered", "members", "previous_owner", "previous_token", "actor"}.
)";

const char* const reseed_help =
    R"(usage: sqlock --url A --url B --url C reseed MEMBER [--json]

For a quorum lock's members (three or more --url; the guide "Quorum locks"): MEMBER (its URL as
given, or its position 1..N) was restored from a backup, or its server lost commits, so its
marks (the highest token it accepted per name) may have gone back. Raises each of its marks to
the highest token the other members accepted, creating the names it lacks and freeing its rows;
never lowers a mark. Run it before MEMBER rejoins (before its clients may reach it again): a
grant that reaches it earlier may repeat a token. Needs N - majority + 1 of the other members
to answer (both of them with three members), else exits 69 and changes nothing.
  --json   {"member", "names", "raised", "answered"}
)";

} // namespace sqlock::cli
