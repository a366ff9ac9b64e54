// Internal: typed rows. Each catalog statement whose rows sqlock reads has a struct here that
// names its result columns in order (`columns`: data that the decoder and the test share) and
// ONE decoder (`decode`, in rows/decoders.cpp) that turns a result row into the struct.
// Nothing else reads a result row by position (the row rule of tools/architecture), and
// tests/unit/rows_test.cpp checks each struct's columns against its statements' SQL on every
// backend, so a column added to or moved in an SQL file cannot be read under the wrong name.
//
// A row type R has:
//   R::statements        the catalog statements whose rows it decodes (none: rows of a
//                        backend's own query, session::query)
//   R::columns           the result columns' names (aliases), in order
//   R::required_columns  (optional) how many of them every backend returns; the rest, at the
//                        end, only some backends do (read as SQL NULL where they are missing)
//   R::decode(row)       the decoder; throws errc::backend when the row has fewer cells than
//                        the required columns or more than all of them
#pragma once

#include "base/session.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sqlock::detail {

/// The column names of a row type, in order: column_list("token", "owner").
template <class... Names>
consteval auto column_list(Names... names) {
    return std::array<std::string_view, sizeof...(Names)>{std::string_view(names)...};
}

/// How many of Row::columns every row has: all of them, unless Row says fewer.
template <class Row>
constexpr std::size_t required_columns_of() noexcept {
    if constexpr (requires { Row::required_columns; })
        return Row::required_columns;
    else
        return Row::columns.size();
}

/// Throws errc::backend: a statement that always returns a row returned none.
[[noreturn]] void throw_missing_row(std::span<const statement> statements);

/// Every row of `res` as Row, in order. Throws errc::backend when a row does not fit Row.
template <class Row>
std::vector<Row> decode_rows(const result& res) {
    std::vector<Row> out;
    out.reserve(res.rows.size());
    for (const auto& r : res.rows)
        out.push_back(Row::decode(r));
    return out;
}

/// The first row of `res` as Row (later rows are not read); nullopt when there is none.
/// Throws errc::backend when the row does not fit Row.
template <class Row>
std::optional<Row> decode_first(const result& res) {
    if (res.rows.empty())
        return std::nullopt;
    return Row::decode(res.rows.front());
}

/// The first row of a statement that always returns one, as Row. Throws errc::backend when
/// there is none, or when it does not fit Row.
template <class Row>
Row decode_single(const result& res) {
    if (res.rows.empty())
        throw_missing_row(Row::statements);
    return Row::decode(res.rows.front());
}

// ---------------------------------------------------------------- leases (the lock table)

/// acquire_unique_key: the grant or re-entry; not granted, the row as it is (some backends
/// return no row then).
struct acquire_unique_key_row {
    static constexpr std::array statements{statement::acquire_unique_key};
    static constexpr auto columns =
        column_list("token", "hold_count", "granted", "created_free_row", "lease_seq", "ttl_ms",
                    "mine", "queue_busy", "deferred", "server_clock_ms");
    std::int64_t token = 0;
    std::int64_t hold_count = 0;
    bool granted = false;          ///< the statement granted the lease (or re-entered it)
    bool created_free_row = false; ///< it only created the name's free row: send it again
    std::int64_t lease_seq = 0;
    std::int64_t ttl_ms = 0;
    bool mine = false;       ///< the row's owner is the caller (not granted: a lost grant's)
    bool queue_busy = false; ///< another session holds the name's queue lock: someone waits
    unsigned deferred = 0;   ///< bit k: the lock of lock_request::defer_to[k] is held
    std::int64_t server_clock_ms = 0;
    static acquire_unique_key_row decode(const row& r);
};

/// inspect_lock: the lock row of a name, whatever its strategy.
struct inspect_lock_row {
    static constexpr std::array statements{statement::inspect_lock};
    static constexpr auto columns =
        column_list("owner", "token", "hold_count", "expires_in_ms", "strategy", "lease_seq",
                    "ttl_ms", "server_clock_ms");
    std::string owner; ///< empty: free
    std::int64_t token = 0;
    std::int64_t hold_count = 0;
    std::int64_t expires_in_ms = 0; ///< by the database's clock: for people, never to decide
    std::string strategy;
    std::int64_t lease_seq = 0;
    std::int64_t ttl_ms = 0;
    std::int64_t server_clock_ms = 0;
    static inspect_lock_row decode(const row& r);
};

