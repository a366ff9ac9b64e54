// The row decoders of base/rows.hpp: the one place where result cells are read by position.
// A decoder names the columns it reads; their positions come from its row type's `columns`,
// looked up while compiling, so a name that is not there does not build.
#include "base/rows.hpp"
#include "sqlock/error.hpp"

#include <cstdlib>

namespace sqlock::detail {

namespace {

/// "inspect_lock" or "list_locks/find_lock": the statements a row type decodes, for messages.
std::string statements_text(std::span<const statement> statements) {
    if (statements.empty())
        return "a query";
    std::string out;
    for (const auto id : statements) {
        if (!out.empty())
            out += '/';
        out += name_of(id); // appended in steps: GCC 12 -Wrestrict misfires on "/" + string
    }
    return out;
}

/// One column of `Row`, named by a string literal and found in Row::columns while compiling
/// (a consteval constructor: a name that is not one of them is a build error).
template <class Row>
class column_of {
public:
    // Implicit on purpose: a decoder names a column with a string literal.
    consteval column_of(const char* name) : m_position(find(name)) {}
    constexpr std::size_t position() const noexcept { return m_position; }

private:
    static consteval std::size_t find(std::string_view name) {
        for (std::size_t i = 0; i < Row::columns.size(); ++i)
            if (Row::columns[i] == name)
                return i;
        throw "not a column of this row type"; // while compiling: the build fails here
    }
    std::size_t m_position;
};

/// The cells of one result row, checked against Row's column list, read by column name.
template <class Row>
class cells {
public:
    /// Throws errc::backend when `r` has fewer cells than Row's required columns or more than
    /// all of its columns (a statement and its decoder that disagree).
    explicit cells(const row& r) : m_row(r) {
        constexpr auto at_least = required_columns_of<Row>();
        constexpr auto at_most = Row::columns.size();
        if (r.size() < at_least || r.size() > at_most)
            throw error(errc::backend, statements_text(Row::statements) + " returned a row of " +
                                           std::to_string(r.size()) + " columns; sqlock reads " +
                                           (at_least == at_most ? "" : "at least ") +
                                           std::to_string(at_least));
    }

