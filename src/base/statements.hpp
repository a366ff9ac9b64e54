// Internal: the catalog of runtime SQL statements.
//
// The SQL text of statement X for backend B lives in sql/B/X.sql and is embedded at build time.
// Conventions in those files:
//   - parameters are written $1, $2, ... on every backend (a backend rewrites them to its own
//     placeholder syntax; a number may appear several times);
//   - identifiers are written {locks}, {token_seq}, {token_counter}, {migrations}, {token_hwm},
//     {token_incarnation}, {recover_tokens}, {jobs}, {job_runs}, {quorum}, ... and replaced by the
//     quoted, prefixed names when a database is opened (database_impl's constructor lists them);
//   - boolean result columns are cast to integers (0/1);
//   - result columns that sqlock reads are named (an alias where they are expressions) as
//     the statement's row type in base/rows.hpp names them, in the same order
//     (tests/unit/rows_test.cpp checks every backend's file);
//   - a file holding only comments makes the statement a no-op for that backend;
//   - a file containing the line "-- sqlock: skip-if-unchanged" is not sent again on the same
//     connection while the parameters it uses are the same as last time (session settings);
//   - a file containing "-- sqlock: read-back" returns no rows on that backend (no RETURNING
//     for UPDATE on MariaDB): the strategy reads the outcome back instead of trusting counts
//     (the quorum statements excepted: they always move the row's version, so one affected row
//     is the outcome);
//   - a file containing "-- sqlock: server-clock" returns the server's wall clock (ms since the
//     Unix epoch) as the last column of its rows: sessions show it to the database handle's
//     clock_watch, which notices steps of that clock (base/clock_watch.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace sqlock::detail {

