/// @file
/// leader.hpp: sqlock::leader_election, one leader at a time among processes that share a
/// database, with a term that fences what the leader does.
#pragma once

#include "sqlock/database.hpp"
#include "sqlock/error.hpp"
#include "sqlock/mutex.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

namespace sqlock {

namespace detail {
class leader_election_impl;
class handle_access;
} // namespace detail

/// Per-election settings (validated like mutex_options: errc::invalid_argument).
struct leader_options {
    /// Lease length on the database clock: positive, at most 30 days. The leader renews it
    /// every ttl/3 on its own; a leader that stops renewing (crashed, paused, cut off from the
    /// database) is replaced about one ttl after its last renewal (see leader_election).
    std::chrono::milliseconds ttl = std::chrono::seconds(10);
    /// Backoff while campaigning, as mutex_options::retry_min / retry_max: each poll sleeps a
    /// random time in [d, 2d), d doubling from retry_min up to retry_max.
    std::chrono::milliseconds retry_min = std::chrono::milliseconds(2);
    /// Upper bound of the campaign backoff's d; at least retry_min.
    std::chrono::milliseconds retry_max = std::chrono::milliseconds(200);
    /// Called once per lost term, from sqlock's background thread, when leadership is lost
    /// (the renewal was refused, or the lease's local end passed without one): event.token is
    /// the term. Must not block for long and must not call into this leader_election. Not
    /// called for resign().
    std::function<void(const lock_lost_event&)> on_lost{};
    /// Called when the term's lease is at risk (renewals failing: event.lease_end says when
    /// the term ends unless one gets through) and again when it is safe, as
    /// mutex_options::on_at_risk.
    std::function<void(const lock_at_risk_event&)> on_at_risk{};
};

/// The current leader of an election, as the database's lock row says (leader_election::leader).
/// Times are the database's clock.
struct leader_info {
    std::string id;        ///< the leader's owner id: host:pid:nonce/handle
    std::string host;      ///< the leader's host name
    std::int64_t pid = 0;  ///< the leader's process id
    std::int64_t term = 0; ///< the leader's term (its fencing token)
    /// When this term began, UTC "YYYY-MM-DD HH:MM:SS.ffffff" (SQLite: milliseconds, ".fff").
    std::string since;
    std::string expires; ///< when its lease ends unless renewed, UTC, same format
    /// expires minus the database's current time (positive: leader() reports live leases only).
    std::chrono::milliseconds remaining{0};
    /// How long this term has lasted, by the database's clock.
    std::chrono::milliseconds leading_for{0};
};

/// Leader election named `name` in database `db`: at most one elector leads at a time, among
/// all threads and processes on all hosts that share the database.
///
/// Built on sqlock::mutex (strategy unique_key, renew = true): campaign() is lock(), the term
/// is the grant's fencing token, resign() is unlock(). So everything the mutex guarantees holds:
/// - **One leader at a time.** An elector is leader from campaign()'s return until it
///   resigns or its lease's local end (see mutex::owns_lock()), which comes before anyone else
///   can be elected.
/// - **Terms strictly increase** from one leader to the next, across crashes, reaping and
///   server restarts (docs: guides/fencing.md, "Which crashes tokens survive"). Pass the
///   term to whatever the leader writes to, and have that refuse lower terms (for example
///   database::fencing_condition()): this is what makes a leader that was paused past its
///   lease harmless.
/// - **Losing leadership is signalled**: stop_token() is requested and on_lost runs, at the
///   latest at the lease's local end.
/// - **Failover**: a leader that dies (kill -9, a crashed host) is replaced once a campaigner
///   has seen its lease unchanged for a whole ttl of its own steady clock (a step of the
///   database's clock cannot cut that short). The campaigner first sees that lease at its
///   first poll after the leader's last renewal and takes it over at its first poll after the
///   ttl has passed, so a new leader is elected at most ttl + 2 campaign polls (each at most
///   2 x retry_max: 400 ms by default) + a few round trips after the dead leader's last
///   renewal, which was at most ttl/3 before its death. From the kill: between about
///   2/3 x ttl and ttl + 4 x retry_max + round trips. Measured with ttl = 2 s (20 kills per
///   backend; docs: performance.md, "Leader failover"): medians 1.87-1.98 s, maxima 2.27-2.47 s.
///   A leader that resigns hands over at once (a PostgreSQL campaigner is woken by a
///   notification; MariaDB and SQLite campaigners at their next poll).
///
/// Cost: the leader renews with one UPDATE every ttl/3 (from a background thread shared by
/// all of the process's locks); campaigners poll with one statement per backoff pause;
/// leader() is one primary-key SELECT.
///
/// Threads: campaign() and try_campaign_for() may be called from any thread, also at once
/// (they take turns: a campaign that finds this elector already leading returns the current
/// term). is_leader(), term(), stop_token() and leader() may be called from any thread.
/// resign() may be called from any thread; from the thread whose campaign won (the leading
/// thread) it releases like mutex::unlock() (retries a busy database, records failures in
/// last_error()), from another thread it releases once without retrying. Destroying the
/// elector resigns (without throwing); it must not be destroyed while another thread is in one
/// of its members.
class leader_election {
public:
    /// Validates name and options (errc::invalid_argument; names as for sqlock::mutex). Does
    /// not contact the database and does not campaign.
    leader_election(database db, std::string name, leader_options options = {});
    /// Resigns if leading (never throws).
    ~leader_election();
    leader_election(const leader_election&) = delete;
    leader_election& operator=(const leader_election&) = delete;

