// Internal: the quorum protocol (sqlock::quorum_mutex) over N independent member databases
// (docs/site/guides/quorum.md). A grant needs a majority Q = N/2 + 1 of the members:
//   round 1 reads the name's row on every member; with Q replies, the candidate token is one
//           more than the highest token among them;
//   round 2 sends every member the guarded write (q_acquire): accepted where the candidate is
//           above every token that member accepted before and the row is free, ours, or seen
//           unchanged by this caller for its holder's TTL. Granted with Q acceptances.
// Any two majorities share a member, and no member ever lowers its token, so a later grant's
// token is above an earlier one's. Each member's requests run in order on a thread of its own
// (quorum_member), so a member that is down or paused delays no one past the round's deadline,
// and the give-back of a failed round runs after that round's late writes.
#pragma once

#include "base/sighting.hpp"
#include "database/lock_context.hpp"
#include "strategies/strategy.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace sqlock::detail {

/// One member database of a quorum and the thread that sends it requests, in order.
class quorum_member {
public:
    /// `drain_limit`: how long destruction waits for the queued requests (give-backs) to be
    /// sent; a member that does not answer by then is left to finish them on its own.
    quorum_member(std::shared_ptr<lock_context> db, std::string url_for_messages,
                  std::chrono::milliseconds drain_limit);
    ~quorum_member();
    quorum_member(const quorum_member&) = delete;
    quorum_member& operator=(const quorum_member&) = delete;

    /// Queues `job` for this member's thread (run in the order posted). Jobs still queued at
    /// destruction are run before the thread ends: a give-back is never dropped.
    void post(std::function<void(lock_context&)> job);
    const std::string& url() const noexcept { return m_url; }
    /// The last request failed or did not answer in time: rounds stop waiting for this
    /// member once a majority has answered (a member's loss costs its timeout once).
    bool suspect() const noexcept { return m_suspect.load(); }
    void set_suspect(bool value) noexcept { m_suspect.store(value); }

private:
    /// What the member's thread shares with this object; the thread keeps it alive, so a
    /// thread left to finish after destruction touches nothing that is gone.
    struct queue {
        explicit queue(std::shared_ptr<lock_context> member) : db(std::move(member)) {}
        std::shared_ptr<lock_context> db;
        std::mutex mutex;
        std::condition_variable cv;
        std::deque<std::function<void(lock_context&)>> jobs;
        bool stopping = false;
        bool finished = false;
    };
    static void work(const std::shared_ptr<queue>& q);

    std::shared_ptr<queue> m_queue;
    std::string m_url;
    std::chrono::milliseconds m_drain_limit;
    std::atomic<bool> m_suspect{false};
    std::thread m_thread;
};

/// What one member answered in a round: a value, or the error it raised (an empty optional
/// of both: no answer yet).
template <class T>
struct member_reply {
    std::optional<T> value;
    std::optional<std::string> error;
    bool answered() const noexcept { return value || error; }
};

/// What a round 1 read found on one member.
struct member_row {
    bool exists = false;
    std::int64_t token = 0;
    std::string owner;
    std::int64_t version = 0;
    std::chrono::milliseconds ttl{};
};

/// The quorum protocol: members, majority, and the rounds. One per quorum_mutex.
class quorum_protocol : public lock_strategy {
public:
    /// `members`: N >= 3 member databases (an odd number is best: N = 2f + 1 survives f).
    /// `wait_for_member`: how long a round waits for a member that is not suspect.
    quorum_protocol(std::vector<std::unique_ptr<quorum_member>> members,
                    std::chrono::milliseconds wait_for_member);

    std::size_t size() const noexcept { return m_members.size(); }
    std::size_t majority() const noexcept { return m_members.size() / 2 + 1; }

    /// One acquire attempt (both rounds). `sightings[i]`: what this caller saw of a holder's
    /// row on member i, kept between attempts (a row seen unchanged for its TTL may be taken
    /// over). nullopt when not granted (held, or too few members answered: then `why` says
    /// which). Gives back at once what a failed round 2 got. Each round waits at most
    /// `wait_for_member` from its start (round 2's lease is counted from its own start, so
    /// a slow round 1 costs no lease).
    std::optional<grant> try_acquire_quorum(const lock_request& req,
                                            std::vector<std::optional<lease_sighting>>& sightings,
                                            std::string& why);

    // lock_strategy, for the lease keeper (renewal) and release; `db` is not used: the
    // members are this protocol's own.
    std::optional<grant> try_acquire(lock_context& db, const lock_request& req,
                                     std::chrono::milliseconds wait, attempt_state& state) override;
    grant reenter(lock_context& db, const lock_request& req, const grant& held) override;
    /// Renews on every member: with Q renewals the lease's local end moves to the round's
    /// send time + ttl - margin; with N - Q + 1 members saying it is not ours, errc::lock_lost;
    /// otherwise a retryable errc::connection (the keeper tries again until the local end).
    grant renew(lock_context& db, const lock_request& req, const grant& held) override;
    /// Gives the row back on every member (asynchronously committed where the backend can),
    /// waiting for the members that answer as long as a round waits, so that the lock is free
    /// when this returns; a member that does not answer gets the give-back once it answers
    /// again (each member's requests run in order), or its row ends with the lease. Never
    /// throws.
    void release(lock_context& db, const lock_request& req, const grant& held) override;

private:
    /// Sends `ask(db, i)` to every member i; waits until each non-suspect member answered and at
    /// least Q did, or every member answered, or `deadline` passed. Marks members that failed or
    /// did not answer as suspect, and those that answered as not.
    template <class T>
    std::vector<member_reply<T>> ask_all(std::function<T(lock_context&, std::size_t)> ask,
                                         std::chrono::steady_clock::time_point deadline);
    /// Round 1: the rows, and `why` when fewer than Q members answered.
    std::optional<std::vector<member_reply<member_row>>>
    read_rows(const lock_request& req, std::chrono::steady_clock::time_point deadline,
              std::string& why);
    /// How round 2 went: members that accepted the token, and members that answered but
    /// refused it (someone else holds the row there, or wrote a higher token).
    struct write_outcome {
        std::size_t accepted = 0;
        std::size_t refused = 0;
    };
    /// Round 2: the guarded write of `token` on every member.
    write_outcome write_token(const lock_request& req, std::int64_t token,
                              const std::vector<member_reply<member_row>>& rows,
                              const std::vector<std::optional<lease_sighting>>& sightings,
                              std::chrono::steady_clock::time_point deadline);
    /// Posts a give-back of `token` to every member (runs after any late write of it),
    /// asynchronously committed where the backend can.
    void give_back_everywhere(const lock_request& req, std::int64_t token);

    std::vector<std::unique_ptr<quorum_member>> m_members;
    std::chrono::milliseconds m_wait_for_member;
};

} // namespace sqlock::detail
