/// @file
/// quorum_mutex.hpp: sqlock::quorum_mutex, a lock held on a majority of independent databases.
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
#include <string_view>
#include <vector>

namespace sqlock {

namespace detail {
class quorum_impl;
}

/// Per-quorum-lock settings.
struct quorum_options {
    /// Lease length. A holder that neither releases nor renews within ttl loses the lock; a
    /// waiter takes a member's row over only after seeing it unchanged for its holder's ttl on
    /// its own steady clock. Must be positive and at most 30 days.
    std::chrono::milliseconds ttl = std::chrono::seconds(30);
    /// Polling backoff while waiting: each retry sleeps a random time in [d, 2d), d doubling
    /// from retry_min up to retry_max. Must be positive.
    std::chrono::milliseconds retry_min = std::chrono::milliseconds(5);
    /// Upper bound of the backoff's d (see retry_min); must be at least retry_min.
    std::chrono::milliseconds retry_max = std::chrono::milliseconds(200);
    /// How long one round waits for a member that has been answering. A member that failed or
    /// did not answer in time is not waited for again once a majority has answered (it is
    /// still asked, and counts again as soon as it answers), so a member's loss costs this
    /// once. Must be positive and below ttl / 2.
    std::chrono::milliseconds member_timeout = std::chrono::seconds(2);
    /// Renew while held: sqlock's background thread renews on every member at ttl/3.
    bool renew = false;
    /// As mutex_options::on_lost: called once, from sqlock's background thread, when a held
    /// lock is lost (a majority of members say it is no longer ours, or its lease's local end
    /// passed before a majority renewed it).
    std::function<void(const lock_lost_event&)> on_lost{};
    /// As mutex_options::on_at_risk: called from sqlock's background thread when a renewal
    /// failed to reach a majority, or none was confirmed while half the TTL went by.
    std::function<void(const lock_at_risk_event&)> on_at_risk{};
};

/// A lock named `name` held on a majority of N independent member databases (no replication
/// between them): with N = 3 it is granted and released while any one member is down,
/// unreachable or paused (docs: guides/quorum.md).
///
/// Every grant carries a fencing token that strictly increases across grants of the name,
/// although each member keeps its own: the token is one more than the highest any answering
/// majority has accepted, and a member accepts it only when it is above everything it accepted
/// before. No single member can prove a majority, so a protected resource fences by keeping
/// the highest token it has seen and refusing lower ones (the guide shows how).
///
/// Meets the TimedLockable requirements (std::unique_lock works with it). Ownership: the grant
/// belongs to this object, not to a thread; it is not re-entrant (lock() while this object
/// holds the lock throws errc::invalid_argument). One thread at a time may call lock/unlock on
/// one object; owns_lock(), token() and the loss queries may be called from any thread.
/// Every member must be migrated to schema 9 or later (`sqlock migrate` on each).
class quorum_mutex {
public:
    /// Throws errc::invalid_argument for fewer than 3 members, one member listed twice (the
    /// same URL and table prefix), a name that is empty or longer than max_name_length bytes,
    /// or bad options.
    /// Connects nothing itself: the members' handles are used as they are.
    quorum_mutex(std::vector<database> members, std::string name, quorum_options options = {});
    /// The members by URL, each opened with `connect` but not connected yet: a member that is
    /// down or unreachable now counts as not answering, and joins as soon as it answers (each
    /// member connects on its own thread, within connect.connect_timeout). Throws
    /// errc::invalid_argument for a malformed URL, and as the constructor above.
    quorum_mutex(const std::vector<std::string>& member_urls, std::string name,
                 quorum_options options = {}, const connect_options& connect = {});
    /// Releases the lock if this object holds it (errors are not reported).
    ~quorum_mutex();
    quorum_mutex(const quorum_mutex&) = delete;
    quorum_mutex& operator=(const quorum_mutex&) = delete;

