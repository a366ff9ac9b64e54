// checker.cpp: the torture checks (contract in checker.hpp, rules in README.md).
#include "checker.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

namespace torture {

namespace {

constexpr std::int64_t no_time = std::numeric_limits<std::int64_t>::min();

/// Everything the history says about one grant.
struct grant_info {
    std::int64_t pid = 0;
    std::int64_t token = 0;
    std::int64_t t_acquire = no_time; ///< clock read before the lock() call that got it
    std::int64_t t_grant = 0;
    std::int64_t last_own = no_time; ///< latest owns_lock() == true observation
    bool told = false;
    bool stopreq = false;     ///< leader mode: stop_token() seen requested after `told`
    std::int64_t permit = -1; ///< semaphore mode: the permit it holds
    bool writer = true;       ///< rw mode: taken exclusively (false: shared, a reader)
    bool lost_cb = false;
    bool released = false;
    std::string last_loss = "none";
    bool fence_refused = false;
    std::int64_t t_fence = no_time;   ///< when its fenced write was done (before unlock())
    std::int64_t t_release = no_time; ///< when unlock() returned
    bool wrote_counter = false;       ///< a cw event: it was about to write the counter
    std::optional<std::int64_t> incr;

    bool lost() const { return told || lost_cb || last_loss != "none"; }
    /// Certainly held from its grant record to its last owns_lock() == true observation: the
    /// grant happened before it was recorded, the observation vouches for its instant, and a
    /// grant once invalid never becomes valid again.
    bool has_hold() const { return last_own != no_time && last_own > t_grant; }
};

std::string ms(std::int64_t ns) {
    std::ostringstream out;
    out.precision(1);
    out << std::fixed << static_cast<double>(ns) / 1e6 << " ms";
    return out.str();
}

std::string who(const grant_info& g) {
    return "pid " + std::to_string(g.pid) + " token " + std::to_string(g.token);
}

/// Grants sorted by grant time with a running maximum of their tokens, to answer "the
/// largest token granted (recorded) before time t" in O(log n).
class grant_timeline {
public:
    explicit grant_timeline(const std::vector<grant_info>& grants) : m_grants(grants) {
        for (std::size_t i = 0; i < grants.size(); ++i)
            m_order.push_back(i);
        std::sort(m_order.begin(), m_order.end(),
                  [&](auto a, auto b) { return grants[a].t_grant < grants[b].t_grant; });
        std::size_t best = 0;
        for (std::size_t i = 0; i < m_order.size(); ++i) {
            if (i == 0 || grants[m_order[i]].token > grants[best].token)
                best = m_order[i];
            m_prefix_max.push_back(best);
        }
    }
    /// Index of the grant with the largest token among those recorded strictly before t.
    std::optional<std::size_t> max_before(std::int64_t t) const {
        const auto it = std::lower_bound(
            m_order.begin(), m_order.end(), t,
            [&](std::size_t i, std::int64_t value) { return m_grants[i].t_grant < value; });
        if (it == m_order.begin())
            return std::nullopt;
        return m_prefix_max[static_cast<std::size_t>(it - m_order.begin()) - 1];
    }
    /// True when some grant was recorded in (from, to].
    bool any_in(std::int64_t from, std::int64_t to) const {
        const auto it = std::upper_bound(
            m_order.begin(), m_order.end(), from,
            [&](std::int64_t value, std::size_t i) { return value < m_grants[i].t_grant; });
        return it != m_order.end() && m_grants[*it].t_grant <= to;
    }

private:
    const std::vector<grant_info>& m_grants;
    std::vector<std::size_t> m_order;
    std::vector<std::size_t> m_prefix_max;
};

/// Builds one grant_info per grant event; counts timeouts and errors into `result`.
std::vector<grant_info> collect_grants(const check_input& input, check_result& result) {
    std::vector<grant_info> grants;
    std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> by_pid_token;
    for (const auto& file : input.workers) {
        std::map<std::int64_t, std::int64_t> last_acquire; // pid -> time
        for (const auto& e : file) {
            if (e.kind == kind::acquire) {
                last_acquire[e.pid] = e.t_ns;
                continue;
            }
            if (e.kind == kind::timeout) {
                ++result.timeouts;
                continue;
            }
            if (e.kind == kind::error)
                ++result.errors;
            if (e.kind == kind::grant) {
                grant_info g;
                g.pid = e.pid;
                g.token = e.token;
                g.t_grant = e.t_ns;
                if (const auto it = last_acquire.find(e.pid); it != last_acquire.end())
                    g.t_acquire = it->second;
                if (e.args.size() > 2) { // the permit (semaphore) or the role (rw)
                    const auto& a = e.args[2];
                    if (a == "reader" || a == "writer")
                        g.writer = a == "writer";
                    else
                        std::from_chars(a.data(), a.data() + a.size(), g.permit);
                }
                last_acquire.erase(e.pid);
                by_pid_token[{e.pid, e.token}] = grants.size();
                grants.push_back(std::move(g));
                continue;
            }
        }
    }
    // Second pass: on_lost runs on another thread and may be recorded before the grant line.
    for (const auto& file : input.workers) {
        for (const auto& e : file) {
            if (e.token == 0 || e.kind == kind::grant || e.kind == kind::acquire ||
                e.kind == kind::timeout)
                continue;
            const auto it = by_pid_token.find({e.pid, e.token});
            if (it == by_pid_token.end()) {
                if (e.kind != kind::error)
                    ++result.errors; // an event of a grant never recorded: malformed history
                continue;
            }
            auto& g = grants[it->second];
            switch (e.kind) {
            case kind::own:
                g.last_own = std::max(g.last_own, e.t_ns);
                break;
            case kind::told:
                g.told = true;
                break;
            case kind::lost_cb:
                g.lost_cb = true;
                break;
            case kind::stopreq:
                g.stopreq = true;
                break;
            case kind::fence:
                g.fence_refused = !e.args.empty() && e.args[0] == "refused";
                g.t_fence = e.t_ns;
                break;
            case kind::cw:
                g.wrote_counter = true;
                break;
            case kind::incr:
                if (!e.args.empty()) {
                    std::int64_t v = 0;
                    const auto& a = e.args[0];
                    if (std::from_chars(a.data(), a.data() + a.size(), v).ec == std::errc{})
                        g.incr = v;
                }
                break;
            case kind::release:
                g.released = true;
                g.t_release = e.t_ns;
                if (!e.args.empty())
                    g.last_loss = e.args[0];
                break;
            default:
                break;
            }
        }
    }
    return grants;
}

void add(check_result& r, std::string rule, std::string message) {
    r.violations.push_back({std::move(rule), std::move(message)});
}

// Rule 1: owns_lock() == true at t by A while B, with a larger token, was already granted.
// rw mode (writers_only): only writers' observations are tested, against grants of both
// roles. A reader B with a larger token than writer A was granted its permit after A was
// (A's token is at least A's lease on B's permit, and a permit's tokens increase with its
// grants), so while A held every permit. The converse (a reader's observation, a writer with a
// larger token) proves nothing: the writer may have come first and left; rw-overlap covers it.
void check_overlap(const std::vector<grant_info>& grants, const grant_timeline& timeline,
                   check_result& r, bool writers_only = false) {
    for (const auto& a : grants) {
        if (a.last_own == no_time || (writers_only && !a.writer))
            continue;
        // Enough to test A's latest observation: the set of earlier grants only grows with t.
        const auto b = timeline.max_before(a.last_own);
        if (b && grants[*b].token > a.token)
            add(r, "overlap",
                who(a) + " saw owns_lock() == true " + ms(a.last_own - grants[*b].t_grant) +
                    " after " + who(grants[*b]) + " was granted (silent overlap)");
    }
}

std::string role(const grant_info& g) {
    return g.writer ? "writer " : "reader ";
}

// Semaphore mode: at most `permits` grants certainly held at one instant (has_hold()
// intervals), and the most seen at once.
void check_sem_count(const std::vector<grant_info>& grants, std::int64_t permits, check_result& r) {
    struct edge {
        std::int64_t t;
        int delta; // +1 start, -1 end
        std::size_t index;
    };
    std::vector<edge> edges;
    for (std::size_t i = 0; i < grants.size(); ++i) {
        if (!grants[i].has_hold())
            continue;
        edges.push_back({grants[i].t_grant, +1, i});
        edges.push_back({grants[i].last_own, -1, i});
    }
    // Ends first at equal times: intervals that only touch are not certainly concurrent.
    std::sort(edges.begin(), edges.end(), [](const edge& a, const edge& b) {
        return a.t != b.t ? a.t < b.t : a.delta < b.delta;
    });
    std::set<std::size_t> active;
    for (const auto& e : edges) {
        if (e.delta < 0) {
            active.erase(e.index);
            continue;
        }
        active.insert(e.index);
        const auto n = static_cast<std::int64_t>(active.size());
        r.max_concurrent = std::max(r.max_concurrent, n);
        if (n == permits + 1) { // report each excursion above the limit once
            std::string holders;
            for (auto i : active)
                holders += (holders.empty() ? "" : ", ") + who(grants[i]) + " permit " +
                           std::to_string(grants[i].permit);
            add(r, "sem-count",
                std::to_string(n) + " grants certainly held at once (" + std::to_string(permits) +
                    " permits) when " + who(grants[e.index]) + " was granted: " + holders);
        }
    }
}

// rw mode: no grant certainly held while a writer certainly held (has_hold() intervals
// intersect); readers may share. Also the most readers certainly held at once.
void check_rw_overlap(const std::vector<grant_info>& grants, check_result& r) {
    for (std::size_t i = 0; i < grants.size(); ++i) {
        const auto& w = grants[i];
        if (!w.writer || !w.has_hold())
            continue;
        for (std::size_t j = 0; j < grants.size(); ++j) {
            const auto& g = grants[j];
            if (j == i || !g.has_hold() || (g.writer && j < i))
                continue; // a pair of writers is reported once
            const std::int64_t from = std::max(w.t_grant, g.t_grant);
            const std::int64_t to = std::min(w.last_own, g.last_own);
            if (from < to)
                add(r, "rw-overlap",
                    "writer " + who(w) + " and " + role(g) + who(g) +
                        " were both certainly held for " + ms(to - from) +
                        " (both granted by then, both still saw owns == true)");
        }
    }
    struct edge {
        std::int64_t t;
        int delta;
    };
    std::vector<edge> edges;
    for (const auto& g : grants)
        if (!g.writer && g.has_hold()) {
            edges.push_back({g.t_grant, +1});
            edges.push_back({g.last_own, -1});
        }
    std::sort(edges.begin(), edges.end(), [](const edge& a, const edge& b) {
        return a.t != b.t ? a.t < b.t : a.delta < b.delta;
    });
    std::int64_t n = 0;
    for (const auto& e : edges)
        r.max_concurrent = std::max(r.max_concurrent, n += e.delta);
}

// rw mode: writers' tokens are unique, and each writer's token is above every grant (either
// role) recorded before its lock() call began: a writer's token is the largest of its
// leases, each fresh, from one sequence per database.
void check_rw_tokens(const std::vector<grant_info>& grants, const grant_timeline& timeline,
                     check_result& r) {
    std::map<std::int64_t, const grant_info*> seen;
    for (const auto& g : grants) {
        if (!g.writer)
            continue;
        const auto [it, fresh] = seen.emplace(g.token, &g);
        if (!fresh)
            add(r, "token-dup",
                "writer token " + std::to_string(g.token) + " granted twice (pid " +
                    std::to_string(it->second->pid) + " and pid " + std::to_string(g.pid) + ")");
    }
    for (const auto& b : grants) {
        if (!b.writer || b.t_acquire == no_time)
            continue;
        const auto a = timeline.max_before(b.t_acquire);
        if (a && grants[*a].token >= b.token)
            add(r, "token-order",
                role(grants[*a]) + who(grants[*a]) + " was granted before writer " + who(b) +
                    " started its lock() call, yet the writer's token is not above it");
    }
}

/// The grants of each permit (semaphore mode), by permit.
std::map<std::int64_t, std::vector<grant_info>> by_permit(const std::vector<grant_info>& grants) {
    std::map<std::int64_t, std::vector<grant_info>> out;
    for (const auto& g : grants)
        out[g.permit].push_back(g);
    return out;
}

// Rule 1c (leader mode): an elector told it no longer leads (is_leader() false during the
// term) saw its term's stop_token() requested before it resigned: the stop signal that work
// tied to leadership watches is never missing when leadership ends.
void check_leader_stop(const std::vector<grant_info>& grants, check_result& r) {
    for (const auto& g : grants)
        if (g.told && g.released && !g.stopreq)
            add(r, "leader-stop",
                who(g) + " saw is_leader() == false but its stop_token() was not requested "
                         "before it resigned");
}

// Rule 1b: the read-modify-write counter, when no grant lost its lock and no writer died
// between announcing and recording its write.
void check_counter(const std::vector<grant_info>& grants, const check_input& input,
                   check_result& r) {
    std::int64_t writes = 0;
    for (const auto& g : grants) {
        if (g.lost() || (g.wrote_counter && !g.released))
            return;
        writes += g.wrote_counter ? 1 : 0;
    }
    r.counter_checked = true;
    std::map<std::int64_t, const grant_info*> seen;
    for (const auto& g : grants) {
        if (!g.incr)
            continue;
        const auto [it, fresh] = seen.emplace(*g.incr, &g);
        if (!fresh)
            add(r, "counter",
                who(g) + " and " + who(*it->second) + " both wrote counter value " +
                    std::to_string(*g.incr) + " (lost update, nobody was told)");
    }
    const std::int64_t final_value = input.counter_final.value_or(0);
    if (final_value != writes)
        add(r, "counter",
            "counter ends at " + std::to_string(final_value) + " after " + std::to_string(writes) +
                " increments and no loss");
}

// Rule 2: tokens are unique, and a grant recorded before another's lock() call began has the
// smaller token.
void check_tokens(const std::vector<grant_info>& grants, const grant_timeline& timeline,
                  check_result& r) {
    std::map<std::int64_t, const grant_info*> seen;
    for (const auto& g : grants) {
        const auto [it, fresh] = seen.emplace(g.token, &g);
        if (!fresh)
            add(r, "token-dup",
                "token " + std::to_string(g.token) + " granted twice (pid " +
                    std::to_string(it->second->pid) + " and pid " + std::to_string(g.pid) + ")");
    }
    for (const auto& b : grants) {
        if (b.t_acquire == no_time)
            continue;
        const auto a = timeline.max_before(b.t_acquire);
        if (a && grants[*a].token > b.token)
            add(r, "token-order",
                who(grants[*a]) + " was granted before " + who(b) +
                    " started its lock() call, yet has the larger token");
    }
}

// Rule 3: the fenced resource never accepted a token below (or equal to) one it had accepted.
void check_fence(const std::vector<grant_info>& grants, const check_input& input, check_result& r) {
    std::optional<fence_entry> highest;
    for (const auto& f : input.fence_log) {
        if (highest && f.token <= highest->token)
            add(r, "fence",
                "resource accepted token " + std::to_string(f.token) + " from pid " +
                    std::to_string(f.pid) + " after token " + std::to_string(highest->token) +
                    " from pid " + std::to_string(highest->pid));
        if (!highest || f.token > highest->token)
            highest = f;
    }
    // A refused write means a token at least as large wrote first: a later grant wrote while
    // this one was held (its holder must have been told by the time unlock() returned), or the
    // token was handed out twice (token-dup reports that too).
    for (const auto& g : grants) {
        if (g.fence_refused && g.released && !g.lost())
            add(r, "fence-silent",
                who(g) + ": the resource refused its write (an equal or larger token wrote "
                         "first), yet it was never told it lost the lock");
    }
}

// Rule 4: a holder stopped for longer than the TTL sees owns_lock() == false after SIGCONT.
void check_pauses(const std::vector<grant_info>& grants, const check_input& input,
                  const check_params& p, check_result& r) {
    std::map<std::int64_t, std::int64_t> stopped_at; // pid -> time it was certainly stopped
    for (const auto& e : input.harness) {
        if (e.args.empty())
            continue;
        std::int64_t pid = 0;
        const auto& a = e.args[0];
        if (std::from_chars(a.data(), a.data() + a.size(), pid).ec != std::errc{})
            continue;
        if (e.kind == kind::stopped) {
            stopped_at.emplace(pid, e.t_ns); // keep the first sighting of this stop
        } else if (e.kind == kind::cont) {
            const auto it = stopped_at.find(pid);
            if (it == stopped_at.end())
                continue;
            const std::int64_t t_stop = it->second;
            stopped_at.erase(it);
            // The process stopped at or before t_stop and runs again at or after e.t_ns, so
            // it was stopped at least this long; its lease's local end has passed.
            if (e.t_ns - t_stop <= p.ttl_ns)
                continue;
            ++r.pauses_checked;
            for (const auto& g : grants) {
                if (g.pid == pid && g.t_grant < t_stop && g.last_own != no_time &&
                    g.last_own >= e.t_ns)
                    add(r, "pause",
                        who(g) + " was stopped for more than " + ms(e.t_ns - t_stop) + " (TTL " +
                            ms(p.ttl_ns) + ") and still saw owns_lock() == true " +
                            ms(g.last_own - e.t_ns) + " after SIGCONT");
            }
        }
    }
}

// Rule 5: after every fault (and after the start), grants resume within TTL + the longest
// hold + the bound, checked in every such window that no other fault overlaps.
void check_liveness(const grant_timeline& timeline, const check_input& input, const check_params& p,
                    check_result& r) {
    std::int64_t run_end = no_time;
    std::vector<std::int64_t> window_starts;
    std::vector<std::pair<std::int64_t, std::int64_t>> faults; // [start, end]
    std::map<std::string, std::vector<std::int64_t>> open;     // nemesis+target -> starts
    for (const auto& e : input.harness) {
        const std::string key =
            (e.args.empty() ? "" : e.args[0]) + "/" + (e.args.size() > 1 ? e.args[1] : "");
        if (e.kind == kind::run_start) {
            window_starts.push_back(e.t_ns);
        } else if (e.kind == kind::run_end) {
            run_end = e.t_ns;
        } else if (e.kind == kind::fault) {
            open[key].push_back(e.t_ns);
            ++r.faults[e.args.empty() ? "?" : e.args[0]];
        } else if (e.kind == kind::fault_end) {
            window_starts.push_back(e.t_ns);
            auto& starts = open[key];
            if (!starts.empty()) {
                faults.emplace_back(starts.front(), e.t_ns);
                starts.erase(starts.begin());
            }
        }
    }
    for (const auto& [key, starts] : open) // faults never ended: they last to the end
        for (auto s : starts)
            faults.emplace_back(s, std::numeric_limits<std::int64_t>::max());
    if (run_end == no_time)
        return;
    const std::int64_t allowed = p.ttl_ns + p.max_hold_ns + p.liveness_bound_ns;
    for (const auto from : window_starts) {
        const std::int64_t to = from + allowed;
        if (to > run_end)
            continue;
        const bool quiet = std::none_of(faults.begin(), faults.end(), [&](const auto& f) {
            return f.first <= to && f.second > from;
        });
        if (!quiet)
            continue;
        ++r.liveness_windows_checked;
        if (!timeline.any_in(from, to))
            add(r, "liveness", "no grant within " + ms(allowed) + " after a fault ended");
    }
}

// Rule 6: failovers. Grants resume within the bound after the old primary died (its
// `crashed` note; else the failover's start); grants made before the failover and not released
// before it are counted as held across it. Where the lock is a server session
// (select_for_update), such a grant died with the old primary: its holder may not see
// owns_lock() == true once that primary is certainly down, and when its fenced write was done
// after the failover was over (so unlock() began after it too), it must have heard of the loss.
void check_failovers(const std::vector<grant_info>& grants, const grant_timeline& timeline,
                     const check_input& input, const check_params& p, check_result& r) {
    constexpr auto never = std::numeric_limits<std::int64_t>::max();
    struct failover {
        std::int64_t start = 0, down = never, end = never;
    };
    std::vector<failover> failovers;
    std::int64_t run_end = never;
    for (const auto& e : input.harness) {
        const bool is_failover = !e.args.empty() && e.args[0] == "failover";
        if (e.kind == kind::fault && is_failover)
            failovers.push_back({e.t_ns});
        else if (e.kind == kind::crashed && !failovers.empty())
            failovers.back().down = e.t_ns;
        else if (e.kind == kind::fault_end && is_failover && !failovers.empty())
            failovers.back().end = e.t_ns;
        else if (e.kind == kind::run_end)
            run_end = e.t_ns;
    }
    for (const auto& f : failovers) {
        const std::int64_t from = f.down != never ? f.down : f.start;
        std::optional<std::int64_t> first;
        for (const auto& g : grants)
            if (g.t_grant > from && (!first || g.t_grant < *first))
                first = g.t_grant;
        r.resume_ns.push_back(first ? *first - from : -1);
        if (p.resume_bound_ns > 0 && from + p.resume_bound_ns <= run_end &&
            !timeline.any_in(from, from + p.resume_bound_ns))
            add(r, "resume",
                "no grant within " + ms(p.resume_bound_ns) + " after the old primary died" +
                    (first ? " (the next one came " + ms(*first - from) + " after it)" : ""));
        for (const auto& g : grants) {
            if (g.t_grant >= f.start || (g.released && g.t_release < f.start))
                continue;
            ++r.failover_held;
            r.failover_told += (g.told || g.lost_cb) ? 1 : 0;
            if (!p.lock_dies_with_server)
                continue;
            const std::int64_t dead = std::min(f.down, f.end);
            if (g.last_own != no_time && g.last_own >= dead)
                add(r, "failover-own",
                    who(g) + " saw owns_lock() == true " + ms(g.last_own - dead) +
                        " after the old primary was down; its lock died with it");
            else if (g.t_fence != no_time && g.t_fence >= f.end && g.released && !g.lost())
                add(r, "failover-silent",
                    who(g) + " was released after the failover without hearing that its lock "
                             "died with the old primary");
        }
    }
}

} // namespace

check_result check(const check_input& input, const check_params& params) {
    check_result r;
    const auto grants = collect_grants(input, r);
    r.grants = static_cast<std::int64_t>(grants.size());
    for (const auto& g : grants) {
        r.releases += g.released ? 1 : 0;
        r.losses += g.lost() ? 1 : 0;
        r.fence_refused += g.fence_refused ? 1 : 0;
    }
    if (params.no_fault)
        r.false_losses = r.losses;
    const grant_timeline timeline(grants);
    if (params.permits > 0) {
        // A semaphore: tokens mean something within a permit only; one holder per permit.
        check_sem_count(grants, params.permits, r);
        for (const auto& [permit, mine] : by_permit(grants)) {
            const grant_timeline permit_timeline(mine);
            check_overlap(mine, permit_timeline, r);
            check_tokens(mine, permit_timeline, r);
        }
    } else if (params.rw) {
        for (const auto& g : grants)
            r.writers += g.writer ? 1 : 0;
        check_rw_overlap(grants, r);
        check_overlap(grants, timeline, r, true);
        check_rw_tokens(grants, timeline, r);
        // Only writers write the counter: only their losses make it uncheckable.
        std::vector<grant_info> writers;
        std::copy_if(grants.begin(), grants.end(), std::back_inserter(writers),
                     [](const grant_info& g) { return g.writer; });
        check_counter(writers, input, r);
    } else {
        check_overlap(grants, timeline, r);
        check_tokens(grants, timeline, r);
    }
    if (params.leader)
        check_leader_stop(grants, r);
    if (params.permits == 0 && !params.rw)
        check_counter(grants, input, r);
    check_fence(grants, input, r);
    check_pauses(grants, input, params, r);
    check_liveness(timeline, input, params, r);
    check_failovers(grants, timeline, input, params, r);
    return r;
}

std::optional<fence_entry> parse_fence_line(std::string_view line) {
    fence_entry f;
    std::int64_t* fields[] = {&f.t_ns, &f.pid, &f.token};
    const char* p = line.data();
    const char* end = line.data() + line.size();
    for (auto* field : fields) {
        while (p < end && *p == ' ')
            ++p;
        const auto [next, ec] = std::from_chars(p, end, *field);
        if (ec != std::errc{})
            return std::nullopt;
        p = next;
    }
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r'))
        ++p;
    if (p != end)
        return std::nullopt;
    return f;
}

} // namespace torture
