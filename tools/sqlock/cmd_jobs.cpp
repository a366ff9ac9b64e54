// sqlock history and sqlock check: the run ledger of a scheduled job (sqlock run --once-per),
// and a monitoring check of it (Nagios plugin conventions).
#include "cli.hpp"
#include "command.hpp"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <sqlock/database.hpp>
#include <sqlock/job.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace sqlock::cli {

namespace {

// --- history ------------------------------------------------------------------------------

/// history's arguments.
struct history_args {
    std::string name;
    std::size_t limit = 20;
    bool json = false;
};

/// history's arguments (NAME, then options), checked.
history_args parse_history_args(const options& o) {
    if (o.args.empty())
        throw usage_error("history: missing job NAME");
    history_args h;
    h.name = o.args[0];
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        if (a == "--json") {
            h.json = true;
        } else if (a == "--limit" && i + 1 < o.args.size()) {
            const auto v = o.args[++i];
            std::size_t n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc{} || end != v.data() + v.size() || n == 0)
                throw usage_error("--limit: \"" + v + "\" is not a positive number");
            h.limit = n;
        } else {
            throw usage_error("history: unknown option " + a);
        }
    }
    return h;
}

/// One element of history --json (fields and order as history_help documents them).
ojson run_json(const sqlock::job_run_info& r) {
    return {{"name", r.name},
            {"slot", r.slot},
            {"token", r.token},
            {"owner", r.owner},
            {"host", r.host},
            {"pid", r.pid},
            {"period_ms", r.period_ms},
            {"started_at", sqlock::format_utc_ms(r.started_ms)},
            {"started_ms", r.started_ms},
            {"ended_ms", optional_json(r.ended_ms)},
            {"duration_ms", optional_json(r.duration_ms)},
            {"exit_status", optional_json(r.exit_status)},
            {"signal", optional_json(r.signal)},
            {"outcome", r.outcome},
            {"message", r.message}};
}

/// The runs of job `name` as a table, then how many firings it skipped.
void print_history_table(sqlock::database& db, const std::string& name,
                         const std::vector<sqlock::job_run_info>& runs) {
    std::printf("%-26s %-10s %-24s %10s %-26s %-10s %s\n", "SLOT", "OUTCOME", "HOST:PID", "TOKEN",
                "STARTED (UTC, db clock)", "DURATION", "EXIT");
    for (const auto& r : runs) {
        const auto who = r.host + ":" + std::to_string(r.pid);
        const auto duration = r.duration_ms ? human_ms(*r.duration_ms) : std::string("-");
        const auto exit = r.signal        ? "signal " + std::to_string(*r.signal)
                          : r.exit_status ? std::to_string(*r.exit_status)
                                          : std::string("-");
        std::printf("%-26s %-10s %-24s %10lld %-26s %-10s %s\n", r.slot.c_str(), r.outcome.c_str(),
                    who.c_str(), static_cast<long long>(r.token),
                    sqlock::format_utc_ms(r.started_ms).c_str(), duration.c_str(), exit.c_str());
    }
    if (const auto jobs = sqlock::list_jobs(db); !jobs.empty()) {
        for (const auto& j : jobs)
            if (j.name == name)
                std::cout << "skipped firings (slot already done): " << j.skipped << "\n";
    }
}

// --- check --------------------------------------------------------------------------------

/// check's arguments.
struct check_args {
    std::string name;
    std::optional<std::chrono::milliseconds> max_age;
    std::optional<std::chrono::milliseconds> warn_age;
};

/// check's arguments (NAME, then options) as they are given.
check_args parse_check_args(const options& o) {
    if (o.args.empty())
        throw usage_error("check: missing job NAME");
    check_args c;
    c.name = o.args[0];
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        if (a == "--max-age" && i + 1 < o.args.size())
            c.max_age = duration_arg(a, o.args[++i]);
        else if (a == "--warn-age" && i + 1 < o.args.size())
            c.warn_age = duration_arg(a, o.args[++i]);
        else
            throw usage_error("check: unknown option " + a);
    }
    return c;
}

