// The topology probe: the right server of a replicated database, and what is refused there.
#include "database/topology.hpp"

#include "base/rows.hpp"
#include "sqlock/error.hpp"

#include <algorithm>

namespace sqlock::detail {

namespace {

std::string endpoint_text(const endpoint& e) {
    return e.host.find(':') != std::string::npos ? "[" + e.host + "]:" + std::to_string(e.port)
                                                 : e.host + ":" + std::to_string(e.port);
}

std::string plural(std::int64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

} // namespace

topology_probe::topology_probe(const connection_config& config, const connect_options& options,
                               const sql_catalog& catalog, opener open)
    : m_config(config), m_options(options), m_catalog(catalog), m_open(std::move(open)) {}

std::unique_ptr<session> topology_probe::connect(const connection_config& config) {
    // SQLite has no servers; PostgreSQL walks a host list itself (libpq, with
    // target_session_attrs=read-write); so does anything with one host.
    if (!traits_of(config.kind).tries_hosts_itself || config.endpoints.size() <= 1) {
        auto s = m_open(config);
        // Of several hosts libpq picked one: the server names itself.
        const auto server =
            config.endpoints.size() == 1 ? endpoint_text(config.endpoints.front()) : std::string();
        if (const auto standby = check(*s, server))
            throw_read_only(*standby);
        return s;
    }
    return connect_first_primary(config);
}

std::unique_ptr<session> topology_probe::connect_first_primary(const connection_config& config) {
    const auto& traits = traits_of(config.kind);
    // MariaDB: each host in turn, in the URL's order; the first that accepts writes. A host
    // whose connect or topology check fails (down, a Galera node not synced, 1047) is skipped.
    std::string failures;
    bool only_read_only = true; // every host refused for what it is, not for being unreachable
    bool any_server_full = false;
    for (const auto& e : config.endpoints) {
        auto one = config;
        one.host = e.host;
        one.port = e.port;
        try {
            auto s = m_open(one);
            const auto replica = check(*s, endpoint_text(e));
            if (!replica)
                return s;
            failures += "\n  " + *replica + ": a read-only replica";
        } catch (const error& failed) {
            only_read_only = only_read_only && failed.code() == errc::topology;
            any_server_full = any_server_full || is_server_full(failed);
            failures += "\n  " + endpoint_text(e) + ": " + failed.what();
        }
    }
    const std::string name(traits.name);
    if (only_read_only)
        throw error(
            errc::topology,
            name + ": no server in " + config.redacted_url +
                " can hold locks; they need a primary (a server that accepts writes):" + failures,
            name);
    // Connection trouble on some host (a failover in progress, say): retryable, as for one
    // host. A full server keeps its native code, so that is_server_full() still says so.
    throw error(errc::connection,
                name + ": no server in " + config.redacted_url + " accepts writes:" + failures,
                name, any_server_full ? traits.server_full_code : 0);
}

[[noreturn]] void topology_probe::throw_read_only(const std::string& server) const {
    const std::string name(traits().name);
    throw error(errc::topology,
                name + ": " + m_config.redacted_url + " reached " + server + ", a read-only " +
                    std::string(traits().replica_word) +
                    "; locks need the primary (the server that accepts writes). Put the primary "
                    "in the URL, or list every node (" +
                    name +
                    "://user:pw@host1:port,host2:port/db) to connect to whichever accepts writes",
                name);
}

std::optional<std::string> topology_probe::check(session& s, const std::string& endpoint) {
    if (s.behind_transaction_pooler())
        m_behind_pooler.store(true, std::memory_order_relaxed);
    if (m_catalog.is_noop(statement::topology)) {
        std::lock_guard lock(m_mutex);
        m_topology.server = m_config.path;
        return std::nullopt;
    }
    result r;
    try {
        r = s.execute(statement::topology, {});
    } catch (...) {
        s.rollback(); // MariaDB lock sessions run with autocommit off
        throw;
    }
    s.rollback();
    if (r.rows.empty())
        throw error(errc::backend, "the topology check returned no row",
                    std::string(to_string(m_config.kind)));
    const auto answer = topology_row::decode(r.rows.front());
    topology_info t;
    t.server = answer.server && !answer.server->empty() ? *answer.server : endpoint;
    if (!endpoint.empty() && t.server != endpoint)
        t.server = endpoint + " (" + t.server + ")";
    // A node of a multi-primary cluster (node_ready and node_state: Galera on MariaDB) that is
    // outside the primary component or not yet synced answers this query but refuses every
    // lock statement (1047).
    const bool multi_primary = answer.node_ready.has_value();
    const std::string name(traits().name);
    if (multi_primary && !*answer.node_ready)
        throw error(errc::connection,
                    name + ": " + t.server + " is a " + std::string(traits().cluster_name) +
                        " node that does not serve clients now (" +
                        answer.node_state.value_or("state unknown") +
                        "): it is not synced with a primary component. Another node can "
                        "serve: list every node in the URL (" +
                        name + "://user:pw@host1:port,host2:port/db)",
                    name, 1047);
    if (multi_primary) {
        m_multi_primary.store(true, std::memory_order_relaxed); // no user-level locks: no queue
        s.execute(statement::cluster_session, {});
    }
    const bool read_only = answer.read_only;
    t.replicas = static_cast<int>(answer.replicas);
    t.synchronous = answer.synchronous;
    t.cluster_nodes = std::max<int>(1, static_cast<int>(answer.cluster_nodes));
    if (read_only)
        return t.server;
    judge_replication(t, s);
    std::lock_guard lock(m_mutex);
    m_topology = std::move(t);
    return std::nullopt;
}

void topology_probe::judge_replication(topology_info& t, const session& s) const {
    const std::string where = std::string(to_string(m_config.kind)) + ": " + m_config.redacted_url;
    if (t.replicas > 0 && !t.synchronous) {
        const std::string why =
            t.server + " has " + plural(t.replicas, "replica", "replicas") +
            ", none synchronous: a failover to one of them can lose grants this server "
            "acknowledged (two holders of one lock, a fencing token handed out twice). " +
            std::string(traits().synchronous_replication_advice);
        if (m_options.require_synchronous_replication)
            throw error(errc::topology,
                        where + ": " + why + " (refused: require_synchronous_replication is set)",
                        std::string(to_string(m_config.kind)));
        t.warnings.push_back("asynchronous replication: " + why);
    }
    t.transaction_pooler = s.behind_transaction_pooler();
    if (t.transaction_pooler)
        t.warnings.push_back("a pooler shares server connections between transactions (" +
                             std::string(traits().transaction_pooler_name) +
                             " in transaction mode): waiters poll instead of being woken, and "
                             "replies are bounded by TCP timeouts only (no statement_timeout); "
                             "connect directly for prompt handoffs");
    if (t.cluster_nodes > 1)
        t.warnings.push_back(std::string(traits().cluster_name) + " cluster of " +
                             std::to_string(t.cluster_nodes) +
                             " nodes: select_for_update is refused (its row locks hold on one "
                             "node only); unique_key and optimistic_version are certified "
                             "cluster-wide");
}

topology_info topology_probe::last_seen() const {
    std::lock_guard lock(m_mutex);
    return m_topology;
}

void topology_probe::require_row_locks_safe() const {
    int nodes = 1;
    std::string server;
    {
        std::lock_guard lock(m_mutex);
        nodes = m_topology.cluster_nodes;
        if (nodes > 1) // (runs at every acquire: copy only for the message)
            server = m_topology.server;
    }
    if (nodes > 1)
        throw error(errc::topology,
                    std::string(to_string(m_config.kind)) + ": " + m_config.redacted_url +
                        " reached " + server + ", a node of a " +
                        std::string(traits().cluster_name) + " cluster of " +
                        std::to_string(nodes) +
                        " nodes: select_for_update cannot lock there (a row lock holds on one "
                        "node only, so two nodes would grant the same lock). Use unique_key or "
                        "optimistic_version: their writes are certified cluster-wide",
                    std::string(to_string(m_config.kind)));
}

} // namespace sqlock::detail
