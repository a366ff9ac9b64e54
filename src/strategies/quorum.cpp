// The quorum protocol's rounds (quorum.hpp): reads, guarded writes, renewals and give-backs,
// each sent to every member at once and decided by a majority.
#include "strategies/quorum.hpp"

#include "base/owner.hpp"
#include "base/rows.hpp"

#include <algorithm>

namespace sqlock::detail {

// ---------------------------------------------------------------- quorum_member

quorum_member::quorum_member(std::shared_ptr<lock_context> db, std::string url_for_messages,
                             std::chrono::milliseconds drain_limit)
    : m_queue(std::make_shared<queue>(std::move(db))), m_url(std::move(url_for_messages)),
      m_drain_limit(drain_limit), m_thread([q = m_queue] { work(q); }) {}

quorum_member::~quorum_member() {
    std::unique_lock lock(m_queue->mutex);
    m_queue->stopping = true;
    m_queue->cv.notify_all();
    const bool drained =
        m_queue->cv.wait_for(lock, m_drain_limit, [this] { return m_queue->finished; });
    lock.unlock();
    if (drained)
        m_thread.join();
    else
        m_thread.detach(); // a member that does not answer: it ends with its io_timeout
}

void quorum_member::post(std::function<void(lock_context&)> job) {
    {
        std::lock_guard lock(m_queue->mutex);
        m_queue->jobs.push_back(std::move(job));
    }
    m_queue->cv.notify_all();
}

void quorum_member::work(const std::shared_ptr<queue>& q) {
    for (;;) {
        std::function<void(lock_context&)> job;
        {
            std::unique_lock lock(q->mutex);
            q->cv.wait(lock, [&] { return q->stopping || !q->jobs.empty(); });
            if (q->jobs.empty()) {
                q->finished = true; // stopping, and every give-back was sent
                q->cv.notify_all();
                return;
            }
            job = std::move(q->jobs.front());
            q->jobs.pop_front();
        }
        job(*q->db); // jobs catch their own errors
    }
}

// ---------------------------------------------------------------- rounds

namespace {

/// The replies of one round, shared with the member threads (which may answer after the
/// round was decided: a late answer then changes nothing here).
template <class T>
struct round_state {
    explicit round_state(std::size_t n) : replies(n) {}
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<member_reply<T>> replies;
};

/// The message of an exception thrown by a member request.
std::string message_of(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    } catch (...) {
        return "unknown error";
    }
}

} // namespace

quorum_protocol::quorum_protocol(std::vector<std::unique_ptr<quorum_member>> members,
                                 std::chrono::milliseconds wait_for_member)
    : m_members(std::move(members)), m_wait_for_member(wait_for_member) {}

template <class T>
std::vector<member_reply<T>>
quorum_protocol::ask_all(std::function<T(lock_context&, std::size_t)> ask,
                         std::chrono::steady_clock::time_point deadline) {
    const auto n = m_members.size();
    auto state = std::make_shared<round_state<T>>(n);
    for (std::size_t i = 0; i < n; ++i) {
        m_members[i]->post([state, ask, i](lock_context& db) {
            member_reply<T> reply;
            try {
                reply.value = ask(db, i);
            } catch (...) {
                reply.error = message_of(std::current_exception());
            }
            {
                std::lock_guard lock(state->mutex);
                state->replies[i] = std::move(reply);
            }
            state->cv.notify_all();
        });
    }
    const auto enough = [&] {
        std::size_t answered = 0;
        bool waiting_for_healthy = false;
        for (std::size_t i = 0; i < n; ++i) {
            if (state->replies[i].answered())
                ++answered;
            else if (!m_members[i]->suspect())
                waiting_for_healthy = true;
        }
        return answered == n || (answered >= majority() && !waiting_for_healthy);
    };
    std::unique_lock lock(state->mutex);
    state->cv.wait_until(lock, deadline, enough);
    for (std::size_t i = 0; i < n; ++i)
        m_members[i]->set_suspect(!state->replies[i].value);
    return state->replies;
}