/// The check of `job` against its thresholds (c.max_age set): one plugin line, with
/// performance data; the Nagios code.
int judge(const sqlock::job_info& job, const check_args& c) {
    const auto& max_age = c.max_age;
    const auto& warn_age = c.warn_age;
    const auto age = job.success_age();
    const std::string last = job.last_outcome.empty() ? "none" : job.last_outcome;
    const auto perf = [&] {
        std::ostringstream p;
        p << " | age=" << (age ? age->count() / 1000 : -1) << "s;"
          << (warn_age ? std::to_string(warn_age->count() / 1000) : "") << ";"
          << max_age->count() / 1000 << " failed=" << job.failed << "c lost=" << job.lost
          << "c abandoned=" << job.abandoned << "c";
        return p.str();
    };
    const std::string subject = "job \"" + c.name + "\": ";
    if (!age) {
        std::cout << "SQLOCK CRITICAL - " << subject << "never succeeded (first fired "
                  << human_ms(job.now_ms - job.first_fired_ms) << " ago, last outcome " << last
                  << ")" << perf() << "\n";
        return nagios_critical;
    }
    const std::string ago = "last success " + human_ms(age->count()) + " ago";
    if (*age > *max_age) {
        std::cout << "SQLOCK CRITICAL - " << subject << ago << ", more than "
                  << human_ms(max_age->count()) << " (last outcome " << last << ")" << perf()
                  << "\n";
        return nagios_critical;
    }
    if (warn_age && *age > *warn_age) {
        std::cout << "SQLOCK WARNING - " << subject << ago << ", more than "
                  << human_ms(warn_age->count()) << perf() << "\n";
        return nagios_warning;
    }
    if (last != "succeeded" && last != "none") {
        std::cout << "SQLOCK WARNING - " << subject << ago << ", but the last attempt " << last
                  << perf() << "\n";
        return nagios_warning;
    }
    std::cout << "SQLOCK OK - " << subject << ago << " (max " << human_ms(max_age->count()) << ")"
              << perf() << "\n";
    return nagios_ok;
}

/// check, with errors thrown (cmd_check turns them into UNKNOWN).
int check_job(const options& o) {
    auto c = parse_check_args(o);
    auto db = open(o);
    std::optional<sqlock::job_info> job;
    for (auto& j : sqlock::list_jobs(db))
        if (j.name == c.name)
            job = std::move(j);
    if (!job) {
        std::cout << "SQLOCK UNKNOWN - job \"" << c.name << "\" has never fired in " << db.url()
                  << "\n";
        return nagios_unknown;
    }
    if (!c.max_age) {
        if (job->period_ms <= 0)
            throw usage_error("check: job \"" + c.name + "\" has no period: pass --max-age D");
        c.max_age = std::chrono::milliseconds(job->period_ms * 3 / 2); // as the alert rule
    }
    return judge(*job, c);
}

} // namespace

int cmd_history(const options& o) {
    const auto h = parse_history_args(o);
    auto db = open(o);
    const auto runs = sqlock::job_history(db, h.name, h.limit);
    if (h.json) {
        auto rows = ojson::array();
        for (const auto& r : runs)
            rows.push_back(run_json(r));
        std::cout << json_rows(rows);
        return exit_ok;
    }
    if (runs.empty()) {
        std::cout << "no recorded runs of job \"" << h.name << "\" in " << db.url() << "\n";
        return exit_ok;
    }
    print_history_table(db, h.name, runs);
    return exit_ok;
}

int cmd_check(const options& o) {
    // A monitoring plugin: whatever prevents an answer is UNKNOWN (3), never another code.
    try {
        return check_job(o);
    } catch (const std::exception& e) {
        std::cout << "SQLOCK UNKNOWN - " << e.what() << "\n";
        return nagios_unknown;
    }
}

} // namespace sqlock::cli
