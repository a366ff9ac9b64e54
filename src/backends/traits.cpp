#include "backends/traits.hpp"

namespace sqlock::detail {

namespace {

constexpr backend_traits postgresql_traits{
    .name = "postgresql",
    .sql_dir = "postgres",
    .identifier_quote = '"',
    .local_file = false,
    .lock_files = false,
    .pools_lock_sessions = true,
    .notifies_releases = true,
    .waits_through_hook = true,
    .queues_waiters_in_server = true, // advisory locks
    .queues_waiters_locally = false,
    .transactional_ddl = true,
    .writes_take_the_database = false,
    .tries_hosts_itself = false, // libpq walks the list (target_session_attrs=read-write)
    .lists_row_lock_holders = true,
    .ends_row_lock_holders = true,   // pg_terminate_backend
    .sessions_named_by_owner = true, // application_name
    .session_word = "session",
    .replica_word = "standby",
    .synchronous_replication_advice =
        "Set synchronous_standby_names (and synchronous_commit = on or remote_apply)",
    .cluster_name = "",
    .transaction_pooler_name = "PgBouncer",
    .server_full_code = 0, // SQLSTATE 53300
};

constexpr backend_traits mysql_traits{
    .name = "mysql",
    .sql_dir = "mysql",
    .identifier_quote = '`',
    .local_file = false,
    .lock_files = false,
    .pools_lock_sessions = false, // lock sessions run with autocommit off
    .notifies_releases = false,
    .waits_through_hook = true,       // MARIADB_OPT_IO_WAIT
    .queues_waiters_in_server = true, // GET_LOCK
    .queues_waiters_locally = false,
    .transactional_ddl = false, // DDL commits implicitly
    .writes_take_the_database = false,
    .tries_hosts_itself = true,
    .lists_row_lock_holders = false, // the InnoDB lock monitor tells, when it is on
    .ends_row_lock_holders = false,
    .sessions_named_by_owner = false, // the _pid connection attribute
    .session_word = "connection",
    .replica_word = "replica",
    .synchronous_replication_advice =
        "Use semi-synchronous replication with rpl_semi_sync_master_wait_point = AFTER_SYNC",
    .cluster_name = "Galera",
    .transaction_pooler_name = "",
    .server_full_code = 1040, // ER_CON_COUNT_ERROR
};

constexpr backend_traits sqlite_traits{
    .name = "sqlite",
    .sql_dir = "sqlite",
    .identifier_quote = '"',
    .local_file = true,
    .lock_files = true,
    .pools_lock_sessions = false,
    .notifies_releases = false,
    .waits_through_hook = true, // busy handler, turn gate and queue waits pause
    .queues_waiters_in_server = false,
    .queues_waiters_locally = true,
    .transactional_ddl = true,
    .writes_take_the_database = true, // one writer at a time
    .tries_hosts_itself = false,
    .lists_row_lock_holders = false, // the lock files tell
    .ends_row_lock_holders = false,
    .sessions_named_by_owner = false,
    .session_word = "connection",
    .replica_word = "replica",
    .synchronous_replication_advice = "",
    .cluster_name = "",
    .transaction_pooler_name = "",
    .server_full_code = 0,
};

} // namespace

const backend_traits& traits_of(backend_kind kind) noexcept {
    switch (kind) {
    case backend_kind::postgresql:
        return postgresql_traits;
    case backend_kind::mysql:
        return mysql_traits;
    case backend_kind::sqlite:
        break;
    }
    return sqlite_traits;
}

} // namespace sqlock::detail