std::optional<std::vector<member_reply<member_row>>>
quorum_protocol::read_rows(const lock_request& req, std::chrono::steady_clock::time_point deadline,
                           std::string& why) {
    const std::string name(req.name);
    auto rows = ask_all<member_row>(
        [name](lock_context& db, std::size_t) {
            member_row out;
            if (const auto r = decode_first<quorum_row>(db.run(statement::q_read, {name})))
                out = {true, r->token, r->owner, r->version, std::chrono::milliseconds(r->ttl_ms)};
            return out;
        },
        deadline);
    std::size_t answered = 0;
    std::string errors;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].value)
            ++answered;
        else
            errors +=
                "; " + m_members[i]->url() + ": " + rows[i].error.value_or("no answer in time");
    }
    if (answered >= majority())
        return rows;
    why = std::to_string(answered) + " of " + std::to_string(size()) +
          " members answered (a majority is " + std::to_string(majority()) + ")" + errors;
    return std::nullopt;
}

namespace {

/// Runs `id` (q_acquire or q_renew) and tells whether it changed our row: its returned token,
/// or, where the backend returns nothing (MariaDB: no UPDATE ... RETURNING), its affected rows:
/// both statements move the row's version, so the row changed exactly when their guard held
/// (whether the server counts changed or matched rows), and no read-back round trip is needed.
bool wrote(lock_context& db, statement id, std::initializer_list<param> params,
           std::int64_t token) {
    const auto r = db.run(id, params);
    if (db.catalog().needs_read_back(id))
        return r.affected_rows > 0;
    const auto row = decode_first<token_row>(r);
    return row && row->token == token;
}

} // namespace

quorum_protocol::write_outcome
quorum_protocol::write_token(const lock_request& req, std::int64_t token,
                             const std::vector<member_reply<member_row>>& rows,
                             const std::vector<std::optional<lease_sighting>>& sightings,
                             std::chrono::steady_clock::time_point deadline) {
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::optional<std::int64_t>> takeover(
        size());                            // a holder's version seen for its TTL
    std::vector<bool> create(size(), true); // no row seen: create one first
    for (std::size_t i = 0; i < size(); ++i) {
        if (const auto& seen_row = rows[i].value) {
            create[i] = !seen_row->exists;
            if (sightings[i] && now >= stale_after(*sightings[i]))
                takeover[i] = seen_row->version;
        }
    }
    const std::string name(req.name), owner(req.owner);
    const auto ttl = static_cast<std::int64_t>(req.ttl.count());
    const auto& me = this_process();
    const auto replies = ask_all<bool>(
        [=](lock_context& db, std::size_t i) {
            if (create[i])
                db.run(statement::q_create, {name});
            const param seen = takeover[i] ? param(*takeover[i]) : param(nullptr);
            return wrote(db, statement::q_acquire, {name, token, owner, ttl, me.host, me.pid, seen},
                         token);
        },
        deadline);
    write_outcome out;
    for (const auto& r : replies) {
        out.accepted += r.value && *r.value;
        out.refused += r.value && !*r.value;
    }
    return out;
}

void quorum_protocol::give_back_everywhere(const lock_request& req, std::int64_t token) {
    const std::string name(req.name), owner(req.owner);
    for (auto& m : m_members) {
        m->post([=](lock_context& db) {
            try {
                // Asynchronously committed where the backend can: a release lost in a crash
                // only leaves the row to its lease; the token, the mark that matters, stays.
                db.run_async_release(statement::q_release, {name, owner, token});
            } catch (...) {
                // unreachable: that member's row ends with its lease (seen unchanged for a TTL)
            }
        });
    }
}

std::optional<grant>
quorum_protocol::try_acquire_quorum(const lock_request& req,
                                    std::vector<std::optional<lease_sighting>>& sightings,
                                    std::string& why) {
    const auto rows = read_rows(req, std::chrono::steady_clock::now() + m_wait_for_member, why);
    if (!rows)
        return std::nullopt;
    const auto now = std::chrono::steady_clock::now();
    std::int64_t highest = 0;
    std::size_t open = 0; // members whose row is free, ours, or seen unchanged for its TTL
    for (std::size_t i = 0; i < size(); ++i) {
        const auto& found = (*rows)[i].value;
        if (!found)
            continue;
        highest = std::max(highest, found->token);
        if (found->owner.empty() || found->owner == req.owner) {
            sightings[i].reset();
            ++open;
            continue;
        }
        observe(sightings[i], found->token, found->version, found->ttl, req.ttl, now);
        if (now >= stale_after(*sightings[i]))
            ++open;
    }
    if (open < majority()) {
        why = "held";
        return std::nullopt;
    }
    const std::int64_t token = highest + 1;
    const auto sent = std::chrono::steady_clock::now();
    const auto [accepted, refused] =
        write_token(req, token, *rows, sightings, sent + m_wait_for_member);
    const auto valid_until = lease_end(sent, req.ttl);
    if (accepted >= majority() && std::chrono::steady_clock::now() < valid_until) {
        grant g;
        g.token = token;
        g.hold_count = 1;
        g.valid_until = valid_until;
        return g;
    }
    give_back_everywhere(req, token);
    // A member that refused: another contender got there first (not granted, as when held);
    // none refused: too few members answered in time (unavailable).
    why = refused > 0 ? "held"
                      : std::to_string(accepted) + " of " + std::to_string(size()) +
                            " members accepted token " + std::to_string(token) +
                            " in time (a majority is " + std::to_string(majority()) + ")";
    return std::nullopt;
}