    /// Waits until granted, trying again while the lock is held or fewer than a majority of
    /// the members answer (try_lock_for bounds the wait).
    void lock();
    /// One attempt: true when granted now. False when a majority is held by others; throws
    /// errc::connection when fewer than a majority of the members answered.
    bool try_lock();
    /// Tries until granted or `rel` has passed (a round that started before the deadline may
    /// end up to member_timeout after it). False when still held by others at the deadline;
    /// errc::connection when, at the deadline, the last attempt found no answering majority.
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& rel) {
        return try_lock_until_steady(detail::steady_deadline(rel));
    }
    /// try_lock_for() with an absolute deadline on any clock.
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& abs) {
        return try_lock_until_steady(detail::steady_deadline(abs));
    }
    /// Gives the lock back on every member (also those that did not answer: they are told when
    /// they answer again). Never throws: a member that cannot be told lets the row end with its
    /// lease. Does nothing when this object does not hold the lock.
    void unlock() noexcept;

    /// True while this object holds the lock and its lease is certainly still valid.
    bool owns_lock() const noexcept;
    /// The fencing token of the current grant; throws errc::lock_lost when not held.
    std::int64_t token() const;
    /// Why the current grant was lost (loss_reason::none while fine or not held).
    loss_reason lost_reason() const noexcept;
    /// How the most recent grant ended, also after unlock(): loss_reason::lost when it was lost
    /// while held, its lease's local end had passed when it was given back (a holder paused
    /// past its lease), or so many members said at the release that it was no longer ours that
    /// no majority can have been (taken over, or force-released); none when it was given back
    /// in time.
    loss_reason last_loss() const noexcept;
    /// Stop is requested when the current grant is lost (default token when not held).
    std::stop_token stop_token() const noexcept;

    /// The lock name.
    const std::string& name() const noexcept;
    /// N, the number of member databases.
    std::size_t members() const noexcept;
    /// The majority Q = N / 2 + 1 of members a grant needs.
    std::size_t majority() const noexcept;

private:
    bool try_lock_until_steady(std::chrono::steady_clock::time_point deadline);
    std::unique_ptr<detail::quorum_impl> m_impl;
};

/// One member's view of a quorum lock (quorum_status).
struct quorum_member_view {
    std::string url;       ///< the member (password hidden)
    bool answered = false; ///< false: it could not be read, `error` says why
    std::string error;     ///< why it did not answer ("" when it did)
    bool known = false;    ///< it has a row for the name (it has granted it at least once)
    /// The highest token this member accepted for the name (its high-water mark).
    std::int64_t token = 0;
    std::string owner;                ///< the holder here ("" when free)
    std::string host;                 ///< the holder's host ("" when free)
    std::int64_t pid = 0;             ///< the holder's process id (0 when free)
    std::chrono::milliseconds ttl{0}; ///< the holder's TTL
    std::string acquired_at;          ///< UTC, on the member's clock ("" when never granted)
    /// How long the holder's lease has left on this member's clock (negative: it ended and was
    /// not renewed); nullopt when free. For operators: no lock decision reads a member's clock.
    std::optional<std::chrono::milliseconds> expires_in;
    /// Held here by a lease that has not ended.
    bool live() const noexcept { return !owner.empty() && expires_in && expires_in->count() > 0; }
};

/// What the members of a quorum say of one lock name, taken together.
enum class quorum_verdict {
    held,     ///< one owner's lease is live on a majority
    free,     ///< a majority answered and none of them has a live lease on it
    undecided ///< neither: too few members answered, or the answers are split
};

/// A quorum lock as its members see it (quorum_status).
struct quorum_lock_view {
    std::string name;                                   ///< the lock name
    quorum_verdict verdict = quorum_verdict::undecided; ///< the members' answers taken together
    std::string owner;    ///< with verdict held: the holder ("" otherwise)
    std::string host;     ///< with verdict held: the holder's host
    std::int64_t pid = 0; ///< with verdict held: the holder's process id
    /// With verdict held: the members where the holder's lease is live.
    std::size_t held_on = 0;
    /// The highest token any answering member accepted: the holder's, if held; the next grant
    /// gets a higher one.
    std::int64_t token = 0;
    std::vector<quorum_member_view> members; ///< in the order given
};