/// ov_read: optimistic_version's look at a name's row.
struct ov_read_row {
    static constexpr std::array statements{statement::ov_read};
    static constexpr auto columns =
        column_list("token", "owner", "hold_count", "held", "lease_seq", "ttl_ms", "queue_busy",
                    "deferred", "server_clock_ms");
    std::int64_t token = 0;
    std::string owner;
    std::int64_t hold_count = 0;
    bool held = false; ///< someone owns it (its lease may look expired: clocks step)
    std::int64_t lease_seq = 0;
    std::int64_t ttl_ms = 0;
    bool queue_busy = false; ///< another session holds the name's queue lock: someone waits
    unsigned deferred = 0;   ///< bit k: the lock of lock_request::defer_to[k] is held
    std::int64_t server_clock_ms = 0;
    static ov_read_row decode(const row& r);
};

/// A fencing token: the one just drawn (fu_next_token), the one a compare-and-set wrote
/// (ov_acquire, ov_reenter; a quorum member's q_acquire, q_renew), or another attempt's still
/// marked running (job_stale).
struct token_row {
    static constexpr std::array statements{statement::fu_next_token, statement::ov_acquire,
                                           statement::ov_reenter,    statement::job_stale,
                                           statement::q_acquire,     statement::q_renew};
    static constexpr auto columns = column_list("token");
    std::int64_t token = 0;
    static token_row decode(const row& r);
};

/// q_read: a quorum member's row for a name.
struct quorum_row {
    static constexpr std::array statements{statement::q_read};
    static constexpr auto columns = column_list("token", "owner", "version", "ttl_ms");
    std::int64_t token = 0; ///< the highest token this member accepted for the name
    std::string owner;      ///< '' when free
    std::int64_t version = 0;
    std::int64_t ttl_ms = 0;
    static quorum_row decode(const row& r);
};

/// q_list: a quorum member's row, as status and release --force show it.
struct quorum_listing_row {
    static constexpr std::array statements{statement::q_list};
    static constexpr auto columns = column_list("name", "token", "owner", "host", "pid", "ttl_ms",
                                                "version", "acquired_at", "expires_in_ms");
    std::string name;
    std::int64_t token = 0; ///< the highest token this member accepted for the name
    std::string owner;      ///< '' when free
    std::string host;
    std::int64_t pid = 0;
    std::int64_t ttl_ms = 0;
    std::int64_t version = 0;
    std::string acquired_at;                   ///< UTC, "YYYY-MM-DD HH:MM:SS.ffffff"; "" if never
    std::optional<std::int64_t> expires_in_ms; ///< on the member's clock; nullopt when free
    static quorum_listing_row decode(const row& r);
};

/// waiters_check: a name, of the two asked about, whose lease is held.
struct held_name_row {
    static constexpr std::array statements{statement::waiters_check};
    static constexpr auto columns = column_list("name");
    std::string name;
    static held_name_row decode(const row& r);
};

/// uk_queue_enter: whether the name's queue lock was taken.
struct uk_queue_enter_row {
    static constexpr std::array statements{statement::uk_queue_enter};
    static constexpr auto columns = column_list("waited", "turn", "wait_ms");
    static constexpr std::size_t required_columns = 2; ///< wait_ms comes back on some only
    bool waited = false;                 ///< someone else had it: the lock is contended
    bool turn = false;                   ///< it is ours (else not within the wait, or interrupted)
    std::optional<std::int64_t> wait_ms; ///< the wait asked for, echoed where it is unused
    static uk_queue_enter_row decode(const row& r);
};

// ---------------------------------------------------------------- select_for_update tokens

/// fu_lock, fu_lock_nowait: the row is locked; the token drawn under the lock.
struct fu_lock_row {
    static constexpr std::array statements{statement::fu_lock, statement::fu_lock_nowait};
    static constexpr auto columns = column_list("token", "recovered");
    std::optional<std::int64_t> token; ///< nullopt: draw it with fu_next_token
    bool recovered = false;            ///< this server incarnation's token sequence was recovered
    static fu_lock_row decode(const row& r);
};

/// fu_raise_hwm: the durable high-water mark of fencing tokens, after the raise.
struct token_hwm_row {
    static constexpr std::array statements{statement::fu_raise_hwm};
    static constexpr auto columns = column_list("value");
    std::int64_t value = 0;
    static token_hwm_row decode(const row& r);
};

// ---------------------------------------------------------------- operations

