/// @file
/// database.hpp: a connection pool to one lock database.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sqlock {

namespace detail {
class database_impl;
class database_access;
} // namespace detail

/// Which kind of server a database handle talks to.
enum class backend_kind {
    postgresql, ///< PostgreSQL (URL scheme postgresql:// or postgres://)
    mysql,      ///< MariaDB 10.5 or later (URL scheme mysql:// or mariadb://); a connection to
                ///< any other server is refused with errc::unsupported
    sqlite      ///< an SQLite file (URL scheme sqlite:)
};

/// "postgresql", "mysql" or "sqlite".
std::string_view to_string(backend_kind kind) noexcept;

/// Settings for sqlock::connect. Every field has a safe default.
struct connect_options {
    /// Prefix of every table sqlock creates ("sqlock_" gives "sqlock_locks").
    /// Must match [A-Za-z_][A-Za-z0-9_]{0,31}; it is quoted as an identifier in SQL.
    std::string table_prefix = "sqlock_";
    /// Upper bound on establishing one connection (TCP connect + authentication). PostgreSQL
    /// keeps it to the millisecond; MariaDB's client counts whole seconds (rounded up).
    std::chrono::milliseconds connect_timeout = std::chrono::seconds(5);
    /// connect() gives up at this point of the steady clock even when connect_timeout ends
    /// later: its first connection, still in flight then, is abandoned (errc::connection, the
    /// connect timeout's error; is_connect_unanswered()). For a caller whose whole operation
    /// has a deadline (`sqlock run --wait`). Later connections use connect_timeout alone (a
    /// lock wait bounds those by its own deadline). Default: none.
    std::optional<std::chrono::steady_clock::time_point> connect_deadline;
    /// Upper bound on waiting for one reply from the server (0 = none). A hung server makes
    /// operations fail with errc::timeout / errc::connection instead of hanging.
    std::chrono::milliseconds io_timeout = std::chrono::seconds(30);
    /// Most connections kept open at once; further users wait for one (bounded by connect_timeout).
    std::size_t pool_size = 8;
    /// connect() fails with errc::schema_mismatch when the database's lock tables are newer
    /// than this library. Older ones (or none) are reported when a lock is first taken, so
    /// that connect() + migrate() works on a fresh database.
    bool check_schema = true;
    /// A step of the database server's wall clock at least this large, seen between two
    /// replies, is reported: to on_clock_step, in the `<prefix>clock_steps` table and so in
    /// `sqlock status`. Locks do not depend on the server's clock for takeover (a step cannot
    /// end a lease early); this is for operators. Must be positive.
    std::chrono::milliseconds clock_step_threshold = std::chrono::seconds(1);
    /// Called with each step noticed (signed: positive when the server's clock jumped
    /// forward), on the thread that noticed it, in the middle of a lock operation: it must not
    /// block or use sqlock. Unset: the first step is written to stderr as one line.
    std::function<void(std::chrono::milliseconds step)> on_clock_step;
    /// Every new connection is checked against the server's replication (see
    /// database::topology() and docs: databases/replicated.md). Replicas that are all
    /// asynchronous mean a failover can lose a grant the old primary acknowledged (two holders,
    /// a token handed out twice): by default that is a warning (topology().warnings, and one
    /// line on stderr); with this set it is errc::topology. A read-only standby is always refused.
    bool require_synchronous_replication = false;
    /// A file that holds the database password, for a URL without one (so that the password
    /// is not in the URL, a command line or an environment). Its contents are the password;
    /// one trailing newline is dropped. It must be a regular file that neither group nor
    /// others may read or write (`chmod 600 FILE`); otherwise, when it is empty, and when the
    /// URL has a password too, connect() throws errc::invalid_argument. Not read for SQLite.
    /// Empty (the default): the URL's password; without one, PostgreSQL's libpq looks in
    /// PGPASSWORD and the password file (~/.pgpass or PGPASSFILE) as usual.
    std::string password_file;
    /// SQLite: create the database file when it does not exist (the default). false, for
    /// tools that only read (`sqlock status`): a missing file is errc::connection naming the
    /// path, and nothing is created (no database, -wal or -shm file). Ignored by the servers.
    bool create_sqlite_file = true;
};