enum class statement : std::size_t {
    acquire_unique_key, ///< $1 name $2 owner $3 ttl_ms $4 host $5 pid $6 held token|NULL
                        ///<   $7 defer to the server-side queue (0/1) $8 $9 names whose
                        ///<   holders go first (lock_request::defer_to; NULL: none)
                        ///<   -> 0 or 1 row (token, hold_count, granted, created_free_row,
                        ///<   lease_seq, ttl_ms, mine, queue_busy, deferred); not granted:
                        ///<   the current row, or none (then inspect_lock; with $7 = 1 where
                        ///<   waiters queue: held back for a queued waiter; with $8/$9 where
                        ///<   deferred is always 0: perhaps held back for them)
    release_lease,      ///< $1 name $2 owner $3 token -> affected rows
    release_decrement,  ///< $1 name $2 owner $3 token $4 current hold count -> affected rows
    inspect_lock,       ///< $1 name -> 0..1 row (owner, token, hold_count, expires_in_ms, strategy,
                        ///<   lease_seq, ttl_ms)
    list_locks,         ///< -> rows (name owner host pid strategy token hold_count
                        ///<          acquired_at expires_at expires_in_ms held_for_ms)
    find_lock,          ///< $1 name -> 0..1 row, the columns of list_locks
    list_waiters,       ///< -> rows (name, session, who, waited_ms, granted), queue and row-lock
                        ///<   waiters the server shows, per name in the order they came
    reap_expired,       ///< $1 batch $2 grace_ms -> affected rows (free rows only)
    reap_candidates,    ///< $1 limit $2 grace_ms -> rows (name, token, lease_seq, ttl_ms) of held
                        ///<   leases that look expired
    drop_stale_lease,   ///< $1 name $2 token $3 lease_seq: delete a lease seen unchanged for its
                        ///<   TTL -> affected rows (PostgreSQL: rows)
    migrations_bootstrap,  ///< DDL: create the schema-version table if missing
    migrations_applied,    ///< -> rows (version)
    migration_record,      ///< $1 version $2 name $3 compatible_from -> affected rows
    migrations_compat,     ///< $1 a library's version -> 1 row: the oldest library version that
                           ///<   can share the tables migrated above it (NULL: none above)
    migrate_lock,          ///< take the cross-process migration lock (session level)
    migrate_unlock,        ///< release it
    migrate_lock_wait,     ///< $1 ms: the longest a migration step's DDL waits for a table lock
    migrate_lock_wait_end, ///< the session's lock wait back to its default after migrating
    // select_for_update, on a pinned lock-holder session unless marked (pool):
    fu_session,     ///< $1 owner $2 ttl_ms: per-session guards (idle-transaction timeout...)
    fu_wait,        ///< $1 wait_ms (-1 = do not wait, 0 = forever): server-side lock wait
    fu_begin,       ///< open the holding transaction (no-op where implicit)
    fu_lock,        ///< $1 name -> 0..1 row (token or NULL, incarnation recovered 0/1): lock the
                    ///<   row, waiting per fu_wait
    fu_lock_nowait, ///< $1 name -> the same, failing at once when the row is locked
    fu_check,       ///< -> 1 row: the holding session is alive
    fu_create_row,  ///< (pool) $1 name: create the row to lock, if missing
    fu_next_token,  ///< (pool) -> 1 row (token), for backends whose fu_lock returns NULL
    fu_raise_hwm,   ///< $1 token $2 block -> 1 row: the durable high-water mark, raised to
                    ///<   >= max($1, the sequence's position) + $2, committed durably (lock
                    ///<   session before locking, or pool); a no-op where tokens are durable
    /// (pool) after fu_lock reported an unrecovered server incarnation: move the token
    /// sequence past the high-water mark and mark the incarnation recovered (no-op: none)
    fu_recover_tokens,
    // unique_key's server-side queue (PostgreSQL, MariaDB; no-ops on SQLite), on a seat:
    uk_queue_wait,         ///< $1 ms (0: no limit): how long uk_queue_enter may wait, where the
                           ///<   server has a session setting for it (PostgreSQL lock_timeout)
    uk_queue_enter,        ///< $1 name $2 ms -> 1 row (waited 0/1, turn 1 | 0: not within $2 ms):
                           ///<   take the name's queue lock
    uk_queue_leave,        ///< $1 name: give it up
    uk_queue_leave_unsure, ///< $1 name: give it up if this session holds it (after a
                           ///<   uk_queue_enter that failed: it may hold it anyway)
    // optimistic_version (pool):
    ov_read,     ///< $1 name $2 $3 names whose holders go first (NULL: none) -> 0..1 row
                 ///< (token, owner, hold_count, held, lease_seq, ttl_ms, queue_busy, deferred)
    ov_create,   ///< $1 name: create a free row if missing (never fails on a race)
    ov_acquire,  ///< $1 name $2 owner $3 ttl_ms $4 host $5 pid $6 version read -> (token) |
                 ///< read-back
    ov_reenter,  ///< $1 name $2 owner $3 ttl_ms $4 token -> (token) | read-back
    ov_release,  ///< $1 name $2 owner $3 token -> affected rows (the row always changes)
    renew_lease, ///< $1 name $2 owner $3 ttl_ms $4 token -> (token) | read-back (inspect_lock)
    // operations
    count_expired,       ///< $1 grace_ms -> 1 row (expired)
    force_release,       ///< $1 name -> affected rows (lease rows only; token moves forward)
    fu_terminate_holder, ///< $1 name -> rows (sessions ended; PostgreSQL only)
    audit_record,        ///< $1 action $2 name $3 actor $4 old owner $5 old token $6 new token
    // releases, sent as one batch around the release statement (no-ops where not needed)
    async_begin,       ///< open a transaction for an asynchronously committed release
    async_commit_off,  ///< make its commit asynchronous (PostgreSQL synchronous_commit = off)
    async_commit,      ///< commit it
    record_clock_step, ///< $1 observer $2 step_ms: a step of the server's clock was noticed
    list_clock_steps,  ///< $1 limit -> rows (seen_at, observer, step_ms, age_ms), newest first
    // scheduled jobs (pool; times are ms since 1970 UTC on the database clock)
    job_now,           ///< -> 1 row (now_ms)
    job_touch,         ///< $1 name $2 period_ms (0: keep): create/refresh the job row
    job_stale,         ///< $1 name $2 own token -> rows (token) of other attempts still running
    job_recent,        ///< $1 name $2..$3 anchor range (ms) -> rows (slot slot_fired_ms outcome
                       ///<   token owner host pid): attempts of slots anchored in that range
    job_slot_runs,     ///< $1 name $2 slot -> the same columns, for one caller-named slot
    job_skip,          ///< $1 name: count a skipped firing
    job_start,         ///< $1 name $2 token $3 slot $4 owner $5 host $6 pid $7 period_ms
                       ///<   $8 slot_fired_ms (NULL: now)
                       ///<   -> affected rows (fenced: 0 when the lease is no longer ours)
    job_finish,        ///< $1 name $2 token $3 outcome $4 exit|NULL $5 signal|NULL $6 message
                       ///<   -> affected rows (only a running attempt changes)
    job_finish_fenced, ///< the same, recorded only while the lease with token $2 is held
    job_run_get,       ///< $1 name $2 token -> 0..1 row (started_ms ended_ms duration_ms outcome)
    job_count,         ///< $1 name $2 outcome $3 started_ms $4 duration_ms $5 ended_ms
    job_history,       ///< $1 name $2 limit -> rows (token slot owner host pid period_ms
                       ///<   started_ms ended_ms duration_ms exit_status term_signal outcome
                       ///<   message now_ms), newest first
    job_list,          ///< -> rows (see job_info; running_since_ms, now_ms last)
    job_prune,         ///< $1 batch $2 keep_ms -> affected rows
    job_prune_count,   ///< $1 keep_ms -> 1 row (expired)
    topology,          ///< -> 1 row (read_only, replicas, synchronous, cluster_nodes, server),
                       ///<   run on every new connection (docs/site/databases/replicated.md)
    cluster_session,   ///< session settings for a node of a multi-primary cluster (Galera), after
                       ///< `topology` found one
    waiters_check,     ///< $1 name $2 name (either may be NULL) -> rows (name) of the two
                       ///<   whose lease is held: a semaphore's queue and a shared mutex's
                       ///<   writer gate (lock_request::defer_to), where the acquire's reply
                       ///<   cannot say
    // quorum locks (each member database of a quorum_mutex; table {quorum})
    q_read,    ///< $1 name -> 0..1 row (token, owner, version, ttl_ms)
    q_create,  ///< $1 name: a free row with token 0 if missing (never fails on a race)
    q_acquire, ///< $1 name $2 token $3 owner $4 ttl_ms $5 host $6 pid $7 version seen|NULL
               ///<   -> (token) when accepted | affected rows (read-back)
    q_renew,   ///< $1 name $2 owner $3 token $4 ttl_ms -> (token) when ours | affected rows
    q_release, ///< $1 name $2 owner $3 token -> affected rows
    q_list,    ///< $1 name|NULL -> rows (name token owner host pid ttl_ms version acquired_at
               ///<   expires_in_ms|NULL), by name: for status and release --force
    q_raise,   ///< $1 name $2 token -> affected rows (raised to $2 and freed where lower)
    count_
};