/// list_locks, find_lock: a lock row as status shows it.
struct lock_listing_row {
    static constexpr std::array statements{statement::list_locks, statement::find_lock};
    static constexpr auto columns =
        column_list("name", "owner", "host", "pid", "strategy", "token", "hold_count",
                    "acquired_at", "expires_at", "expires_in_ms", "held_for_ms");
    std::string name;
    std::string owner;
    std::string host;
    std::int64_t pid = 0;
    std::string strategy;
    std::int64_t token = 0;
    std::int64_t hold_count = 0;
    std::string acquired_at; ///< UTC, "YYYY-MM-DD HH:MM:SS.ffffff"
    std::string expires_at;  ///< the same
    std::int64_t expires_in_ms = 0;
    std::int64_t held_for_ms = 0;
    static lock_listing_row decode(const row& r);
};

/// list_waiters: a session in line for a name, or the marker of waiters the server hides.
struct waiter_row {
    static constexpr std::array statements{statement::list_waiters};
    static constexpr auto columns = column_list("name", "session", "who", "waited_ms", "granted");
    std::optional<std::string> name; ///< nullopt: the server does not show its waiters
    std::int64_t session = 0;        ///< the server's id of the session
    std::string who;                 ///< what the session says it is (empty: nothing)
    std::int64_t waited_ms = 0;
    bool granted = false; ///< it has the name's queue: the holder or the next in line
    static waiter_row decode(const row& r);
};

/// reap_candidates: a held lease that looks expired.
struct reap_candidate_row {
    static constexpr std::array statements{statement::reap_candidates};
    static constexpr auto columns = column_list("name", "token", "lease_seq", "ttl_ms");
    std::string name;
    std::int64_t token = 0;
    std::int64_t lease_seq = 0;
    std::int64_t ttl_ms = 0;
    static reap_candidate_row decode(const row& r);
};

/// count_expired, job_prune_count: how many rows a reap would delete.
struct expired_count_row {
    static constexpr std::array statements{statement::count_expired, statement::job_prune_count};
    static constexpr auto columns = column_list("expired");
    std::int64_t expired = 0;
    static expired_count_row decode(const row& r);
};

/// list_clock_steps: a step of the server's clock that a process noticed.
struct clock_step_row {
    static constexpr std::array statements{statement::list_clock_steps};
    static constexpr auto columns = column_list("seen_at", "observer", "step_ms", "age_ms");
    std::string seen_at; ///< UTC, "YYYY-MM-DD HH:MM:SS.ffffff"
    std::string observer;
    std::int64_t step_ms = 0;
    std::int64_t age_ms = 0;
    static clock_step_row decode(const row& r);
};

// ---------------------------------------------------------------- schema

/// migrations_applied: an applied schema version.
struct migration_version_row {
    static constexpr std::array statements{statement::migrations_applied};
    static constexpr auto columns = column_list("version");
    std::int64_t version = 0;
    static migration_version_row decode(const row& r);
};

/// migrations_compat: the oldest library version that can share the tables.
struct migrations_compat_row {
    static constexpr std::array statements{statement::migrations_compat};
    static constexpr auto columns = column_list("compatible_from");
    std::optional<std::int64_t> compatible_from; ///< nullopt: no migration above the one asked
    static migrations_compat_row decode(const row& r);
};

/// topology: what the server behind a new connection is (docs/site/databases/replicated.md).
struct topology_row {
    static constexpr std::array statements{statement::topology};
    static constexpr auto columns =
        column_list("read_only", "replicas", "synchronous", "cluster_nodes", "server", "node_ready",
                    "node_state");
    static constexpr std::size_t required_columns = 5; ///< the node's state: multi-writer only
    bool read_only = false;
    std::int64_t replicas = 0;
    bool synchronous = false; ///< a commit waits for a replica
    std::int64_t cluster_nodes = 0;
    std::optional<std::string> server; ///< host:port as the server sees it
    /// A node of a multi-writer cluster: whether it serves clients now; nullopt elsewhere.
    std::optional<bool> node_ready;
    std::optional<std::string> node_state; ///< the node's state, for messages
    static topology_row decode(const row& r);
};

// ---------------------------------------------------------------- scheduled jobs

/// job_now: the database clock, ms since 1970 UTC.
struct job_now_row {
    static constexpr std::array statements{statement::job_now};
    static constexpr auto columns = column_list("now_ms");
    std::int64_t now_ms = 0;
    static job_now_row decode(const row& r);
};

/// job_recent, job_slot_runs: an earlier attempt of a job's slot.
struct job_attempt_row {
    static constexpr std::array statements{statement::job_recent, statement::job_slot_runs};
    static constexpr auto columns =
        column_list("slot", "slot_fired_ms", "outcome", "token", "owner", "host", "pid");
    std::string slot;
    std::int64_t slot_fired_ms = 0;
    std::string outcome;
    std::int64_t token = 0;
    std::string owner;
    std::string host;
    std::int64_t pid = 0;
    static job_attempt_row decode(const row& r);
};