/// What sqlock found out about the server behind a database handle, from the last connection
/// it opened (every new connection is checked; see database::topology()).
struct topology_info {
    /// "host:port" of the server the last connection reached (of several in the URL: the one
    /// that accepts writes); the file path for SQLite.
    std::string server;
    /// Replicas streaming from it (PostgreSQL pg_stat_replication, MariaDB Slaves_connected);
    /// 0 for a single server and for SQLite.
    int replicas = 0;
    /// Commits wait until a replica has them: PostgreSQL synchronous_standby_names set and
    /// synchronous_commit on/remote_write/remote_apply; MariaDB semi-synchronous replication
    /// active with wait point AFTER_SYNC. Then a promoted replica has every acknowledged grant.
    bool synchronous = false;
    /// Nodes of a multi-writer cluster the server belongs to (MariaDB Galera
    /// wsrep_cluster_size); 1 otherwise. select_for_update is refused above 1: row locks are
    /// held on one node only.
    int cluster_nodes = 1;
    /// A pooler shares server connections between transactions (PgBouncer in transaction
    /// mode; told by the server's backend pid differing from the one the pooler gave us).
    /// Every strategy still works: statements go unprepared, waiters poll instead of
    /// LISTEN and of the unique_key server-side queue, and statement_timeout is not set (it
    /// would stay on a server connection other clients get).
    bool transaction_pooler = false;
    /// Why this setup may lose a grant at a failover (empty when it cannot): asynchronous
    /// replicas, a Galera cluster (for select_for_update). Shown by `sqlock status`.
    std::vector<std::string> warnings;
};

/// A session waiting for a lock (lock_info::waiters).
struct lock_waiter {
    std::string who; ///< the waiting session, as the server names it
    /// How long it has waited so far; nullopt where the backend cannot tell (SQLite's queue
    /// files record the order of the line, not when each joined).
    std::optional<std::chrono::milliseconds> waited_for;
    /// Its place in the line (1: next), where the server grants in order; nullopt otherwise.
    std::optional<std::int64_t> position;
};

/// One row of the lock table, as reported by the database. Times are the database's clock.
struct lock_info {
    std::string name;     ///< the lock name
    std::string owner;    ///< full owner id: host:pid:nonce/handle
    std::string host;     ///< holder's host name
    std::int64_t pid = 0; ///< holder's process id
    std::string strategy; ///< "unique_key", ...
    /// Lease strategies: the fencing token of the current grant while held, else of the last
    /// one (a force release moves it forward). select_for_update rows carry 0: their grants'
    /// tokens are not stored in the row.
    std::int64_t token = 0;
    /// Lease strategies: the holder's re-entrant hold count (1 when free). select_for_update
    /// rows carry 1: the holding process keeps its count.
    std::int64_t hold_count = 0;
    std::string acquired_at; ///< UTC, "YYYY-MM-DD HH:MM:SS.ffffff"
    std::string expires_at;  ///< UTC, same format
    /// expires_at minus the database's current time; negative once expired.
    std::chrono::milliseconds expires_in{0};
    /// How long the current holder has held it (database clock).
    std::chrono::milliseconds held_for{0};
    /// select_for_update on a server that does not show who holds a row lock (MariaDB without
    /// its InnoDB lock monitor, which needs innodb_status_output_locks = ON and the PROCESS
    /// privilege): whether it is held is unknown, and held() is false. Never set elsewhere.
    bool holder_hidden = false;
    /// Callers waiting for this lock, where the database shows them, first in line first:
    /// SQLite (every strategy: the tickets of its queue file); PostgreSQL (every strategy:
    /// the sessions in the name's queue, or in line for a select_for_update row); MariaDB
    /// (select_for_update with the InnoDB lock monitor on; the other strategies with
    /// performance_schema's metadata-lock instrument on).
    std::vector<lock_waiter> waiters;
    /// The server does not show who waits for this lock (MariaDB without the monitor or
    /// instrument above): `waiters` is empty whether or not someone waits.
    bool waiters_hidden = false;
    /// True when expires_at has passed by the database clock (expires_in <= 0). select_for_update
    /// rows never expire; held() says whether the lock is held.
    bool expired() const noexcept { return expires_in.count() <= 0; }
    /// Held right now: a live lease, or a select_for_update row locked by a session.
    bool held() const noexcept {
        return strategy == "select_for_update" ? !owner.empty() : !owner.empty() && !expired();
    }
    /// The name an application gave: `name` for a mutex; for the locks a semaphore or a
    /// shared_mutex is made of (named "NAME<0x1f>ROLE", see role()) the primitive's NAME.
    std::string_view primitive_name() const noexcept {
        return std::string_view(name).substr(0, std::min(name.find('\x1f'), name.size()));
    }
    /// "" for a mutex; "permit K" or "permit queue" for a semaphore's locks; "reader K",
    /// "reader queue" or "writer" for a shared_mutex's.
    std::string_view role() const noexcept {
        const auto split = name.find('\x1f');
        return split == std::string::npos ? std::string_view{}
                                          : std::string_view(name).substr(split + 1);
    }
};

