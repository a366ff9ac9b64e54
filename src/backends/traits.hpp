// Internal: what the layers above need to know about a backend, answered by the backends
// layer, so that no line outside src/backends has to name one. Plain data: each backend's row
// is in traits.cpp.
#pragma once

#include "sqlock/database.hpp"

#include <string_view>

namespace sqlock::detail {

/// How a backend behaves where the layers above must differ. Every flag says what the
/// backend can do, not which backend it is; answers that depend on the server found at
/// connect (a pooler, a cluster) are combined with these by database_impl.
struct backend_traits {
    std::string_view name;    ///< as in URLs and error::backend(): "postgresql"
    std::string_view sql_dir; ///< its statements: sql/<sql_dir>/<statement>.sql
    char identifier_quote;    ///< quotes identifiers: '"' or '`' (doubled inside)
    /// The database is a local file, not a server: no password, no replicas, lock files
    /// beside it (connect_options::create_sqlite_file creates it).
    bool local_file;
    /// A select_for_update lock session is a lock file of its own (one per name), not a
    /// connection to the database: statements on the lock's row go elsewhere.
    bool lock_files;
    /// Every session is alike, so lock sessions come from the pool and go back to it.
    bool pools_lock_sessions;
    /// Releases are announced to listening sessions (LISTEN/NOTIFY), unless a transaction
    /// pooler is in the way.
    bool notifies_releases;
    /// Its sessions wait for others only through the wait hook (base/io_wait.hpp): statements,
    /// connects, notification waits and waits for another writer suspend a fiber instead of
    /// blocking a thread, so asynchronous acquires run on fibers of the caller's executor
    /// rather than on worker threads. (A local file's own disk writes still run on the fiber's
    /// thread: async_options::on_workers is there for those who mind.)
    bool waits_through_hook;
    /// unique_key waiters queue in the server on a session-level lock per name, unless a
    /// transaction pooler or a multi-primary cluster is in the way.
    bool queues_waiters_in_server;
    /// Waiters queue in files beside the database (backends/local_queue.hpp).
    bool queues_waiters_locally;
    /// DDL runs inside a transaction (a failed migration step rolls back whole).
    bool transactional_ddl;
    /// Every writing statement takes the database's one write lock, even one that changes
    /// nothing: periodic work reads first and writes only when there is something to change.
    bool writes_take_the_database;
    /// sqlock tries the hosts of a host-list URL one by one; otherwise the client library
    /// does (or there is no host).
    bool tries_hosts_itself;
    /// list_locks names the holder of a select_for_update row lock itself (no server lock
    /// monitor or lock file needs asking).
    bool lists_row_lock_holders;
    /// An operator's force release can end the session that holds a select_for_update lock
    /// (fu_terminate_holder).
    bool ends_row_lock_holders;
    /// A session in list_waiters is named like its process's owner ids ("sqlock host:pid");
    /// otherwise by its client pid ("pid N").
    bool sessions_named_by_owner;
    /// What the server calls one client's connection in its own views ("session").
    std::string_view session_word;
    /// What this backend calls a read-only copy of the primary.
    std::string_view replica_word;
    /// What to do about asynchronous replicas, for the topology warning.
    std::string_view synchronous_replication_advice;
    /// A multi-primary cluster this backend may sit in ("Galera"), or empty.
    std::string_view cluster_name;
    /// A pooler that shares server connections between transactions ("PgBouncer"), or empty.
    std::string_view transaction_pooler_name;
    /// The native code of a connection refused for lack of server slots, for an error sqlock
    /// makes up of several such refusals (is_server_full); 0 where errors carry a SQLSTATE.
    int server_full_code;
};

/// The traits of `kind`. Never throws.
const backend_traits& traits_of(backend_kind kind) noexcept;

} // namespace sqlock::detail