std::optional<grant> quorum_protocol::try_acquire(lock_context&, const lock_request& req,
                                                  std::chrono::milliseconds, attempt_state&) {
    std::vector<std::optional<lease_sighting>> sightings(size());
    std::string why;
    return try_acquire_quorum(req, sightings, why);
}

grant quorum_protocol::reenter(lock_context&, const lock_request& req, const grant&) {
    throw error(errc::invalid_argument,
                "quorum lock \"" + std::string(req.name) + "\" is not re-entrant");
}

grant quorum_protocol::renew(lock_context&, const lock_request& req, const grant& held) {
    const std::string name(req.name), owner(req.owner);
    const auto ttl = static_cast<std::int64_t>(req.ttl.count());
    const auto token = held.token;
    const auto sent = std::chrono::steady_clock::now();
    const auto replies = ask_all<bool>(
        [=](lock_context& db, std::size_t) {
            return wrote(db, statement::q_renew, {name, owner, token, ttl}, token);
        },
        std::min(held.valid_until, sent + m_wait_for_member));
    std::size_t renewed = 0, gone = 0;
    for (const auto& r : replies) {
        renewed += r.value && *r.value;
        gone += r.value && !*r.value;
    }
    if (renewed >= majority()) {
        grant g = held;
        g.valid_until = lease_end(sent, req.ttl);
        return g;
    }
    if (gone >= size() - majority() + 1)
        throw error(errc::lock_lost, "quorum lock \"" + name + "\" (token " +
                                         std::to_string(token) + "): " + std::to_string(gone) +
                                         " of " + std::to_string(size()) +
                                         " members say it is no longer ours");
    throw error(errc::connection, "quorum lock \"" + name + "\": renewed on " +
                                      std::to_string(renewed) + " of " + std::to_string(size()) +
                                      " members (a majority is " + std::to_string(majority()) +
                                      ")");
}

void quorum_protocol::release(lock_context&, const lock_request& req, const grant& held) {
    // Waits for the members that answer (as long as a round waits), so that the lock is free
    // when unlock() returns; a member that does not answer gets it when it answers again.
    const std::string name(req.name), owner(req.owner);
    const auto token = held.token;
    const auto replies = ask_all<bool>(
        [=](lock_context& db, std::size_t) {
            // Asynchronously committed where the backend can: a release lost in a crash only
            // leaves the row to its lease; the token, the mark that matters, stays.
            return db.run_async_release(statement::q_release, {name, owner, token}).affected_rows >
                   0;
        },
        std::chrono::steady_clock::now() + m_wait_for_member);
    for (std::size_t i = 0; i < size(); ++i)
        if (!replies[i].value) // runs after the request still in flight there
            m_members[i]->post([=](lock_context& db) {
                try {
                    db.run_async_release(statement::q_release, {name, owner, token});
                } catch (...) {
                    // unreachable: the row ends with its lease (seen unchanged for a TTL)
                }
            });
    // Rows no longer ours on so many members that no majority can have been: taken over (a
    // lease that ran out) or force-released while we held it. Given back all the same.
    std::size_t gone = 0;
    for (const auto& r : replies)
        gone += r.value && !*r.value;
    if (gone >= size() - majority() + 1)
        throw error(errc::lock_lost, "quorum lock \"" + name + "\" (token " +
                                         std::to_string(token) + "): " + std::to_string(gone) +
                                         " of " + std::to_string(size()) +
                                         " members said it was no longer ours when it was given "
                                         "back (taken over or force-released)");
}

} // namespace sqlock::detail
