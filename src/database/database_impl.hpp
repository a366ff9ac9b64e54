// Internal: what a sqlock::database handle shares — config, SQL catalog and connection pool.
#pragma once

#include "backends/traits.hpp"
#include "base/clock_watch.hpp"
#include "base/config.hpp"
#include "base/session.hpp"
#include "base/sighting.hpp"
#include "base/statements.hpp"
#include "sqlock/database.hpp"
#include "sqlock/error.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sqlock::detail {

class database_impl;

/// A session checked out of the pool; returned on destruction (dropped when broken).
class pooled_session {
public:
    pooled_session(database_impl* owner, std::unique_ptr<session> s)
        : m_owner(owner), m_session(std::move(s)) {}
    pooled_session(pooled_session&&) noexcept = default;
    pooled_session& operator=(pooled_session&&) = delete;
    ~pooled_session();
    session* operator->() const noexcept { return m_session.get(); }
    session& operator*() const noexcept { return *m_session; }
    /// Closes the session instead of pooling it (its state is unknown after a failure
    /// half-way through a batch that changes session settings).
    void discard() noexcept;

private:
    database_impl* m_owner;
    std::unique_ptr<session> m_session;
};

/// Local wake-ups for waiters. Every name has a generation that moves when its lock may have
/// become free in this process (a local unlock). Releases by other processes reach a waiter
/// as notifications on its own session instead (database_impl::await_release, PostgreSQL).
class wake_hub {
public:
    std::uint64_t generation(const std::string& name);
    /// Moves `name`'s generation and wakes its waiters.
    void wake(const std::string& name);
    /// Waits until `name`'s generation differs from `seen` or `until` passes.
    void wait(const std::string& name, std::uint64_t seen,
              std::chrono::steady_clock::time_point until);

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::unordered_map<std::string, std::uint64_t> m_generations;
};

/// One-at-a-time admission for the threads of this process that wait for one lock name.
/// (A mutex + condition variable rather than std::timed_mutex: its timed lock goes through
/// pthread_mutex_clocklock, which ThreadSanitizer cannot see.)
class turnstile {
public:
    /// Waits until the turnstile is free or `deadline` passes (time_point::max(): forever).
    bool enter(std::chrono::steady_clock::time_point deadline);
    void leave() noexcept;

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_busy = false;
};

class database_impl : public std::enable_shared_from_this<database_impl> {
public:
    database_impl(connection_config config, const connect_options& options);
    ~database_impl();
    database_impl(const database_impl&) = delete;
    database_impl& operator=(const database_impl&) = delete;

    backend_kind kind() const noexcept { return m_config.kind; }
    /// What the backend can do (backends/traits.hpp).
    const backend_traits& traits() const noexcept { return traits_of(m_config.kind); }
    const connection_config& config() const noexcept { return m_config; }
    const connect_options& options() const noexcept { return m_options; }
    const sql_catalog& catalog() const noexcept { return m_catalog; }
    /// The quoted, prefixed name of the lock table, for messages.
    const std::string& locks_table() const noexcept { return m_locks_table; }

    /// Checks a session out of the pool, connecting when none is idle. Waits at most
    /// connect_timeout for a busy pool (errc::timeout). Inside a route_scope for this handle,
    /// run() and run_async_release() use the routed session instead.
    pooled_session checkout();

    /// An idle pooled session for a waiter to keep (and listen on) while it waits, or nullopt:
    /// taken only while another session could still be opened or is idle, so that keeping it
    /// never makes another thread wait for the pool. Never connects, never throws.
    std::optional<pooled_session> try_checkout_idle() noexcept;

    /// Waits until `name` may have become free or `until` passes: a release notification on
    /// `s` (which listens, see session::listen) or a local wake-up (its generation differs
    /// from `seen`). Without `s`, only local wake-ups end the wait early. Throws nothing: a
    /// broken session ends the wait (the caller's next attempt sees the error).
    /// With `any_starting_with`, a notification for any name that starts with `name` counts
    /// (a semaphore's head waits for any of its permits).
    void await_release(session* s, const std::string& name, std::uint64_t seen,
                       std::chrono::steady_clock::time_point until, bool any_starting_with = false);
    /// Subscribes `s` to release notifications (PostgreSQL; false elsewhere or on failure).
    bool listen_for_releases(session& s) noexcept;