    /// The cell; SQL NULL also for an optional column this row does not have.
    const std::optional<std::string>& operator[](column_of<Row> c) const {
        static const std::optional<std::string> missing;
        return c.position() < m_row.size() ? m_row[c.position()] : missing;
    }
    /// Text; "" for NULL.
    std::string text(column_of<Row> c) const { return (*this)[c].value_or(""); }
    /// An integer; 0 for NULL (column_int).
    std::int64_t integer(column_of<Row> c) const { return column_int((*this)[c]); }
    /// An integer; nullopt for NULL.
    std::optional<std::int64_t> nullable_integer(column_of<Row> c) const {
        if (!(*this)[c])
            return std::nullopt;
        return integer(c);
    }
    /// A 0/1 column (statements cast booleans to integers), true when it is 1.
    bool is_one(column_of<Row> c) const { return integer(c) == 1; }
    /// A count or flag column, true when it is not 0 (NULL counts as 0).
    bool is_nonzero(column_of<Row> c) const { return integer(c) != 0; }

private:
    const row& m_row;
};

} // namespace

void throw_missing_row(std::span<const statement> statements) {
    throw error(errc::backend, statements_text(statements) + " returned no row");
}

// ---------------------------------------------------------------- leases (the lock table)

acquire_unique_key_row acquire_unique_key_row::decode(const row& r) {
    const cells<acquire_unique_key_row> c(r);
    return {.token = c.integer("token"),
            .hold_count = c.integer("hold_count"),
            .granted = c.is_one("granted"),
            .created_free_row = c.is_one("created_free_row"),
            .lease_seq = c.integer("lease_seq"),
            .ttl_ms = c.integer("ttl_ms"),
            .mine = c.is_one("mine"),
            .queue_busy = c.is_one("queue_busy"),
            .deferred = static_cast<unsigned>(c.integer("deferred")),
            .server_clock_ms = c.integer("server_clock_ms")};
}

inspect_lock_row inspect_lock_row::decode(const row& r) {
    const cells<inspect_lock_row> c(r);
    return {.owner = c.text("owner"),
            .token = c.integer("token"),
            .hold_count = c.integer("hold_count"),
            .expires_in_ms = c.integer("expires_in_ms"),
            .strategy = c.text("strategy"),
            .lease_seq = c.integer("lease_seq"),
            .ttl_ms = c.integer("ttl_ms"),
            .server_clock_ms = c.integer("server_clock_ms")};
}

ov_read_row ov_read_row::decode(const row& r) {
    const cells<ov_read_row> c(r);
    return {.token = c.integer("token"),
            .owner = c.text("owner"),
            .hold_count = c.integer("hold_count"),
            .held = c.is_one("held"),
            .lease_seq = c.integer("lease_seq"),
            .ttl_ms = c.integer("ttl_ms"),
            .queue_busy = c.is_one("queue_busy"),
            .deferred = static_cast<unsigned>(c.integer("deferred")),
            .server_clock_ms = c.integer("server_clock_ms")};
}

token_row token_row::decode(const row& r) {
    const cells<token_row> c(r);
    return {.token = c.integer("token")};
}

quorum_row quorum_row::decode(const row& r) {
    const cells<quorum_row> c(r);
    return {.token = c.integer("token"),
            .owner = c.text("owner"),
            .version = c.integer("version"),
            .ttl_ms = c.integer("ttl_ms")};
}

quorum_listing_row quorum_listing_row::decode(const row& r) {
    const cells<quorum_listing_row> c(r);
    return {.name = c.text("name"),
            .token = c.integer("token"),
            .owner = c.text("owner"),
            .host = c.text("host"),
            .pid = c.integer("pid"),
            .ttl_ms = c.integer("ttl_ms"),
            .version = c.integer("version"),
            .acquired_at = c.text("acquired_at"),
            .expires_in_ms = c.nullable_integer("expires_in_ms")};
}

held_name_row held_name_row::decode(const row& r) {
    const cells<held_name_row> c(r);
    return {.name = c.text("name")};
}

uk_queue_enter_row uk_queue_enter_row::decode(const row& r) {
    const cells<uk_queue_enter_row> c(r);
    return {.waited = c.is_one("waited"),
            .turn = c.is_one("turn"),
            .wait_ms = c.nullable_integer("wait_ms")};
}

// ---------------------------------------------------------------- select_for_update tokens

fu_lock_row fu_lock_row::decode(const row& r) {
    const cells<fu_lock_row> c(r);
    // A count of recovery markers on some backends: any is recovered.
    return {.token = c.nullable_integer("token"), .recovered = c.is_nonzero("recovered")};
}

token_hwm_row token_hwm_row::decode(const row& r) {
    const cells<token_hwm_row> c(r);
    return {.value = c.integer("value")};
}

// ---------------------------------------------------------------- operations

lock_listing_row lock_listing_row::decode(const row& r) {
    const cells<lock_listing_row> c(r);
    return {.name = c.text("name"),
            .owner = c.text("owner"),
            .host = c.text("host"),
            .pid = c.integer("pid"),
            .strategy = c.text("strategy"),
            .token = c.integer("token"),
            .hold_count = c.integer("hold_count"),
            .acquired_at = c.text("acquired_at"),
            .expires_at = c.text("expires_at"),
            .expires_in_ms = c.integer("expires_in_ms"),
            .held_for_ms = c.integer("held_for_ms")};
}

waiter_row waiter_row::decode(const row& r) {
    const cells<waiter_row> c(r);
    return {.name = c["name"],
            .session = c.integer("session"),
            .who = c.text("who"),
            .waited_ms = c.integer("waited_ms"),
            .granted = c.is_one("granted")};
}

reap_candidate_row reap_candidate_row::decode(const row& r) {
    const cells<reap_candidate_row> c(r);
    return {.name = c.text("name"),
            .token = c.integer("token"),
            .lease_seq = c.integer("lease_seq"),
            .ttl_ms = c.integer("ttl_ms")};
}

expired_count_row expired_count_row::decode(const row& r) {
    const cells<expired_count_row> c(r);
    return {.expired = c.integer("expired")};
}

clock_step_row clock_step_row::decode(const row& r) {
    const cells<clock_step_row> c(r);
    return {.seen_at = c.text("seen_at"),
            .observer = c.text("observer"),
            .step_ms = c.integer("step_ms"),
            .age_ms = c.integer("age_ms")};
}

// ---------------------------------------------------------------- schema

migration_version_row migration_version_row::decode(const row& r) {
    const cells<migration_version_row> c(r);
    return {.version = c.integer("version")};
}

migrations_compat_row migrations_compat_row::decode(const row& r) {
    const cells<migrations_compat_row> c(r);
    return {.compatible_from = c.nullable_integer("compatible_from")};
}

topology_row topology_row::decode(const row& r) {
    const cells<topology_row> c(r);
    topology_row out{.read_only = c.is_nonzero("read_only"),
                     .replicas = c.integer("replicas"),
                     .synchronous = c.is_nonzero("synchronous"),
                     .cluster_nodes = c.integer("cluster_nodes"),
                     .server = c["server"],
                     .node_ready = std::nullopt,
                     .node_state = c["node_state"]};
    if (c["node_ready"]) // NULL or missing: not a node of a multi-writer cluster
        out.node_ready = c.is_nonzero("node_ready");
    return out;
}

// ---------------------------------------------------------------- scheduled jobs

job_now_row job_now_row::decode(const row& r) {
    const cells<job_now_row> c(r);
    return {.now_ms = c.integer("now_ms")};
}

job_attempt_row job_attempt_row::decode(const row& r) {
    const cells<job_attempt_row> c(r);
    return {.slot = c.text("slot"),
            .slot_fired_ms = c.integer("slot_fired_ms"),
            .outcome = c.text("outcome"),
            .token = c.integer("token"),
            .owner = c.text("owner"),
            .host = c.text("host"),
            .pid = c.integer("pid")};
}

job_run_row job_run_row::decode(const row& r) {
    const cells<job_run_row> c(r);
    return {.started_ms = c.integer("started_ms"),
            .ended_ms = c.integer("ended_ms"),
            .duration_ms = c.integer("duration_ms"),
            .outcome = c.text("outcome")};
}

job_history_row job_history_row::decode(const row& r) {
    const cells<job_history_row> c(r);
    return {.token = c.integer("token"),
            .slot = c.text("slot"),
            .owner = c.text("owner"),
            .host = c.text("host"),
            .pid = c.integer("pid"),
            .period_ms = c.integer("period_ms"),
            .started_ms = c.integer("started_ms"),
            .ended_ms = c.nullable_integer("ended_ms"),
            .duration_ms = c.nullable_integer("duration_ms"),
            .exit_status = c.nullable_integer("exit_status"),
            .term_signal = c.nullable_integer("term_signal"),
            .outcome = c.text("outcome"),
            .message = c.text("message"),
            .now_ms = c.integer("now_ms")};
}

job_list_row job_list_row::decode(const row& r) {
    const cells<job_list_row> c(r);
    return {.name = c.text("name"),
            .period_ms = c.integer("period_ms"),
            .first_fired_ms = c.integer("first_fired_ms"),
            .last_fired_ms = c.integer("last_fired_ms"),
            .last_outcome = c.text("last_outcome"),
            .last_started_ms = c.integer("last_started_ms"),
            .last_duration_ms = c.integer("last_duration_ms"),
            .last_success_started_ms = c.integer("last_success_started_ms"),
            .last_success_ended_ms = c.integer("last_success_ended_ms"),
            .succeeded = c.integer("succeeded"),
            .failed = c.integer("failed"),
            .lost = c.integer("lost"),
            .abandoned = c.integer("abandoned"),
            .skipped = c.integer("skipped"),
            .running_since_ms = c.nullable_integer("running_since_ms"),
            .now_ms = c.integer("now_ms")};
}

// ---------------------------------------------------------------- a backend's own queries

single_value_row single_value_row::decode(const row& r) {
    const cells<single_value_row> c(r);
    return {.value = c["value"]};
}

engine_status_row engine_status_row::decode(const row& r) {
    const cells<engine_status_row> c(r);
    return {.type = c.text("type"), .name = c.text("name"), .status = c.text("status")};
}

connect_attribute_row connect_attribute_row::decode(const row& r) {
    const cells<connect_attribute_row> c(r);
    // strtoll, not column_int: the attribute is whatever text the client sent.
    const auto number = [&](column_of<connect_attribute_row> column) {
        return static_cast<std::int64_t>(
            std::strtoll(c[column].value_or("0").c_str(), nullptr, 10));
    };
    return {.session_id = number("processlist_id"), .value = number("attr_value")};
}

} // namespace sqlock::detail
