// Internal: what a sqlock::database handle shares — config, SQL catalog and connection pool.
#pragma once

#include "backends/traits.hpp"
#include "base/clock_watch.hpp"
#include "base/config.hpp"
#include "base/session.hpp"
#include "base/sighting.hpp"
#include "base/statements.hpp"
#include "database/lock_context.hpp"
#include "database/sessions.hpp"
#include "database/stale_leases.hpp"
#include "database/tokens.hpp"
#include "database/topology.hpp"
#include "database/wakeups.hpp"
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

class database_impl final : public lock_context,
                            public std::enable_shared_from_this<database_impl> {
public:
    database_impl(connection_config config, const connect_options& options);
    ~database_impl();
    database_impl(const database_impl&) = delete;
    database_impl& operator=(const database_impl&) = delete;

    backend_kind kind() const noexcept override { return m_config.kind; }
    /// What the backend can do (backends/traits.hpp).
    const backend_traits& traits() const noexcept { return traits_of(m_config.kind); }
    const connection_config& config() const noexcept override { return m_config; }
    const connect_options& options() const noexcept override { return m_options; }
    const sql_catalog& catalog() const noexcept override { return m_catalog; }
    std::shared_ptr<lock_context> shared_context() override { return shared_from_this(); }
    /// The quoted, prefixed name of the lock table, for messages.
    const std::string& locks_table() const noexcept { return m_locks_table; }

    /// The pool and the lock sessions (database/sessions.hpp). Inside a route_scope for this
    /// handle, run() and run_async_release() use the routed session instead of checkout()'s.
    pooled_session checkout() { return m_sessions.checkout(); }
    std::optional<pooled_session> try_checkout_idle() noexcept {
        return m_sessions.try_checkout_idle();
    }
    std::unique_ptr<session> pin(std::string_view lock_name) override {
        return m_sessions.pin(lock_name);
    }
    std::unique_ptr<session> pin_seat(std::string_view lock_name) override {
        return m_sessions.pin_seat(lock_name);
    }
    void unpin_seat(std::string_view lock_name, std::unique_ptr<session> s) noexcept override {
        m_sessions.unpin_seat(lock_name, std::move(s));
    }
    void unpin(std::string_view lock_name, std::unique_ptr<session> s) noexcept override {
        m_sessions.unpin(lock_name, std::move(s));
    }
    /// The SQLite lock file used for `lock_name` (empty for server backends).
    std::string lock_file_for(std::string_view lock_name) const {
        return m_sessions.lock_file_for(lock_name);
    }

    /// Waits until `name` may have become free or `until` passes: a release notification on
    /// `s` (which listens, see session::listen) or a local wake-up (its generation differs
    /// from `seen`). Without `s`, only local wake-ups end the wait early. Throws nothing: a
    /// broken session ends the wait (the caller's next attempt sees the error).
    /// With `any_starting_with`, a notification for any name that starts with `name` counts
    /// (a semaphore's head waits for any of its permits).
    void await_release(session* s, const std::string& name, std::uint64_t seen,
                       std::chrono::steady_clock::time_point until,
                       bool any_starting_with = false) {
        m_wakeups.await(s, name, seen, until, any_starting_with);
    }
    /// Subscribes `s` to release notifications (PostgreSQL; false elsewhere or on failure).
    bool listen_for_releases(session& s) noexcept {
        return notifies_releases() && listen_on(s, m_options.table_prefix + "release");
    }

    /// checkout() + execute(): one statement on a pooled connection. A pooled connection that
    /// turns out to be dead before anything was sent is replaced transparently; a missing
    /// table is reported as errc::schema_missing with a "run sqlock migrate" hint.
    result run(statement id, std::initializer_list<param> params) override;
    /// The same, for parameters built elsewhere (a batch_item's).
    result run(statement id, std::span<const param> params) override;
    /// A release statement `id` with an asynchronous commit where the backend has one
    /// (PostgreSQL: BEGIN, synchronous_commit = off, the statement, COMMIT, pipelined: one round
    /// trip; SQLite: the statement between PRAGMA synchronous = NORMAL and = FULL, so it is not
    /// synced until the next durable commit); elsewhere just the statement. Returns the release
    /// statement's result. A session that fails half-way is closed, never pooled.
    result run_async_release(statement id, std::initializer_list<param> params) override;

    error with_context(const error& e) const override;

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

    wake_hub& wakeups() noexcept { return m_wakeups; }

    /// select_for_update's durable token mark: the token_guard's (database/tokens.hpp), on
    /// this handle's pool.
    void cover_token_durably(std::int64_t token) override;
    void reserve_tokens_on(session& s, std::int64_t at_least) override;
    bool reserves_on_lock_session() const noexcept override { return m_tokens.reserves(); }
    bool token_covered(std::int64_t token) const noexcept override {
        return m_tokens.covered(token);
    }

    /// Every session is alike, so lock sessions come from the pool and go back to it.
    /// Elsewhere lock sessions differ (autocommit off; a lock file).
    bool pools_lock_sessions() const noexcept { return traits().pools_lock_sessions; }
    /// Lock calls may run on a fiber (backend_traits::waits_through_hook).
    bool waits_through_hook() const noexcept { return traits().waits_through_hook; }
    /// A lock session is a connection to the database itself, so statements for the lock's
    /// row can run on it outside the lock's transaction (not per-name lock files).
    bool lock_sessions_reach_tables() const noexcept override { return !traits().lock_files; }
    /// Releases are announced to listening sessions (NOTIFY); elsewhere waiters poll. Not
    /// behind a transaction-mode pooler: LISTEN needs a session of its own.
    bool notifies_releases() const noexcept {
        return traits().notifies_releases && !behind_transaction_pooler();
    }
    /// unique_key waiters queue in the server (uk_queue_enter: a session-level lock per name,
    /// held on a seat), not behind a transaction-mode pooler and not in a multi-primary
    /// cluster (session-level locks hold on one node only, and the cluster refuses them).
    /// Elsewhere waiters poll (or queue locally: traits().queues_waiters_locally).
    bool queues_waiters() const noexcept override {
        return traits().queues_waiters_in_server && !behind_transaction_pooler() &&
               !m_topology.multi_primary();
    }
    /// A connection found a pooler that shares server connections between transactions
    /// (PgBouncer in transaction mode): nothing session-level (LISTEN, the unique_key queue's
    /// session advisory locks) may be used; waiters poll.
    bool behind_transaction_pooler() const noexcept {
        return m_topology.behind_transaction_pooler();
    }

    /// The reaper's part for leases never released (database/stale_leases.hpp).
    stale_lease_reaper& stale_leases() noexcept { return m_stale_leases; }

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
    std::shared_ptr<turnstile> local_gate(const std::string& name) { return m_gates.gate(name); }

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
    topology_info topology() const { return m_topology.last_seen(); }
    void require_row_locks_safe() const override { m_topology.require_row_locks_safe(); }

private:
    /// Opens a session to the server `config` names, counted and watched (the topology
    /// probe's opener: m_topology.connect() checks what it reached).
    std::unique_ptr<session> open_watched(const connection_config& config);
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
    token_guard m_tokens{m_catalog};
    topology_probe m_topology{m_config, m_options, m_catalog, [this](const connection_config& c) {
                                  return open_watched(c);
                              }};
    session_pool m_sessions{m_config, m_options, [this](const connection_config& c) {
                                return m_topology.connect(c);
                            }};

    std::atomic<std::uint64_t> m_statements_sent{0};
    std::atomic<std::uint64_t> m_acquire_attempts{0};
    std::atomic<std::uint64_t> m_connects_attempted{0};
    std::atomic<int> m_schema_version{-1};    ///< -1: not checked (check_schema off)
    std::atomic<bool> m_schema_usable{false}; ///< m_schema_version was found usable
    stale_lease_reaper m_stale_leases;

    wake_hub m_wakeups;
    gate_table m_gates;
};

/// Applies the migrations of `list` not yet recorded in `db`'s tables, in order, under the
/// cross-process migration lock (database::migrate(), and tests with migrations of their
/// own). Each DDL statement waits at most options.lock_wait for a table lock; a step that
/// could not get one is tried again until options.wait has passed. Throws sqlock::error.
void run_migrations(database_impl& db, const std::vector<database_impl::migration>& list,
                    const migrate_options& options);

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

/// A handle to the database of `url` that has not connected yet: what connect() does but its
/// first connection and schema check (the first statement connects). For members of a quorum,
/// which must not fail to be made because one of them is down. Throws errc::invalid_argument
/// for a malformed URL or options, and what reading options.password_file throws.
database open_unconnected(std::string_view url, const connect_options& options);

/// The implementation behind `db` (shared by its copies; lives as long as one of them).
inline database_impl& impl_of(const database& db) noexcept {
    return *database_access::impl(db);
}

} // namespace sqlock::detail