/// The quorum locks the members know (every name with a row on any answering member, by name;
/// only `name` when it is not empty), each with every member's view. Members are read in
/// parallel; one that does not answer within its connect and I/O timeouts is shown as such
/// (quorum_member_view::answered). Throws errc::invalid_argument for fewer than 3 members or
/// a bad name, errc::connection when no member answered.
std::vector<quorum_lock_view> quorum_status(std::vector<database>& members,
                                            std::string_view name = {});
/// quorum_status() with the members by URL, each opened with `connect` on its own thread (a
/// member that is down is shown as not answering). Throws errc::invalid_argument for a
/// malformed URL too.
std::vector<quorum_lock_view> quorum_status(const std::vector<std::string>& member_urls,
                                            std::string_view name = {},
                                            const connect_options& connect = {});

/// What quorum_force_release did.
struct quorum_force_release_result {
    std::size_t members = 0;     ///< N
    std::size_t answered = 0;    ///< members that answered
    std::size_t released_on = 0; ///< members whose holder's row was freed
    std::string previous_owner;  ///< whose rows were freed ("" when none)
    /// The highest token among the freed rows. Tokens are not moved: a later grant's is higher
    /// anyway, and a resource fencing by the highest token it has seen refuses the old
    /// holder's writes once it has seen the later grant's.
    std::int64_t previous_token = 0;
    /// Freed on at least one member.
    bool released() const noexcept { return released_on > 0; }
};

/// Break-glass release of quorum lock `name` (sqlock release --force --url A --url B ...):
/// frees every answering member's row held by anyone, each recorded in that member's audit
/// table with `actor`. Its holder learns of it at its next renewal (a majority no longer says
/// it is theirs: on_lost), or at unlock() (last_loss()). Members that did not answer keep
/// their rows: when fewer than a majority answered, the holder may keep the lock (the caller
/// should say so). Throws errc::invalid_argument for fewer than 3 members or a bad name.
quorum_force_release_result quorum_force_release(std::vector<database>& members,
                                                 std::string_view name, std::string_view actor);
/// quorum_force_release() with the members by URL, as quorum_status() takes them.
quorum_force_release_result quorum_force_release(const std::vector<std::string>& member_urls,
                                                 std::string_view name, std::string_view actor,
                                                 const connect_options& connect = {});

/// What quorum_reseed did.
struct quorum_reseed_result {
    std::size_t names = 0;    ///< quorum lock names the other members know
    std::size_t raised = 0;   ///< names whose mark was raised on the restored member
    std::size_t answered = 0; ///< other members that answered
};

/// Re-seeds member `restored` (an index into `members`) after its data went back in time
/// (restored from a backup, or a server that lost commits): for every name any other member
/// knows, its mark is raised to the highest token the others accepted (created where missing,
/// never lowered) and its row freed, so that it may vote again without letting a token repeat
/// (docs: guides/quorum.md, "A member restored from a backup"). Run it before the member
/// rejoins: grants that reach it before it is re-seeded may repeat a token.
/// At least N - majority + 1 of the other members must answer (so that any majority that ever
/// granted is seen through one of them): errc::connection otherwise, with nothing changed on
/// the restored member. Throws errc::invalid_argument for fewer than 3 members or an index out
/// of range, and what the restored member's statements throw.
quorum_reseed_result quorum_reseed(std::vector<database>& members, std::size_t restored);
/// quorum_reseed() with the members by URL, as quorum_status() takes them.
quorum_reseed_result quorum_reseed(const std::vector<std::string>& member_urls,
                                   std::size_t restored, const connect_options& connect = {});

} // namespace sqlock