    /// Blocks until this elector leads; returns the term. At once when it already leads.
    /// Connection trouble while waiting is retried; throws sqlock::error on a non-retryable
    /// failure (lock tables missing: errc::schema_missing...).
    std::int64_t campaign();
    /// As campaign(), giving up after `rel` (steady clock): nullopt when not elected in time.
    template <class Rep, class Period>
    std::optional<std::int64_t> try_campaign_for(const std::chrono::duration<Rep, Period>& rel) {
        return try_campaign_until_steady(detail::steady_deadline(rel));
    }
    /// One attempt, no waiting: the term when elected (or already leading), else nullopt.
    std::optional<std::int64_t> try_campaign();
    /// Gives up leadership: stop_token() is requested first, then the lease is released, so a
    /// campaigner elsewhere is elected at once. Stop (and join) the work that leadership
    /// guarded before calling it: whatever still runs after resign() may overlap the next
    /// leader. No-op when not leading (also after leadership was lost). Never throws.
    void resign() noexcept;

    /// True while this elector leads: it won a campaign, has not resigned, and leadership was
    /// not lost. On the leading thread this is mutex::owns_lock() (false once the lease's local
    /// end passed); on other threads it turns false when stop_token() is requested, which
    /// sqlock's background thread does when it finds the lease lost or at the lease's local
    /// end (scheduling may make that a few milliseconds late: within the margin of ttl/10,
    /// 25 ms to 1 s, that the local end keeps before anyone else can be elected).
    bool is_leader() const noexcept;
    /// The term (fencing token) of the current leadership while is_leader(); 0 otherwise.
    std::int64_t term() const noexcept;
    /// A stop token of the current (or, after it ended, the last) term: stop is requested when
    /// leadership is lost, when resign() is called and when the elector is destroyed. A default
    /// token (stop_possible() == false) before the first successful campaign.
    std::stop_token stop_token() const noexcept;

    /// Who leads this election now, read from the database without campaigning (any process
    /// may ask, with any options; one SELECT). nullopt when nobody does: no elector ever led,
    /// the last leader resigned, or its lease has expired by the database clock (a crashed
    /// leader, about to be replaced). Judged by the database's clock, so a step of that clock
    /// can make it say "nobody" for a leader that still leads (the election itself does not
    /// trust that clock). Throws sqlock::error when the database cannot be read, and
    /// errc::invalid_argument when the name is used by a lock of another strategy.
    std::optional<leader_info> leader() const;

    /// The election name (the lock name).
    const std::string& name() const noexcept;
    /// Message of the last failure resign() swallowed ("" when none).
    std::string last_error() const;
    /// How the last term ended (as mutex::last_loss()): loss_reason::none when it was
    /// resigned while still leading; otherwise why it was lost, whether the term was told
    /// (stop_token(), on_lost) or resign() found its lease taken over (a leader paused past
    /// its TTL). Set by resign() (and by a campaign that ends a lost term).
    loss_reason last_loss() const;

private:
    // The core of try_campaign_for(): retries until `deadline` on the steady clock.
    std::optional<std::int64_t>
    try_campaign_until_steady(std::chrono::steady_clock::time_point deadline);

    std::unique_ptr<detail::leader_election_impl> m_impl;
    friend class detail::handle_access; // the C API's cancellable campaign (handle_access.hpp)
};

} // namespace sqlock