    /// checkout() + execute(): one statement on a pooled connection. A pooled connection that
    /// turns out to be dead before anything was sent is replaced transparently; a missing
    /// table is reported as errc::schema_missing with a "run sqlock migrate" hint.
    result run(statement id, std::initializer_list<param> params);
    /// The same, for parameters built elsewhere (a batch_item's).
    result run(statement id, std::span<const param> params);
    /// run() for the reaper's statements. A conflict (MariaDB 1213, PostgreSQL 40P01: a
    /// deadlock with a concurrent grant or another reaper) rolled the statement back, so it
    /// did nothing; every reap statement re-checks what it deletes, so it is sent again (up to
    /// 5 tries, a few ms apart) rather than failing a cron run. Other errors are thrown.
    result run_reap(statement id, std::initializer_list<param> params);

    /// A release statement `id` with an asynchronous commit where the backend has one
    /// (PostgreSQL: BEGIN, synchronous_commit = off, the statement, COMMIT, pipelined: one round
    /// trip; SQLite: the statement between PRAGMA synchronous = NORMAL and = FULL, so it is not
    /// synced until the next durable commit); elsewhere just the statement. Returns the release
    /// statement's result. A session that fails half-way is closed, never pooled.
    result run_async_release(statement id, std::initializer_list<param> params);

    /// Rewrites errc::schema_missing into the message users act on; other errors unchanged.
    [[noreturn]] void rethrow_with_context(const error& e) const;

    /// Migrations for this backend from the embedded files, in version order.
    struct migration {
        int version;
        std::string name;
        std::string sql; ///< identifiers expanded
        /// The oldest library schema version that can share the tables once this migration is
        /// applied (its header's "-- sqlock: compatible-from N"; without one, its own version).
        int compatible_from;
    };
    std::vector<migration> migrations() const;
    std::string expand(std::string_view sql) const;
    /// Everything migrate() applies from scratch, as one script.
    std::string migration_script() const;

    /// Returns a checked-out session to the pool; one that is no longer usable is closed, and
    /// with it every idle server session (see session_broke()).
    void give_back(std::unique_ptr<session> s) noexcept;
    /// A checked-out session was closed instead of given back.
    void forget_session() noexcept;
    /// A session broke: closes the idle pooled and lock sessions too (servers only), since
    /// they were opened to the same server; the next ones are opened afresh.
    void session_broke() noexcept;

    /// A session kept for one lock on `lock_name` (a select_for_update hold, a unique_key
    /// queue seat), taken out of the pool's accounting for as long as it is kept: N kept
    /// sessions cost N connections beside the pool's. PostgreSQL: an idle pooled session when
    /// there is one (all its sessions are alike), so a process with one lock keeps one
    /// connection; MariaDB: reused from an idle list of lock sessions (they run with autocommit
    /// off); SQLite: a connection to the name's own lock file. Return it with unpin().
    std::unique_ptr<session> pin(std::string_view lock_name);
    /// A session like the pool's (autocommit statements), kept for one waiter and the hold it
    /// gets: a unique_key queue seat. Taken out of the pool's accounting like pin()'s: an idle
    /// pooled session when there is one, else a new connection. Return it with unpin_seat().
    std::unique_ptr<session> pin_seat(std::string_view lock_name);
    /// Takes back a session pin_seat() gave: into the pool while it has room, closed otherwise
    /// (or when broken). Never throws.
    void unpin_seat(std::string_view lock_name, std::unique_ptr<session> s) noexcept;
    /// Takes back the session pin(lock_name) gave: rolled back if still in a transaction and
    /// unsubscribed if listening, kept for reuse when healthy (PostgreSQL: back in the pool
    /// while it has room; MariaDB: up to pool_size idle lock sessions; SQLite: per lock file,
    /// the least recently used closed first), closed otherwise. Never throws.
    void unpin(std::string_view lock_name, std::unique_ptr<session> s) noexcept;
    /// The SQLite lock file used for `lock_name` (empty for server backends).
    std::string lock_file_for(std::string_view lock_name) const;

