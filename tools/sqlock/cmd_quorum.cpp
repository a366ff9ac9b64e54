// sqlock status and release --force with several --url: the members of a quorum lock
// (sqlock::quorum_mutex), read and released together.
#include "cli.hpp"
#include "command.hpp"

#include <charconv>
#include <fnmatch.h>
#include <iostream>
#include <sqlock/quorum_mutex.hpp>
#include <string>
#include <vector>

namespace sqlock::cli {

namespace {

const char* verdict_text(sqlock::quorum_verdict v) {
    switch (v) {
    case sqlock::quorum_verdict::held:
        return "held";
    case sqlock::quorum_verdict::free:
        return "free";
    case sqlock::quorum_verdict::undecided:
        break;
    }
    return "undecided";
}

/// One member's line of a lock: what it says, as an operator reads it.
std::string member_text(const sqlock::quorum_member_view& m) {
    if (!m.answered)
        return "not answering (" + readable_message(m.error) + ")";
    if (!m.known)
        return "has never granted it";
    const std::string mark = "token " + std::to_string(m.token);
    if (m.owner.empty())
        return "free, " + mark;
    std::string out =
        "held by " + m.host + ":" + std::to_string(m.pid) + " (owner " + m.owner + "), " + mark;
    if (m.expires_in)
        out += m.expires_in->count() > 0
                   ? ", lease ends in " + human_ms(m.expires_in->count())
                   : ", lease ended " + human_ms(-m.expires_in->count()) + " ago, not renewed";
    return out;
}

ojson member_json(const sqlock::quorum_member_view& m) {
    const auto text_or_null = [](const std::string& v) {
        return v.empty() ? ojson(nullptr) : ojson(v);
    };
    return {{"url", m.url},
            {"answered", m.answered},
            {"error", text_or_null(m.error)},
            {"token", m.answered && m.known ? ojson(m.token) : ojson(nullptr)},
            {"owner", text_or_null(m.owner)},
            {"host", text_or_null(m.host)},
            {"pid", m.owner.empty() ? ojson(nullptr) : ojson(m.pid)},
            {"acquired_at", m.owner.empty() ? ojson(nullptr) : text_or_null(m.acquired_at)},
            {"expires_in_ms", m.expires_in ? ojson(m.expires_in->count()) : ojson(nullptr)},
            {"live", m.live()}};
}

ojson lock_json(const sqlock::quorum_lock_view& l) {
    const bool held = l.verdict == sqlock::quorum_verdict::held;
    auto members = ojson::array();
    for (const auto& m : l.members)
        members.push_back(member_json(m));
    return {{"name", readable_lock_name(l.name)},
            {"primitive", "quorum_mutex"},
            {"state", verdict_text(l.verdict)},
            {"owner", held ? ojson(l.owner) : ojson(nullptr)},
            {"host", held ? ojson(l.host) : ojson(nullptr)},
            {"pid", held ? ojson(l.pid) : ojson(nullptr)},
            {"held_on", held ? ojson(l.held_on) : ojson(nullptr)},
            {"token", l.token > 0 ? ojson(l.token) : ojson(nullptr)},
            {"members", members}};
}

void print_lock(const sqlock::quorum_lock_view& l) {
    std::string state = verdict_text(l.verdict);
    if (l.verdict == sqlock::quorum_verdict::held)
        state += " by " + l.host + ":" + std::to_string(l.pid) + " on " +
                 std::to_string(l.held_on) + " of " + std::to_string(l.members.size()) +
                 " members (owner " + l.owner + ")";
    std::cout << readable_lock_name(l.name) << ": " << state << "; highest token " << l.token
              << "\n";
    for (const auto& m : l.members)
        std::cout << "  " << m.url << ": " << member_text(m) << "\n";
}

/// status's options with several --url: --name GLOB and --json only.
struct quorum_status_args {
    bool json = false;
    std::string glob;
};

quorum_status_args parse_quorum_status_args(const options& o) {
    quorum_status_args s;
    for (std::size_t i = 0; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        if (a == "--json")
            s.json = true;
        else if (a == "--name" && i + 1 < o.args.size())
            s.glob = o.args[++i];
        else
            throw usage_error(o.command + " of a quorum (several --url): unknown option " + a +
                              " (it takes --name GLOB and --json)");
    }
    return s;
}

} // namespace

int cmd_status_quorum(const options& o) {
    const auto s = parse_quorum_status_args(o);
    auto locks = sqlock::quorum_status(o.urls, {}, o.connect);
    std::erase_if(locks, [&](const sqlock::quorum_lock_view& l) {
        return !s.glob.empty() && fnmatch(s.glob.c_str(), l.name.c_str(), 0) != 0;
    });
    if (s.json) {
        auto rows = ojson::array();
        for (const auto& l : locks)
            rows.push_back(lock_json(l));
        std::cout << json_rows(rows);
        return exit_ok;
    }
    std::size_t held = 0, free = 0, undecided = 0;
    for (const auto& l : locks) {
        held += l.verdict == sqlock::quorum_verdict::held ? 1U : 0U;
        free += l.verdict == sqlock::quorum_verdict::free ? 1U : 0U;
        undecided += l.verdict == sqlock::quorum_verdict::undecided ? 1U : 0U;
    }
    std::cout << held << " held, " << free << " free, " << undecided
              << " undecided, on a quorum of " << o.urls.size()
              << " members (a lock is held when one owner's lease is live on "
              << o.urls.size() / 2 + 1 << ")\n";
    if (undecided > 0)
        std::cout << "undecided: fewer than a majority of members answered, or their answers "
                     "differ (a grant or release in flight, or a member that missed one)\n";
    for (const auto& l : locks)
        print_lock(l);
    return exit_ok;
}

int cmd_release_quorum(const options& o, const std::string& name, const std::string& actor,
                       bool json) {
    const auto r = sqlock::quorum_force_release(o.urls, name, actor, o.connect);
    const std::size_t majority = r.members / 2 + 1;
    if (json) {
        std::cout << json_line(
                         {{"name", name},
                          {"released", r.released()},
                          {"released_on", r.released_on},
                          {"answered", r.answered},
                          {"members", r.members},
                          {"previous_owner",
                           r.previous_owner.empty() ? ojson(nullptr) : ojson(r.previous_owner)},
                          {"previous_token", r.previous_token},
                          {"actor", actor}})
                  << "\n";
    } else if (r.released()) {
        std::cout << "released \"" << readable_lock_name(name) << "\" on " << r.released_on
                  << " of " << r.members << " members (was " << r.previous_owner << ", token "
                  << r.previous_token << "); its holder learns it at its next renewal, and the "
                  << "next grant's token is higher; recorded as " << actor << "\n";
    } else if (r.answered >= majority) {
        std::cout << "nothing to release: quorum lock \"" << readable_lock_name(name)
                  << "\" is not held on any of the " << r.answered << " members that answered\n";
    }
    if (r.answered >= majority && r.answered < r.members)
        std::cerr << "sqlock: warning: " << r.members - r.answered << " of " << r.members
                  << " quorum members did not answer: their rows of \"" << readable_lock_name(name)
                  << "\" stay until their leases end\n";
    if (r.answered < majority) {
        std::cerr << "sqlock: only " << r.answered << " of " << r.members
                  << " quorum members answered: lock \"" << readable_lock_name(name)
                  << "\" may still be held on the others (run this again when they answer)\n";
        return exit_unavailable;
    }
    return r.released() ? exit_ok : exit_not_found;
}

namespace {

/// reseed's MEMBER: a URL exactly as given with --url, or a position 1..N. Its index.
std::size_t member_index(const options& o, const std::string& member) {
    for (std::size_t i = 0; i < o.urls.size(); ++i)
        if (o.urls[i] == member)
            return i;
    std::size_t k = 0;
    const auto [end, ec] = std::from_chars(member.data(), member.data() + member.size(), k);
    if (ec == std::errc{} && end == member.data() + member.size() && k >= 1 && k <= o.urls.size())
        return k - 1;
    throw usage_error("reseed: \"" + sqlock::url_without_password(member) +
                      "\" is neither one of the --url given nor a position 1.." +
                      std::to_string(o.urls.size()));
}

} // namespace

int cmd_reseed(const options& o) {
    if (o.urls.size() < 3)
        throw usage_error("reseed is for a quorum lock's members: give all of them, three or "
                          "more --url");
    if (o.args.empty())
        throw usage_error("reseed: missing MEMBER (the restored member's URL or position)");
    bool json = false;
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        if (o.args[i] != "--json")
            throw usage_error("reseed: unknown option " + o.args[i]);
        json = true;
    }
    const auto index = member_index(o, o.args[0]);
    const auto r = sqlock::quorum_reseed(o.urls, index, o.connect);
    const auto url = sqlock::url_without_password(o.urls[index]);
    if (json)
        std::cout << json_line({{"member", url},
                                {"names", r.names},
                                {"raised", r.raised},
                                {"answered", r.answered}})
                  << "\n";
    else
        std::cout << "re-seeded " << url << " from " << r.answered << " other members: " << r.raised
                  << " of " << r.names << " quorum lock names raised to their "
                  << "highest token\n";
    return exit_ok;
}

} // namespace sqlock::cli
