// Internal: connecting to the right server of a replicated database, and refusing what cannot
// keep a lock safe (docs/site/databases/replicated.md). Every new connection (pooled or a lock
// session) runs the backend's `topology` statement once: a read-only standby or replica is
// refused, asynchronous replicas are a warning (an error with require_synchronous_replication),
// and the latest answer is kept for database::topology(), `sqlock status` and the
// select_for_update check.
#pragma once

#include "backends/traits.hpp"
#include "base/config.hpp"
#include "base/session.hpp"
#include "base/statements.hpp"
#include "sqlock/database.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace sqlock::detail {

class topology_probe {
public:
    /// Opens one session to the single server `config` names (throws sqlock::error).
    using opener = std::function<std::unique_ptr<session>(const connection_config& config)>;

    /// `config`, `options` and `catalog` must outlive the probe.
    topology_probe(const connection_config& config, const connect_options& options,
                   const sql_catalog& catalog, opener open);

    /// Opens a session with `config` and checks the server's topology: where the backend does
    /// not try a host list itself (MariaDB), the URL's hosts in order, keeping the first that
    /// accepts writes. Throws errc::topology for a read-only standby/replica (or asynchronous
    /// replicas when require_synchronous_replication is set), else what connecting threw.
    std::unique_ptr<session> connect(const connection_config& config);

    /// The replication setup the last connection found (see database::topology()).
    topology_info last_seen() const;
    /// select_for_update: throws errc::topology when the server is a node of a multi-node
    /// cluster (row locks hold on one node only).
    void require_row_locks_safe() const;
    /// A connection found a pooler that shares server connections between transactions.
    bool behind_transaction_pooler() const noexcept {
        return m_behind_pooler.load(std::memory_order_relaxed);
    }
    /// A connection found a node of a multi-primary cluster (traits().cluster_name).
    bool multi_primary() const noexcept { return m_multi_primary.load(std::memory_order_relaxed); }

private:
    const backend_traits& traits() const noexcept { return traits_of(m_config.kind); }
    /// Several hosts, tried in turn (connect()).
    std::unique_ptr<session> connect_first_primary(const connection_config& config);
    /// Runs the topology statement on a new session `s` (to `endpoint`, "host:port") and
    /// records the answer. Returns the server's name when it is read-only (the caller refuses
    /// it); throws errc::topology when asynchronous replicas are refused.
    std::optional<std::string> check(session& s, const std::string& endpoint);
    /// The warnings and refusals of a primary's answer `t` (check()).
    void judge_replication(topology_info& t, const session& s) const;
    [[noreturn]] void throw_read_only(const std::string& server) const;

    const connection_config& m_config;
    const connect_options& m_options;
    const sql_catalog& m_catalog;
    opener m_open;
    std::atomic<bool> m_behind_pooler{false};
    std::atomic<bool> m_multi_primary{false};
    mutable std::mutex m_mutex;
    topology_info m_topology; ///< from the last connection opened
};

} // namespace sqlock::detail