/// What reap() does (see database::reap).
struct reap_options {
    std::size_t batch = 1000;                ///< rows deleted per statement (>= 1)
    std::chrono::milliseconds older_than{0}; ///< grace: only rows expired at least this long
    bool dry_run = false;                    ///< count what would be deleted, delete nothing
    /// A lease that looks expired but was never released is deleted only once this database
    /// handle has seen it unchanged for its holder's TTL on its own monotonic clock, so that a
    /// step of the database's clock can never make the reaper end a live lease. Across reap()
    /// calls on one handle (the in-process reaper) that happens by itself; one call waits up
    /// to `settle` for it (sqlock reap: --settle, 1 minute by default).
    std::chrono::milliseconds settle{0};
    /// Run-ledger retention (sqlock::job): attempts that started longer ago than this, and
    /// longer ago than their own job's period, are deleted (the jobs' counters and last
    /// success are kept). At least one day.
    std::chrono::milliseconds keep_history = std::chrono::hours(24 * 90);
    /// Prune the run ledger in this call (sqlock::reaper does it at most every 10 minutes:
    /// retention is counted in days, leases in seconds).
    bool prune_history = true;
};

/// What database::reap() did (or, in a dry run, would do).
struct reap_result {
    std::size_t deleted = 0;  ///< lock rows deleted (0 in a dry run)
    std::size_t batches = 0;  ///< statements sent
    std::size_t expired = 0;  ///< dry run: lock rows that would be deleted (once settled)
    std::size_t deferred = 0; ///< leases that look expired, not yet seen unchanged for their TTL
    std::size_t history_deleted = 0; ///< run-ledger rows deleted (0 in a dry run)
    std::size_t history_expired = 0; ///< dry run: run-ledger rows that would be deleted
};

/// What database::force_release() did.
struct force_release_result {
    bool released = false;           ///< false: no such lock row, or nothing to release
    std::string strategy;            ///< of the row
    std::string previous_owner;      ///< "" when it was free
    std::int64_t previous_token = 0; ///< the row's token before: the old holder's grant
    std::int64_t new_token = 0;      ///< lease strategies: the token moved past the old holder's
    std::size_t sessions_ended = 0;  ///< select_for_update (PostgreSQL): holder sessions ended
};

/// A step of the database server's clock that a sqlock process noticed (database::clock_steps).
struct clock_step_record {
    std::string seen_at;  ///< UTC, "YYYY-MM-DD HH:MM:SS.ffffff", by the database's clock
    std::string observer; ///< host:pid of the process that noticed it
    std::chrono::milliseconds step{0}; ///< + forward, - back
    std::chrono::milliseconds age{0};  ///< how long ago, by the database's clock
};