    wake_hub& wakeups() noexcept { return m_wakeups; }

    /// Tokens reserved per raise of the durable high-water mark (fu_raise_hwm): one durable
    /// commit per this many select_for_update tokens per database handle, and at most about
    /// this many values skipped by a crash recovery (fu_recover_tokens).
    static constexpr std::int64_t token_reserve_block = 65536;
    /// select_for_update, before a grant with `token` is handed out: makes sure the durable
    /// high-water mark covers it, so that a crash that sets the token sequence back cannot
    /// hand it out again (docs/site/guides/fencing.md). Trusts only the marks this handle's own
    /// durable commits returned (a mark merely read may not be on a synchronous standby yet);
    /// raises the mark to token + token_reserve_block on the pool when the token is above them.
    /// Does nothing where fu_raise_hwm is a no-op (tokens durable already). Throws sqlock::error.
    void cover_token_durably(std::int64_t token);
    /// select_for_update, before locking on lock session `s` (outside a transaction): where
    /// the backend can (reserves_on_lock_session(): PostgreSQL, MariaDB), raises the durable mark
    /// to the token sequence's position + token_reserve_block on `s` itself when the marks this
    /// handle raised may not cover its next tokens (nor `at_least` + half a block), so that
    /// the grant needs no second connection for cover_token_durably(). Throws sqlock::error.
    void reserve_tokens_on(session& s, std::int64_t at_least);
    /// True where reserve_tokens_on() does something (fu_raise_hwm is not a no-op).
    bool reserves_on_lock_session() const noexcept;
    /// True when `token` may be handed out without raising the durable mark first.
    bool token_covered(std::int64_t token) const noexcept;

    /// Every session is alike, so lock sessions come from the pool and go back to it.
    /// Elsewhere lock sessions differ (autocommit off; a lock file).
    bool pools_lock_sessions() const noexcept { return traits().pools_lock_sessions; }
    /// A lock session is a connection to the database itself, so statements for the lock's
    /// row can run on it outside the lock's transaction (not per-name lock files).
    bool lock_sessions_reach_tables() const noexcept { return !traits().lock_files; }
    /// Releases are announced to listening sessions (NOTIFY); elsewhere waiters poll. Not
    /// behind a transaction-mode pooler: LISTEN needs a session of its own.
    bool notifies_releases() const noexcept {
        return traits().notifies_releases && !behind_transaction_pooler();
    }
    /// unique_key waiters queue in the server (uk_queue_enter: a session-level lock per name,
    /// held on a seat), not behind a transaction-mode pooler and not in a multi-primary
    /// cluster (session-level locks hold on one node only, and the cluster refuses them).
    /// Elsewhere waiters poll (or queue locally: traits().queues_waiters_locally).
    bool queues_waiters() const noexcept {
        return traits().queues_waiters_in_server && !behind_transaction_pooler() &&
               !m_multi_primary.load(std::memory_order_relaxed);
    }
    /// A connection found a pooler that shares server connections between transactions
    /// (PgBouncer in transaction mode): nothing session-level (LISTEN, the unique_key queue's
    /// session advisory locks) may be used; waiters poll.
    bool behind_transaction_pooler() const noexcept {
        return m_behind_pooler.load(std::memory_order_relaxed);
    }

    /// The reaper's part for leases never released (see reap_options::settle): reads the held
    /// leases that look expired for longer than `grace`, drops those this handle has seen
    /// unchanged for their TTL, and waits up to `settle` for the others to get there. Adds to
    /// `out` (deleted, batches, deferred). Throws sqlock::error.
    void reap_stale_leases(std::int64_t batch, std::int64_t grace, std::chrono::milliseconds settle,
                           reap_result& out);