/// job_run_get: the times of an attempt that just ended.
struct job_run_row {
    static constexpr std::array statements{statement::job_run_get};
    static constexpr auto columns = column_list("started_ms", "ended_ms", "duration_ms", "outcome");
    std::int64_t started_ms = 0;
    std::int64_t ended_ms = 0;
    std::int64_t duration_ms = 0;
    std::string outcome;
    static job_run_row decode(const row& r);
};

/// job_history: one attempt of a job, as the run ledger has it.
struct job_history_row {
    static constexpr std::array statements{statement::job_history};
    static constexpr auto columns =
        column_list("token", "slot", "owner", "host", "pid", "period_ms", "started_ms", "ended_ms",
                    "duration_ms", "exit_status", "term_signal", "outcome", "message", "now_ms");
    std::int64_t token = 0;
    std::string slot;
    std::string owner;
    std::string host;
    std::int64_t pid = 0;
    std::int64_t period_ms = 0;
    std::int64_t started_ms = 0;
    std::optional<std::int64_t> ended_ms;    ///< nullopt while running
    std::optional<std::int64_t> duration_ms; ///< nullopt while running
    std::optional<std::int64_t> exit_status;
    std::optional<std::int64_t> term_signal;
    std::string outcome;
    std::string message;
    std::int64_t now_ms = 0;
    static job_history_row decode(const row& r);
};

/// job_list: one job's row with its counters.
struct job_list_row {
    static constexpr std::array statements{statement::job_list};
    static constexpr auto columns = column_list(
        "name", "period_ms", "first_fired_ms", "last_fired_ms", "last_outcome", "last_started_ms",
        "last_duration_ms", "last_success_started_ms", "last_success_ended_ms", "succeeded",
        "failed", "lost", "abandoned", "skipped", "running_since_ms", "now_ms");
    std::string name;
    std::int64_t period_ms = 0;
    std::int64_t first_fired_ms = 0;
    std::int64_t last_fired_ms = 0;
    std::string last_outcome;
    std::int64_t last_started_ms = 0;
    std::int64_t last_duration_ms = 0;
    std::int64_t last_success_started_ms = 0;
    std::int64_t last_success_ended_ms = 0;
    std::int64_t succeeded = 0;
    std::int64_t failed = 0;
    std::int64_t lost = 0;
    std::int64_t abandoned = 0;
    std::int64_t skipped = 0;
    std::optional<std::int64_t> running_since_ms; ///< nullopt: no attempt runs under a lease
    std::int64_t now_ms = 0;
    static job_list_row decode(const row& r);
};

// ---------------------------------------------------------------- a backend's own queries

/// One value (a server setting asked with session::query).
struct single_value_row {
    static constexpr std::array<statement, 0> statements{};
    static constexpr auto columns = column_list("value");
    std::optional<std::string> value;
    static single_value_row decode(const row& r);
};

/// SHOW ENGINE ... STATUS: a storage engine's status report.
struct engine_status_row {
    static constexpr std::array<statement, 0> statements{};
    static constexpr auto columns = column_list("type", "name", "status");
    std::string type;
    std::string name;
    std::string status; ///< the report's text
    static engine_status_row decode(const row& r);
};

/// A connection attribute of a server session (its client's process id, say).
struct connect_attribute_row {
    static constexpr std::array<statement, 0> statements{};
    static constexpr auto columns = column_list("processlist_id", "attr_value");
    std::int64_t session_id = 0; ///< the server's id of the session
    std::int64_t value = 0;      ///< the attribute, a number (0 when it is not one)
    static connect_attribute_row decode(const row& r);
};

/// The row types of catalog statements: tests/unit/rows_test.cpp checks each against its
/// statements' SQL files. A new row type of a catalog statement belongs here.
template <class... Rows>
struct row_types {};
using catalog_row_types =
    row_types<acquire_unique_key_row, inspect_lock_row, ov_read_row, token_row, quorum_row,
              quorum_listing_row, held_name_row, uk_queue_enter_row, fu_lock_row, token_hwm_row,
              lock_listing_row, waiter_row, reap_candidate_row, expired_count_row, clock_step_row,
              migration_version_row, migrations_compat_row, topology_row, job_now_row,
              job_attempt_row, job_run_row, job_history_row, job_list_row>;

} // namespace sqlock::detail