/// How database::migrate() shares the lock tables with the lock traffic of other hosts (a
/// rolling upgrade migrates while older and newer hosts lock).
struct migrate_options {
    /// The longest one DDL statement of a migration waits for a lock on a table. Lock traffic
    /// that queues behind the waiting DDL (PostgreSQL, MariaDB: every statement on that table)
    /// waits at most this long per try. At least 1 ms; MariaDB rounds it up to whole seconds.
    std::chrono::milliseconds lock_wait{std::chrono::seconds(1)};
    /// How long migrate() keeps trying a step whose DDL could not get its lock in time (lock
    /// holders keep transactions open on the table: a select_for_update holder for as long as
    /// it holds), pausing between tries so that lock traffic flows; then errc::timeout. Zero:
    /// one try.
    std::chrono::milliseconds wait{std::chrono::minutes(5)};
};

/// One migration and whether it is applied.
struct migration_state {
    int version = 0;      ///< schema version it brings the lock tables to (1, 2, ...)
    std::string name;     ///< its file name, e.g. "0001_create_locks.sql"
    bool applied = false; ///< recorded as applied in this database
};

/// A handle to one lock database: a small pool of connections plus the SQL for its backend.
///
/// Made by sqlock::connect(). Cheap to copy (copies share the pool). Thread-safe: any number of
/// threads may use one database and the mutexes made from it.
///
/// Errors: members that talk to the database throw sqlock::error when it cannot be used:
/// errc::connection or errc::timeout when it cannot be reached or does not answer,
/// errc::schema_missing when the lock tables are missing (run migrate()); bad arguments give
/// errc::invalid_argument.
class database {
public:
    /// Which kind of server this handle talks to (from the URL's scheme).
    backend_kind backend() const noexcept;
    /// The URL it was opened with, password replaced by "***".
    const std::string& url() const noexcept;
    /// The configured table prefix.
    const std::string& table_prefix() const noexcept;

    /// Creates or upgrades the lock tables. Idempotent; several processes may run it at once
    /// (they serialise on a database-side lock). Safe beside lock traffic: each DDL statement
    /// waits for its table lock at most migrate_options::lock_wait (default 1 s) at a time,
    /// retried for up to migrate_options::wait (default 5 min). Throws sqlock::error
    /// (errc::timeout when a step could not get its table lock within `wait`).
    void migrate();
    /// migrate() with `options`.
    void migrate(const migrate_options& options);
    /// The DDL migrate() would apply from scratch, for a DBA's own migration tool.
    std::string migration_script() const;
    /// Schema version currently applied (0 when none) and the version this library expects.
    int schema_version();
    /// The schema version this library's migrate() brings a `kind` database to (the same for
    /// every backend). Does not contact any database.
    static int expected_schema_version(backend_kind kind);
    /// The oldest schema version this library can lock on (tables not yet migrated to its
    /// own version, during a rolling upgrade). Older tables: "run sqlock migrate". Newer ones
    /// are used when their migrations say this library's version is compatible with them
    /// (docs: operations/operating.md, "Upgrades"). Does not contact any database.
    static int oldest_usable_schema_version(backend_kind kind);

    /// A SQL boolean condition that is true only while lock `name` is held with fencing token
    /// `token` (lease strategies: unique_key, optimistic_version), for a write in the caller's
    /// own transaction on this database:
    /// @code{.cpp}
    ///   "UPDATE accounts SET balance = ? WHERE id = ? AND " + db.fencing_condition("?", "?")
    /// @endcode
    /// The arguments are the caller's placeholder texts ("$3", "?", ":name"...), bound by the
    /// caller to the lock name and token. PostgreSQL and MariaDB call the sqlock_holds()
    /// function from the migrations, which also keeps the lease row from being taken over
    /// until the caller's transaction ends; SQLite gets an equivalent EXISTS predicate (its
    /// write transactions are serialised anyway). Its meaning (the token alone decides, not
    /// the clock) needs schema version 7.
    std::string fencing_condition(std::string_view name_placeholder,
                                  std::string_view token_placeholder) const;