    /// Remembers the schema version last seen (usable: this library can work with it).
    void note_schema_version(int version, bool usable) noexcept {
        m_schema_version = version;
        m_schema_usable = usable;
    }
    /// Before taking a lock: throws errc::schema_missing / schema_mismatch (refuse_schema)
    /// unless the tables are at a version this library can use, re-reading the version until
    /// they are (so a migration run elsewhere meanwhile is noticed).
    void require_schema();
    /// Throws errc::schema_missing or errc::schema_mismatch, naming both versions and the fix,
    /// unless this library can use tables at schema `version` (read on `s`): from
    /// database::oldest_usable_schema_version to expected_schema_version, or newer when every
    /// migration above this library's version says it is compatible with it
    /// (migrations_compat). `newer_only`: refuse only tables newer than that (connect(): older
    /// ones are reported at the first lock, so that connect() followed by migrate() works).
    void refuse_schema(session& s, int version, bool newer_only) const;

    /// A per-name local turnstile: threads of this process waiting for the same name queue
    /// here, so only one of them at a time asks the database.
    std::shared_ptr<turnstile> local_gate(const std::string& name);

    /// Statements sent through run() so far: lets tests verify the per-operation statement
    /// budget (README "What each operation sends").
    std::uint64_t statements_sent() const noexcept { return m_statements_sent.load(); }
    /// Connections this handle tried to open to a server (pool, lock sessions, listener),
    /// successful or not: lets tests verify that waiting does not keep reconnecting.
    std::uint64_t connects_attempted() const noexcept { return m_connects_attempted.load(); }
    /// Acquire attempts made by mutexes on this database (tests await waiters with it).
    std::uint64_t acquire_attempts() const noexcept { return m_acquire_attempts.load(); }
    void count_acquire_attempt() noexcept {
        m_acquire_attempts.fetch_add(1, std::memory_order_relaxed);
    }

    /// What this handle noticed of the server's clock (steps between replies).
    clock_watch::summary clock_steps_seen() const { return m_clock_watch.seen(); }

    /// The replication setup the last connection found (see database::topology()).
    topology_info topology() const;
    /// select_for_update: throws errc::topology when the server is a node of a multi-node
    /// Galera cluster (row locks hold on one node only).
    void require_row_locks_safe() const;

private:
    std::unique_ptr<session> open_session();
    /// Opens a session with `config` and checks the server's topology (src/database/topology.cpp):
    /// MariaDB tries the URL's hosts in order and keeps the first that accepts writes.
    /// Throws errc::topology for a read-only standby/replica (or asynchronous replicas when
    /// require_synchronous_replication is set), else what connecting threw.
    std::unique_ptr<session> connect_checked(const connection_config& config);
    /// Runs the topology statement on a new session `s` (to `endpoint`, "host:port") and
    /// records the answer. Returns the server's name when it is read-only (the caller refuses
    /// it); throws errc::topology when asynchronous replicas are refused.
    std::optional<std::string> check_topology(session& s, const std::string& endpoint);
    [[noreturn]] void throw_read_only(const std::string& server) const;
    /// `s`, showing its replies to this handle's clock_watch.
    std::unique_ptr<session> watched(std::unique_ptr<session> s) noexcept;
    /// A step was noticed: connect_options::on_clock_step, or one line on stderr per handle.
    void on_clock_step(std::chrono::milliseconds step) noexcept;
    /// Writes a noticed step to the clock_steps table with `s`, at most one per 10 s; never
    /// throws (best effort).
    void record_clock_step(session& s) noexcept;

    connection_config m_config;
    connect_options m_options;
    clock_watch m_clock_watch{m_options.clock_step_threshold,
                              [this](std::chrono::milliseconds step) {
                                  on_clock_step(step);
                              }};
    std::atomic<bool> m_clock_step_logged{false};
    std::vector<std::pair<std::string, std::string>> m_identifiers;
    std::string m_locks_table;
    sql_catalog m_catalog;