inline constexpr std::size_t statement_count = static_cast<std::size_t>(statement::count_);

/// File stem of each statement: sql/<backend>/<name>.sql.
inline constexpr std::array<std::string_view, statement_count> statement_names = {
    "acquire_unique_key",
    "release_lease",
    "release_decrement",
    "inspect_lock",
    "list_locks",
    "find_lock",
    "list_waiters",
    "reap_expired",
    "reap_candidates",
    "drop_stale_lease",
    "migrations_bootstrap",
    "migrations_applied",
    "migration_record",
    "migrations_compat",
    "migrate_lock",
    "migrate_unlock",
    "migrate_lock_wait",
    "migrate_lock_wait_end",
    "fu_session",
    "fu_wait",
    "fu_begin",
    "fu_lock",
    "fu_lock_nowait",
    "fu_check",
    "fu_create_row",
    "fu_next_token",
    "fu_raise_hwm",
    "fu_recover_tokens",
    "uk_queue_wait",
    "uk_queue_enter",
    "uk_queue_leave",
    "uk_queue_leave_unsure",
    "ov_read",
    "ov_create",
    "ov_acquire",
    "ov_reenter",
    "ov_release",
    "renew_lease",
    "count_expired",
    "force_release",
    "fu_terminate_holder",
    "audit_record",
    "async_begin",
    "async_commit_off",
    "async_commit",
    "record_clock_step",
    "list_clock_steps",
    "job_now",
    "job_touch",
    "job_stale",
    "job_recent",
    "job_slot_runs",
    "job_skip",
    "job_start",
    "job_finish",
    "job_finish_fenced",
    "job_run_get",
    "job_count",
    "job_history",
    "job_list",
    "job_prune",
    "job_prune_count",
    "topology",
    "cluster_session",
    "waiters_check",
    "q_read",
    "q_create",
    "q_acquire",
    "q_renew",
    "q_release",
    "q_list",
    "q_raise",
};

// A statement added to the enum without a file name here would silently get an empty name.
static_assert([] {
    for (const auto name : statement_names)
        if (name.empty())
            return false;
    return true;
}());

inline std::string_view name_of(statement id) {
    return statement_names[static_cast<std::size_t>(id)];
}

/// A backend's statements with table names substituted. Each is looked up and expanded on
/// first use (thread-safe): a short-lived process such as `sqlock run` needs a handful of
/// them, and preparing all of them was a tenth of its connect.
class sql_catalog {
public:
    /// `source(id)`: the statement's SQL file text; `expand`: identifiers substituted.
    /// Both are called at most once per statement, from whichever thread needs it first.
    sql_catalog(std::function<std::string_view(statement)> source,
                std::function<std::string(std::string_view)> expand)
        : m_source(std::move(source)), m_expand(std::move(expand)) {}

    /// The SQL to send.
    const std::string& operator[](statement id) const { return get(id).text; }
    /// The file holds only comments: nothing to send.
    bool is_noop(statement id) const { return get(id).noop; }
    /// "-- sqlock: skip-if-unchanged" (see the file comment above).
    bool skips_if_unchanged(statement id) const { return get(id).skip_if_unchanged; }
    /// "-- sqlock: read-back" (see the file comment above).
    bool needs_read_back(statement id) const { return get(id).read_back; }
    /// "-- sqlock: server-clock" (see the file comment above).
    bool returns_server_clock(statement id) const { return get(id).server_clock; }
    /// Bit i set: the SQL uses parameter $(i+1) (outside comments and quotes; beyond $64
    /// every parameter counts as used).
    std::uint64_t used_params(statement id) const { return get(id).used_params; }

private:
    struct entry {
        std::once_flag once;
        std::string text;
        bool noop = false;
        bool skip_if_unchanged = false;
        bool read_back = false;
        bool server_clock = false;
        std::uint64_t used_params = 0;
    };
    const entry& get(statement id) const;

    std::function<std::string_view(statement)> m_source;
    std::function<std::string(std::string_view)> m_expand;
    mutable std::array<entry, statement_count> m_entries;
};

} // namespace sqlock::detail