    /// All rows in the lock table, ordered by name (as bytes); the locks of one semaphore or
    /// shared_mutex together: its writer gate, its permits by number, its queue.
    std::vector<lock_info> list();
    /// Deletes expired rows (by the database clock) in batches of `batch` rows; returns how
    /// many were deleted. Also prunes the run ledger (reap_options::keep_history's default).
    std::size_t reap(std::size_t batch = 1000);
    /// The same with options: each batch is one short statement (no long table lock); only
    /// rows expired for longer than `older_than` by the database clock are considered. Free
    /// (released) rows are deleted at once; a lease that was never released only once seen
    /// unchanged for its TTL (see reap_options::settle), checked again in the deleting
    /// statement, so a lease renewed meanwhile survives. Several reapers (hosts) may run at
    /// once. select_for_update rows never expire and are never reaped. Then prunes the run
    /// ledger past options.keep_history the same way (bounded batches).
    reap_result reap(const reap_options& options);

    /// The row of lock `name`, if there is one, told as list() tells it (holder, lease,
    /// waiters in line).
    std::optional<lock_info> find(std::string_view name);

    /// Break-glass release for operators. Lease strategies: the row becomes free and its token
    /// moves forward, so the old holder's renewals, releases and fenced writes fail from now on.
    /// select_for_update on PostgreSQL: the holder's session is ended. The action is recorded
    /// with `actor` in the `<prefix>audit` table. A lock nobody holds (no row, or a free row;
    /// a holder whose lease expired still counts as holding it) is left as it is: released is
    /// false, the token does not move and nothing is recorded. Throws errc::unsupported for
    /// select_for_update on MariaDB/SQLite (the holder cannot be identified there).
    force_release_result force_release(std::string_view name, std::string_view actor);

    /// The steps of the server's clock that sqlock processes recorded (at most one per 10 s per
    /// database handle), newest first, at most `limit`. Needs schema version 5.
    std::vector<clock_step_record> clock_steps(std::size_t limit = 20);
    /// The replication setup of the server, as the last connection this handle opened found it
    /// (connect() opens one). A read-only standby or replica never gets this far: connecting
    /// to one is errc::topology (a URL listing several hosts connects to the one that accepts
    /// writes instead).
    topology_info topology() const;
    /// Steps of the server's clock this handle noticed itself (see
    /// connect_options::clock_step_threshold).
    std::uint64_t clock_steps_noticed() const noexcept;

    /// Every migration this library knows for the backend, and whether it is applied.
    std::vector<migration_state> migration_status();

private:
    friend class detail::database_access; // sqlock's own components reach the pool through it
    explicit database(std::shared_ptr<detail::database_impl> impl);

    std::shared_ptr<detail::database_impl> m_impl;
};

/// Opens a lock database. Accepted URLs:
/// @code{.unparsed}
///   postgresql://user:password@host:port/dbname   (also postgres://)
///   mysql://user:password@host:port/dbname        (also mariadb://)
///   sqlite:///absolute/path.db   sqlite:relative/path.db
/// @endcode
/// User and password may be percent-encoded. The first connection is made at once, so a wrong
/// password or an unreachable server is reported here (errc::connection, within
/// options.connect_timeout), and so is a server without a free connection slot (errc::connection,
/// is_server_full(): not retried here; lock waits and `sqlock run --wait` wait it out);
/// malformed URLs and unknown schemes give errc::invalid_argument. So do options out of range
/// (table_prefix, connect_timeout, io_timeout, pool_size, clock_step_threshold). A mysql://
/// server that is not MariaDB 10.5 or later gives errc::unsupported.
database connect(std::string_view url, const connect_options& options = {});

/// `url` without its password ("postgresql://user:pw@host/db" gives
/// "postgresql://user@host/db"; user, hosts, database and options stay), for handing the URL
/// to a process that gets the password elsewhere (connect_options::password_file,
/// ~/.pgpass). A URL without a password is returned unchanged.
std::string url_without_password(std::string_view url);

/// The DDL that migrate() would apply from scratch for `url`'s backend and options, built
/// without contacting any database (for `sqlock migrate --print`). Throws
/// errc::invalid_argument for a malformed URL or table prefix.
std::string migration_script_for(std::string_view url, const connect_options& options = {});

} // namespace sqlock