    std::mutex m_pool_mutex;
    std::condition_variable m_pool_cv;
    /// Moves out every idle server session (m_pool_mutex held); the caller closes them.
    std::vector<std::unique_ptr<session>> take_idle_sessions_locked() noexcept;
    std::vector<std::unique_ptr<session>> m_idle;
    std::size_t m_open = 0;                               ///< sessions alive: idle + checked out
    std::vector<std::unique_ptr<session>> m_idle_holders; ///< lock sessions not holding now
    /// SQLite: lock-file sessions not holding now, with their file, oldest first.
    std::vector<std::pair<std::string, std::unique_ptr<session>>> m_idle_lock_files;
    std::atomic<std::uint64_t> m_statements_sent{0};
    std::atomic<std::uint64_t> m_acquire_attempts{0};
    std::atomic<std::uint64_t> m_connects_attempted{0};
    std::atomic<int> m_schema_version{-1};    ///< -1: not checked (check_schema off)
    std::atomic<bool> m_schema_usable{false}; ///< m_schema_version was found usable
    std::string m_lock_dir; ///< SQLite: "<canonical database path>-sqlock/" (lock_file_for)
    std::atomic<bool> m_behind_pooler{false};
    /// A connection found a node of a multi-primary cluster (traits().cluster_name).
    std::atomic<bool> m_multi_primary{false};
    mutable std::mutex m_topology_mutex;
    topology_info m_topology; ///< from the last connection opened
    /// The largest high-water mark a durable fu_raise_hwm of this handle returned (0: none).
    std::atomic<std::int64_t> m_durable_token_hwm{0};
    /// The largest select_for_update token this handle handed out (0: none).
    std::atomic<std::int64_t> m_token_seen{0};
    /// What reap_stale_leases() has seen of leases that look expired, by name.
    std::mutex m_reap_mutex;
    std::map<std::string, lease_sighting> m_reap_sightings;

    wake_hub m_wakeups;
    std::mutex m_gates_mutex;
    std::unordered_map<std::string, std::weak_ptr<turnstile>> m_gates;
};

/// Applies the migrations of `list` not yet recorded in `db`'s tables, in order, under the
/// cross-process migration lock (database::migrate(), and tests with migrations of their
/// own). Each DDL statement waits at most options.lock_wait for a table lock; a step that
/// could not get one is tried again until options.wait has passed. Throws sqlock::error.
void run_migrations(database_impl& db, const std::vector<database_impl::migration>& list,
                    const migrate_options& options);

/// While alive, run() and run_async_release() of `db` on this thread send through `s`
/// instead of a pooled session, so that a lock's statements share the one connection it
/// already keeps (a queue seat, a waiter's session: docs/site/guides/connections.md). A null or
/// broken `s` routes nothing. Scopes nest; the innermost wins.
class route_scope {
public:
    route_scope(const database_impl& db, session* s) noexcept;
    ~route_scope();
    route_scope(const route_scope&) = delete;
    route_scope& operator=(const route_scope&) = delete;

    /// The session routed for `db` on this thread, if any and still usable.
    static session* current(const database_impl& db) noexcept;

private:
    const database_impl* m_db;
    session* m_session;
    route_scope* m_outer;
};

/// The door from sqlock's own components (and its tests) to a database handle's internals:
/// sqlock::database befriends this type and nothing else.
class database_access {
public:
    /// The implementation `db` shares with its copies.
    static const std::shared_ptr<database_impl>& impl(const database& db) noexcept {
        return db.m_impl;
    }
    /// A handle to `impl` (connect() makes the only ones).
    static database wrap(std::shared_ptr<database_impl> impl) { return database(std::move(impl)); }
};

/// The implementation behind `db` (shared by its copies; lives as long as one of them).
inline database_impl& impl_of(const database& db) noexcept {
    return *database_access::impl(db);
}

} // namespace sqlock::detail
