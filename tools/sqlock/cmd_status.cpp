// sqlock status and sqlock list: the lock rows (and for status, the scheduled jobs) as a table,
// as JSON, or in the Prometheus text format.
#include "cli.hpp"
#include "command.hpp"
#include "lock_roles.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fnmatch.h>
#include <iostream>
#include <map>
#include <sqlock/database.hpp>
#include <sqlock/job.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sqlock::cli {

namespace {

/// A lease whose holder never released it and whose time ran out (what `sqlock reap`
/// deletes): a free row, a select_for_update row or a live lease is none.
bool is_expired_lease(const sqlock::lock_info& l) {
    return l.strategy != "select_for_update" && !l.owner.empty() && l.expired();
}

/// Steps of the database's clock recorded in the last 24 hours, newest first (none when the
/// tables predate schema 5 or cannot be read: status still shows the locks).
std::vector<sqlock::clock_step_record> recent_clock_steps(sqlock::database& db) {
    std::vector<sqlock::clock_step_record> steps;
    try {
        steps = db.clock_steps(1000);
    } catch (const sqlock::error&) {
        return {};
    }
    std::erase_if(steps, [](const auto& s) { return s.age > std::chrono::hours(24); });
    return steps;
}

// --- JSON ---------------------------------------------------------------------------------

/// Which primitive a lock belongs to, from its role: "mutex", "semaphore" or "shared_mutex".
const char* primitive_of(const sqlock::lock_info& l) {
    const auto role = l.role();
    if (role.empty())
        return "mutex";
    return role.starts_with("permit") ? "semaphore" : "shared_mutex";
}

/// One element of status/list --json (fields and order as list_help documents them).
ojson lock_json(const sqlock::lock_info& l, row_count counted) {
    // null where a value is unknown or does not apply (no sentinel values): select_for_update
    // rows have no lease and no token in the row; a free row has no holder.
    const bool transactional = l.strategy == "select_for_update";
    const bool holder = l.held() || (!transactional && !l.owner.empty());
    const auto text_or_null = [](const std::string& v) {
        return v.empty() ? ojson(nullptr) : ojson(v);
    };
    auto waiters = l.waiters_hidden ? ojson(nullptr) : ojson::array();
    for (const auto& w : l.waiters)
        waiters.push_back(
            {{"who", w.who},
             {"waited_for_ms", w.waited_for ? ojson(w.waited_for->count()) : ojson(nullptr)},
             {"position", optional_json(w.position)}});
    return {{"name", std::string(l.primitive_name())},
            {"primitive", primitive_of(l)},
            {"role", std::string(l.role())},
            {"owner", holder ? ojson(l.owner) : ojson(nullptr)},
            {"host", holder ? text_or_null(l.host) : ojson(nullptr)},
            {"pid", holder && l.pid > 0 ? ojson(l.pid) : ojson(nullptr)},
            {"strategy", l.strategy},
            {"token", l.token > 0 ? ojson(l.token) : ojson(nullptr)},
            {"hold_count", holder ? ojson(l.hold_count) : ojson(nullptr)},
            {"held", l.holder_hidden ? ojson(nullptr) : ojson(l.held())},
            {"acquired_at", holder ? text_or_null(l.acquired_at) : ojson(nullptr)},
            {"held_for_ms",
             l.held() && !l.acquired_at.empty() ? ojson(l.held_for.count()) : ojson(nullptr)},
            {"expires_at", transactional || l.owner.empty() ? ojson(nullptr) : ojson(l.expires_at)},
            {"expires_in_ms",
             transactional || l.owner.empty() ? ojson(nullptr) : ojson(l.expires_in.count())},
            {"expired", transactional ? ojson(false) : ojson(!l.owner.empty() && l.expired())},
            {"waiting", counted == row_count::waiter},
            {"waiters", waiters}};
}

/// One element of status --jobs --json (fields and order as list_help documents them).
ojson job_json(const sqlock::job_info& j) {
    const auto age = j.success_age();
    return {{"name", j.name},
            {"period_ms", j.period_ms},
            {"first_fired_ms", j.first_fired_ms},
            {"last_fired_ms", j.last_fired_ms},
            {"last_outcome", j.last_outcome},
            {"last_started_ms", j.last_started_ms},
            {"last_duration_ms", j.last_duration_ms},
            {"last_success_started_ms", j.last_success_started_ms},
            {"last_success_age_ms", age ? ojson(age->count()) : ojson(nullptr)},
            {"slot_done", j.slot_done()},
            {"overdue", j.overdue()},
            {"running_since_ms", optional_json(j.running_since_ms)},
            {"succeeded", j.succeeded},
            {"failed", j.failed},
            {"lost", j.lost},
            {"abandoned", j.abandoned},
            {"skipped", j.skipped},
            {"now_ms", j.now_ms}};
}

// --- Prometheus ---------------------------------------------------------------------------

/// The lock rows as Prometheus counts them (see list_help).
struct lock_counts {
    std::map<std::string, int> held; ///< holders by strategy, every strategy present
    int expired = 0;
    int waiting = 0;
    int unknown = 0;
    double oldest = 0; ///< seconds the longest-held lock has been held
};

/// Counts `locks` for print_prometheus.
lock_counts count_locks(const std::vector<sqlock::lock_info>& locks) {
    lock_counts c;
    for (const char* s : {"unique_key", "select_for_update", "optimistic_version"})
        c.held[s] = 0;
    const auto counted = classify_rows(locks);
    for (std::size_t i = 0; i < locks.size(); ++i) {
        const auto& l = locks[i];
        c.waiting += static_cast<int>(l.waiters.size());
        switch (counted[i]) {
        case row_count::holder:
            ++c.held[l.strategy];
            c.oldest = std::max(c.oldest, static_cast<double>(l.held_for.count()) / 1000.0);
            break;
        case row_count::waiter:
            ++c.waiting;
            break;
        case row_count::unknown:
            ++c.unknown;
            break;
        case row_count::free:
            c.expired += is_expired_lease(l) ? 1 : 0;
            break;
        case row_count::writers_slot:
            break;
        }
    }
    return c;
}

/// The lock metrics of status --prometheus, and the clock steps `steps`.
void print_prometheus(const std::vector<sqlock::lock_info>& locks,
                      const std::vector<sqlock::clock_step_record>& steps) {
    const auto c = count_locks(locks);
    std::cout << "# HELP sqlock_locks_held Locks held right now, by strategy.\n"
              << "# TYPE sqlock_locks_held gauge\n";
    for (const auto& [strategy, n] : c.held)
        std::cout << "sqlock_locks_held{strategy=\"" << strategy << "\"} " << n << "\n";
    std::cout << "# HELP sqlock_locks_waiting Callers waiting for a lock where the database "
                 "shows them (see sqlock status --json, waiters), plus held queue rows of "
                 "semaphores and shared mutexes and writers waiting for their readers.\n"
              << "# TYPE sqlock_locks_waiting gauge\n"
              << "sqlock_locks_waiting " << c.waiting << "\n"
              << "# HELP sqlock_locks_unknown select_for_update locks whose holder the server "
                 "hides (MariaDB: innodb_status_output_locks OFF or no PROCESS privilege).\n"
              << "# TYPE sqlock_locks_unknown gauge\n"
              << "sqlock_locks_unknown " << c.unknown << "\n";
    std::cout << "# HELP sqlock_locks_expired Leases that ran out without being released, "
                 "waiting for the reaper.\n"
              << "# TYPE sqlock_locks_expired gauge\n"
              << "sqlock_locks_expired " << c.expired << "\n"
              << "# HELP sqlock_oldest_lock_age_seconds How long the longest-held lock has been "
                 "held (0 when none is).\n"
              << "# TYPE sqlock_oldest_lock_age_seconds gauge\n"
              << "sqlock_oldest_lock_age_seconds " << c.oldest << "\n"
              << "# HELP sqlock_lock_rows Rows in the lock table.\n"
              << "# TYPE sqlock_lock_rows gauge\n"
              << "sqlock_lock_rows " << locks.size() << "\n"
              << "# HELP sqlock_clock_steps_recent Steps of the database server's clock that "
                 "sqlock processes noticed in the last 24 hours.\n"
              << "# TYPE sqlock_clock_steps_recent gauge\n"
              << "sqlock_clock_steps_recent " << steps.size() << "\n"
              << "# HELP sqlock_clock_step_last_seconds The latest of them, signed (+ forward), "
                 "0 when none.\n"
              << "# TYPE sqlock_clock_step_last_seconds gauge\n"
              << "sqlock_clock_step_last_seconds "
              << (steps.empty() ? 0.0 : static_cast<double>(steps.front().step.count()) / 1000.0)
              << "\n";
}
/// Prometheus label value: backslash, quote and newline escaped.
std::string label_value(std::string_view v) {
    std::string out;
    for (const char c : v) {
        if (c == '\\' || c == '"')
            out += '\\';
        if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

/// `ms` as exact decimal seconds ("-1.250"): a double printed by iostream would lose a
/// timestamp's digits.
std::string exact_seconds(std::int64_t ms) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%lld.%03lld", ms < 0 ? "-" : "",
                  static_cast<long long>(std::abs(ms) / 1000),
                  static_cast<long long>(std::abs(ms) % 1000));
    return std::string(buf);
}

/// The per-job metrics of status --prometheus.
void print_prometheus_jobs(const std::vector<sqlock::job_info>& jobs) {
    const auto each = [&](const char* metric, const char* help, const char* type, auto value) {
        std::cout << "# HELP " << metric << " " << help << "\n# TYPE " << metric << " " << type
                  << "\n";
        for (const auto& j : jobs)
            value(j, "job=\"" + label_value(j.name) + "\"");
    };
    const auto secs = exact_seconds;
    each("sqlock_job_last_success_timestamp_seconds",
         "Start of the job's last successful run, Unix time on the database clock (0: never).",
         "gauge", [&](const sqlock::job_info& j, const std::string& l) {
             std::cout << "sqlock_job_last_success_timestamp_seconds{" << l << "} "
                       << secs(j.last_success_started_ms) << "\n";
         });
    each("sqlock_job_last_duration_seconds", "Duration of the job's last ended attempt.", "gauge",
         [&](const sqlock::job_info& j, const std::string& l) {
             std::cout << "sqlock_job_last_duration_seconds{" << l << "} "
                       << secs(j.last_duration_ms) << "\n";
         });
    each("sqlock_job_last_outcome",
         "1 for the outcome of the job's last ended attempt, 0 for the others.", "gauge",
         [&](const sqlock::job_info& j, const std::string& l) {
             for (const char* outcome : {"succeeded", "failed", "lost", "abandoned"})
                 std::cout << "sqlock_job_last_outcome{" << l << ",outcome=\"" << outcome << "\"} "
                           << (j.last_outcome == outcome ? 1 : 0) << "\n";
         });
    each("sqlock_job_runs_total",
         "Attempts of the job by outcome; skipped counts firings whose slot was already done.",
         "counter", [&](const sqlock::job_info& j, const std::string& l) {
             const std::pair<const char*, std::int64_t> counts[] = {{"succeeded", j.succeeded},
                                                                    {"failed", j.failed},
                                                                    {"lost", j.lost},
                                                                    {"abandoned", j.abandoned},
                                                                    {"skipped", j.skipped}};
             for (const auto& [outcome, n] : counts)
                 std::cout << "sqlock_job_runs_total{" << l << ",outcome=\"" << outcome << "\"} "
                           << n << "\n";
         });
    each("sqlock_job_period_seconds", "The job's period (0: caller-named slots).", "gauge",
         [&](const sqlock::job_info& j, const std::string& l) {
             std::cout << "sqlock_job_period_seconds{" << l << "} " << secs(j.period_ms) << "\n";
         });
    each("sqlock_job_running_seconds",
         "How long the job's attempt in progress has been running (0: none).", "gauge",
         [&](const sqlock::job_info& j, const std::string& l) {
             std::cout << "sqlock_job_running_seconds{" << l << "} "
                       << (j.running_since_ms ? secs(j.now_ms - *j.running_since_ms) : "0") << "\n";
         });
    each("sqlock_job_overdue", "1 when the job had no success within 1.5 periods.", "gauge",
         [&](const sqlock::job_info& j, const std::string& l) {
             std::cout << "sqlock_job_overdue{" << l << "} " << (j.overdue() ? 1 : 0) << "\n";
         });
}

// --- text ---------------------------------------------------------------------------------

/// "exports [permit 2]" for a semaphore's lock, the name itself for a mutex's.
std::string display_name(const sqlock::lock_info& l) {
    std::string shown = printable(l.primitive_name());
    if (!l.role().empty())
        shown += " [" + printable(l.role()) + "]";
    return shown;
}

/// The jobs table of `sqlock status`: a blank line, a count, one row per job.
void print_jobs_table(const std::vector<sqlock::job_info>& jobs) {
    std::cout << "\n" << jobs.size() << " scheduled job" << (jobs.size() == 1 ? "" : "s") << ":\n";
    std::printf("%-32s %-8s %-14s %-10s %-9s %-8s %s\n", "JOB", "PERIOD", "LAST SUCCESS", "LAST",
                "SLOT DONE", "OVERDUE", "RUNNING");
    for (const auto& j : jobs) {
        const auto age = j.success_age();
        const std::string success = age ? human_ms(age->count()) + " ago" : "never";
        const std::string period = j.period_ms > 0 ? human_ms(j.period_ms) : "-";
        const std::string done = j.period_ms > 0 ? (j.slot_done() ? "yes" : "no") : "-";
        const std::string overdue = j.period_ms > 0 ? (j.overdue() ? "OVERDUE" : "no") : "-";
        const std::string running =
            j.running_since_ms ? "for " + human_ms(j.now_ms - *j.running_since_ms) : "-";
        std::printf("%-32s %-8s %-14s %-10s %-9s %-8s %s\n", j.name.c_str(), period.c_str(),
                    success.c_str(), j.last_outcome.empty() ? "-" : j.last_outcome.c_str(),
                    done.c_str(), overdue.c_str(), running.c_str());
    }
}

/// "; 2 waiting: connection 7 for 3.0s, connection 9 for 1.2s": the first few waiters of a
/// lock, first in line first, for the status table.
std::string waiters_text(const std::vector<sqlock::lock_waiter>& waiters) {
    if (waiters.empty())
        return {};
    constexpr std::size_t shown = 3;
    std::string text = "; " + std::to_string(waiters.size()) + " waiting: ";
    for (std::size_t i = 0; i < waiters.size() && i < shown; ++i) {
        text += (i ? ", " : "") + printable(waiters[i].who);
        if (waiters[i].waited_for)
            text += " for " + human_ms(waiters[i].waited_for->count());
    }
    if (waiters.size() > shown)
        text += ", ...";
    return text;
}

/// The HOLDER column of lock `l`: host:pid, the owner, "unknown" or "-".
std::string holder_text(const sqlock::lock_info& l) {
    if (l.holder_hidden)
        return "unknown";
    if (l.held() && l.pid > 0 && l.host.empty()) // MariaDB: a session and its pid
        return printable(l.owner) + " (pid " + std::to_string(l.pid) + ")";
    if (l.held())
        return l.pid > 0 ? printable(l.host) + ":" + std::to_string(l.pid) : printable(l.owner);
    return "-";
}

/// The EXPIRES column of lock `l`, counted as `counted`: when its lease ends, then who waits.
std::string expires_text(const sqlock::lock_info& l, row_count counted) {
    std::string expires;
    if (l.holder_hidden) {
        expires = "unknown (holder hidden)";
    } else if (l.strategy == "select_for_update") {
        // Held by an open transaction: no lease, it lasts as long as the holder's session.
        expires = l.held() ? "with its session" : "free";
    } else if (l.owner.empty()) {
        expires = "free";
    } else if (l.expired()) {
        expires = "expired " + human_ms(-l.expires_in.count()) + " ago (" + l.expires_at + " UTC)";
    } else {
        expires = "in " + human_ms(l.expires_in.count()) + " (" + l.expires_at + " UTC)";
    }
    if (counted == row_count::waiter)
        expires += is_gate_row(l) ? "; the writer waits for readers" : "; someone waits";
    else if (counted == row_count::writers_slot)
        expires += "; collected by the writer";
    return expires + waiters_text(l.waiters);
}

/// The locks table of status and list: a header, one row per lock.
void print_locks_table(const std::vector<sqlock::lock_info>& locks,
                       const std::vector<row_count>& counted) {
    std::printf("%-32s %10s %5s %-18s %-24s %-14s %s\n", "NAME", "TOKEN", "HOLDS", "STRATEGY",
                "HOLDER", "HELD FOR", "EXPIRES");
    for (std::size_t i = 0; i < locks.size(); ++i) {
        const auto& l = locks[i];
        const std::string held_for =
            l.held() && !l.acquired_at.empty() ? human_ms(l.held_for.count()) : "-";
        const std::string token = l.token > 0 ? std::to_string(l.token) : "-";
        std::printf("%-32s %10s %5lld %-18s %-24s %-14s %s\n", display_name(l).c_str(),
                    token.c_str(), static_cast<long long>(l.hold_count), l.strategy.c_str(),
                    holder_text(l).c_str(), held_for.c_str(), expires_text(l, counted[i]).c_str());
    }
}

// --- the command --------------------------------------------------------------------------

/// status's and list's options.
struct status_args {
    bool json = false;
    bool prometheus = false;
    bool only_expired = false;
    bool jobs_only = false; ///< --jobs (status only)
    std::string glob;       ///< --name; "" for every name
};

/// The options of o.command (status or list).
status_args parse_status_args(const options& o) {
    status_args s;
    for (std::size_t i = 0; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        if (a == "--json")
            s.json = true;
        else if (a == "--prometheus")
            s.prometheus = true;
        else if (a == "--expired")
            s.only_expired = true;
        else if (a == "--jobs" && o.command == "status")
            s.jobs_only = true;
        else if (a == "--name" && i + 1 < o.args.size())
            s.glob = o.args[++i];
        else
            throw usage_error(o.command + ": unknown option " + a);
    }
    return s;
}

/// The scheduled jobs whose names match `glob` (every job when it is "").
std::vector<sqlock::job_info> jobs_matching(sqlock::database& db, const std::string& glob) {
    auto jobs = sqlock::list_jobs(db);
    std::erase_if(jobs, [&](const sqlock::job_info& j) {
        return !glob.empty() && fnmatch(glob.c_str(), j.name.c_str(), 0) != 0;
    });
    return jobs;
}

/// status --jobs: the scheduled jobs alone, as a table or --json (status --json keeps its
/// array of locks).
int print_jobs_only(sqlock::database& db, const status_args& s) {
    const auto jobs = jobs_matching(db, s.glob);
    if (!s.json) {
        if (jobs.empty())
            std::cout << "no scheduled jobs in " << db.url() << "\n";
        else
            print_jobs_table(jobs);
        return exit_ok;
    }
    auto rows = ojson::array();
    for (const auto& j : jobs)
        rows.push_back(job_json(j));
    std::cout << json_rows(rows);
    return exit_ok;
}

/// status's summary line, then what it needs said: holders or waiters the server hides, steps
/// of the database's clock, replication that can lose a grant.
void print_summary(sqlock::database& db, const std::vector<sqlock::lock_info>& locks,
                   const std::vector<row_count>& counted) {
    // Counted as what the rows are: a held queue row is someone waiting, a held writer
    // gate is a writer (its permits are its hold), a permit or mutex held is a holder.
    std::size_t held = 0, waiting = 0, unknown = 0, other = 0;
    for (std::size_t i = 0; i < locks.size(); ++i) {
        waiting += locks[i].waiters.size();
        held += counted[i] == row_count::holder ? 1U : 0U;
        waiting += counted[i] == row_count::waiter ? 1U : 0U;
        unknown += counted[i] == row_count::unknown ? 1U : 0U;
        other += counted[i] == row_count::free ? 1U : 0U;
    }
    std::cout << held << " held, " << waiting << " waiting, " << other << " free or expired";
    if (unknown > 0)
        std::cout << ", " << unknown << " unknown";
    std::cout << ", in " << db.url() << "\n";
    if (unknown > 0)
        std::cout << "unknown: select_for_update holders are hidden by this server; MariaDB "
                     "shows them with SET GLOBAL innodb_status_output_locks = ON and the "
                     "PROCESS privilege\n";
    if (std::any_of(locks.begin(), locks.end(),
                    [](const sqlock::lock_info& l) { return l.waiters_hidden; }))
        std::cout << "waiters: hidden by this server for unique_key and optimistic_version "
                     "locks; MariaDB shows them with performance_schema = ON and "
                     "performance_schema_instrument = 'wait/lock/metadata/sql/mdl=ON' "
                     "(server options) and SELECT on performance_schema\n";
    if (const auto steps = recent_clock_steps(db); !steps.empty()) {
        const auto& last = steps.front();
        std::printf("clock: the database's clock stepped %zu time%s in the last 24 h; latest "
                    "%+.1fs at %s UTC, seen by %s (locks are unaffected)\n",
                    steps.size(), steps.size() == 1 ? "" : "s",
                    static_cast<double>(last.step.count()) / 1000.0, last.seen_at.c_str(),
                    last.observer.c_str());
    }
    for (const auto& warning : db.topology().warnings)
        std::cout << "replication: " << warning << "\n";
}

/// status: the scheduled jobs follow the locks (list shows locks only; --expired, only
/// expired leases).
void print_status_jobs(sqlock::database& db, const options& o, const status_args& s) {
    if (o.command != "status" || s.only_expired)
        return;
    if (const auto jobs = jobs_matching(db, s.glob); !jobs.empty())
        print_jobs_table(jobs);
}
} // namespace

