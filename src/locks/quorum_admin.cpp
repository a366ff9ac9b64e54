// The quorum admin calls: quorum_status (what every member says of each quorum lock),
// quorum_force_release (break-glass release on every member) and quorum_reseed (a restored
// member's marks raised from the others), for sqlock status, release and reseed with several
// --url.
#include "base/busy_retry.hpp"
#include "base/rows.hpp"
#include "database/database_impl.hpp"
#include "locks/lock_name.hpp"
#include "locks/quorum_members.hpp"
#include "sqlock/quorum_mutex.hpp"

#include <future>
#include <map>

namespace sqlock {

namespace {

/// One member's rows (q_list), or why it did not answer.
struct member_reading {
    std::vector<detail::quorum_listing_row> rows;
    std::optional<std::string> error;
};

/// Reads every member's rows for `name` (every name when empty), one thread per member so
/// that a silent member costs its timeouts once, not once per member.
std::vector<member_reading> read_members(std::vector<database>& members, std::string_view name) {
    std::vector<std::future<member_reading>> pending;
    for (auto& m : members)
        pending.push_back(std::async(std::launch::async, [&m, name] {
            member_reading out;
            try {
                const detail::param filter =
                    name.empty() ? detail::param(nullptr) : detail::param(name);
                out.rows = detail::decode_rows<detail::quorum_listing_row>(
                    detail::impl_of(m).run(detail::statement::q_list, {filter}));
            } catch (const std::exception& e) {
                out.error = e.what();
            }
            return out;
        }));
    std::vector<member_reading> out;
    for (auto& p : pending)
        out.push_back(p.get());
    return out;
}

quorum_member_view view_of(const database& member, const detail::quorum_listing_row* row) {
    quorum_member_view v;
    v.url = member.url();
    v.answered = true;
    if (!row)
        return v;
    v.known = true;
    v.token = row->token;
    v.owner = row->owner;
    v.host = row->host;
    v.pid = row->pid;
    v.ttl = std::chrono::milliseconds(row->ttl_ms);
    v.acquired_at = row->acquired_at;
    if (!row->owner.empty() && row->expires_in_ms)
        v.expires_in = std::chrono::milliseconds(*row->expires_in_ms);
    return v;
}

/// The verdict over `lock.members`: one owner live on a majority is held; a majority of
/// answers without a live lease is free; anything else is undecided.
void judge(quorum_lock_view& lock) {
    const std::size_t majority = lock.members.size() / 2 + 1;
    std::map<std::string, std::size_t> live_on;
    std::size_t not_held = 0;
    for (const auto& m : lock.members) {
        if (!m.answered)
            continue;
        lock.token = std::max(lock.token, m.token);
        if (m.live())
            ++live_on[m.owner];
        else
            ++not_held;
    }
    for (const auto& [owner, count] : live_on) {
        if (count < majority)
            continue;
        lock.verdict = quorum_verdict::held;
        lock.owner = owner;
        lock.held_on = count;
        for (const auto& m : lock.members)
            if (m.answered && m.owner == owner) {
                lock.host = m.host;
                lock.pid = m.pid;
                break;
            }
        return;
    }
    lock.verdict = not_held >= majority ? quorum_verdict::free : quorum_verdict::undecided;
}

void check_arguments(const std::vector<database>& members, std::string_view name,
                     bool name_required) {
    detail::validate_quorum_members(members);
    if (name_required || !name.empty())
        detail::validate_lock_name(name);
}

} // namespace

std::vector<quorum_lock_view> quorum_status(std::vector<database>& members, std::string_view name) {
    check_arguments(members, name, false);
    const auto readings = read_members(members, name);
    std::map<std::string, quorum_lock_view> locks;
    bool any_answered = false;
    for (const auto& r : readings)
        if (!r.error) {
            any_answered = true;
            for (const auto& row : r.rows)
                locks[row.name].name = row.name;
        }
    if (!any_answered)
        throw error(errc::connection, "no quorum member answered (first: " + members.front().url() +
                                          ": " + *readings.front().error + ")");
    std::vector<quorum_lock_view> out;
    for (auto& [lock_name, lock] : locks) {
        for (std::size_t i = 0; i < members.size(); ++i) {
            if (readings[i].error) {
                quorum_member_view v;
                v.url = members[i].url();
                v.error = *readings[i].error;
                lock.members.push_back(std::move(v));
                continue;
            }
            const detail::quorum_listing_row* row = nullptr;
            for (const auto& r : readings[i].rows)
                if (r.name == lock_name)
                    row = &r;
            lock.members.push_back(view_of(members[i], row));
        }
        judge(lock);
        out.push_back(std::move(lock));
    }
    return out;
}

namespace {

/// Frees `row` of `name` on member `db`, only as it was read (its owner and token: a new grant
/// meanwhile is not broken unseen). A member busy with the holder's own renewal (SQLite's one
/// writer, a row lock wait) is asked twice more before it counts as not answering. Whether
/// the row was freed.
bool release_row_as_read(detail::database_impl& db, std::string_view name,
                         const detail::quorum_listing_row& row) {
    return detail::retry_if_busy(
        [&] {
            return db.run(detail::statement::q_release,
                          {name, std::string_view(row.owner), row.token})
                       .affected_rows > 0;
        },
        std::chrono::milliseconds(50), [] { return true; });
}

} // namespace

quorum_force_release_result quorum_force_release(std::vector<database>& members,
                                                 std::string_view name, std::string_view actor) {
    check_arguments(members, name, true);
    quorum_force_release_result out;
    out.members = members.size();
    const auto readings = read_members(members, name);
    for (std::size_t i = 0; i < members.size(); ++i) {
        if (readings[i].error || readings[i].rows.empty()) {
            if (!readings[i].error)
                ++out.answered;
            continue;
        }
        const auto& row = readings[i].rows.front();
        bool answered = true;
        if (!row.owner.empty()) {
            try {
                auto& db = detail::impl_of(members[i]);
                if (release_row_as_read(db, name, row)) {
                    ++out.released_on;
                    if (row.token >= out.previous_token) {
                        out.previous_token = row.token;
                        out.previous_owner = row.owner;
                    }
                    db.run(detail::statement::audit_record,
                           {std::string_view("quorum_force_release"), name, actor,
                            std::string_view(row.owner), row.token, row.token});
                }
            } catch (const std::exception&) {
                answered = false; // the row stays; the count says so
            }
        }
        if (answered)
            ++out.answered;
    }
    return out;
}

quorum_reseed_result quorum_reseed(std::vector<database>& members, std::size_t restored) {
    detail::validate_quorum_members(members);
    if (restored >= members.size())
        throw error(errc::invalid_argument, "quorum_reseed: member index " +
                                                std::to_string(restored) + " is out of range (" +
                                                std::to_string(members.size()) + " members)");
    std::vector<database> others;
    for (std::size_t i = 0; i < members.size(); ++i)
        if (i != restored)
            others.push_back(members[i]);
    const auto readings = read_members(others, {});
    quorum_reseed_result out;
    std::map<std::string, std::int64_t> highest; // name -> the highest mark among the others
    for (const auto& r : readings) {
        if (r.error)
            continue;
        ++out.answered;
        for (const auto& row : r.rows)
            highest[row.name] = std::max(highest[row.name], row.token);
    }
    // Any majority that granted has at least majority - 1 members among the others; reading
    // all but that many - 1 of them sees one.
    const std::size_t needed = members.size() - (members.size() / 2 + 1) + 1;
    if (out.answered < needed) {
        std::string why;
        for (std::size_t i = 0; i < readings.size(); ++i)
            if (readings[i].error)
                why += "; " + others[i].url() + ": " + *readings[i].error;
        throw error(errc::connection, "cannot re-seed quorum member " + members[restored].url() +
                                          ": " + std::to_string(out.answered) + " of the " +
                                          std::to_string(others.size()) +
                                          " other members answered, and " + std::to_string(needed) +
                                          " must (so that every grant's token is seen)" + why);
    }
    out.names = highest.size();
    auto& db = detail::impl_of(members[restored]);
    for (const auto& [lock_name, token] : highest) {
        db.run(detail::statement::q_create, {std::string_view(lock_name)});
        out.raised +=
            db.run(detail::statement::q_raise, {std::string_view(lock_name), token}).affected_rows >
            0;
    }
    return out;
}

quorum_reseed_result quorum_reseed(const std::vector<std::string>& member_urls,
                                   std::size_t restored, const connect_options& connect) {
    auto members = detail::unconnected_members(member_urls, connect);
    return quorum_reseed(members, restored);
}

std::vector<quorum_lock_view> quorum_status(const std::vector<std::string>& member_urls,
                                            std::string_view name, const connect_options& connect) {
    auto members = detail::unconnected_members(member_urls, connect);
    return quorum_status(members, name);
}

quorum_force_release_result quorum_force_release(const std::vector<std::string>& member_urls,
                                                 std::string_view name, std::string_view actor,
                                                 const connect_options& connect) {
    auto members = detail::unconnected_members(member_urls, connect);
    return quorum_force_release(members, name, actor);
}

} // namespace sqlock