int cmd_status(const options& o) {
    if (o.urls.size() > 1)
        return cmd_status_quorum(o);
    const auto s = parse_status_args(o);
    auto db = open(o);
    if (s.jobs_only)
        return print_jobs_only(db, s);
    auto locks = db.list();
    if (s.prometheus) {
        print_prometheus(locks, recent_clock_steps(db));
        print_prometheus_jobs(sqlock::list_jobs(db));
        return exit_ok;
    }
    std::erase_if(locks, [&](const sqlock::lock_info& l) {
        if (s.only_expired && !is_expired_lease(l))
            return true;
        return !s.glob.empty() &&
               fnmatch(s.glob.c_str(), std::string(l.primitive_name()).c_str(), 0) != 0;
    });
    const auto counted = classify_rows(locks);
    if (s.json) {
        auto rows = ojson::array();
        for (std::size_t i = 0; i < locks.size(); ++i)
            rows.push_back(lock_json(locks[i], counted[i]));
        std::cout << json_rows(rows);
        return exit_ok;
    }
    if (o.command == "status")
        print_summary(db, locks, counted);
    if (locks.empty()) {
        if (o.command != "status")
            std::cout << "no locks in " << db.url() << "\n";
    } else {
        print_locks_table(locks, counted);
    }
    print_status_jobs(db, o, s);
    return exit_ok;
}
} // namespace sqlock::cli
