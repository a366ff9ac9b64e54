// sqlock run: runs a command while holding a lock (a mutex, a semaphore's permit, a side of a
// shared mutex), or as a scheduled job that succeeds at most once per slot (--once-per, --slot).
#include "cli.hpp"
#include "command.hpp"
#include "job_group.hpp"
#include "lock_watch.hpp"
#include "wait_progress.hpp"
#include "wakeup_pipe.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <sqlock/job.hpp>
#include <sqlock/mutex.hpp>
#include <sqlock/quorum_mutex.hpp>
#include <sqlock/semaphore.hpp>
#include <sqlock/shared_mutex.hpp>
#include <stop_token>
#include <string>
#include <sys/wait.h>
#include <type_traits>
#include <unistd.h>
#include <utility>
#include <vector>

namespace sqlock::cli {

namespace {

using std::chrono::milliseconds;

/// `run`'s options, as parse_run_args reads them.
struct run_args {
    std::string name;
    sqlock::mutex_options lock; ///< --strategy, --ttl, --no-renew
    std::optional<milliseconds> grace;
    std::optional<milliseconds> wait;
    std::optional<milliseconds> once_per;
    std::optional<std::int64_t> permits;
    enum class rw_mode { none, shared, exclusive } rw = rw_mode::none;
    std::int64_t max_readers = sqlock::default_max_readers;
    bool max_readers_given = false;
    std::string slot;
    bool strategy_given = false;
    std::optional<int> skipped_exit;
    bool verbose = false;

    /// --once-per or --slot: a scheduled job (sqlock::job), not a plain lock.
    bool is_job() const { return once_per || !slot.empty(); }
};

/// `value` of --permits or --max-readers: a number of `what` ("permits", "readers") from 1 to
/// sqlock::max_permits.
std::int64_t count_arg(const std::string& flag, const std::string& value, const char* what) {
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc{} || end != value.data() + value.size() || n < 1 || n > sqlock::max_permits)
        throw usage_error(flag + ": \"" + value + "\" is not a number of " + what + " (1-" +
                          std::to_string(sqlock::max_permits) + ")");
    return n;
}

/// `value` of --skipped-exit: an exit status, 0 to 255.
int exit_status_arg(const std::string& value) {
    int n = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc{} || end != value.data() + value.size() || n < 0 || n > 255)
        throw usage_error("--skipped-exit: \"" + value + "\" is not an exit status (0-255)");
    return n;
}

/// `run`'s arguments (NAME, then options) as they are given; nothing checked across options.
run_args parse_run_args(const options& o) {
    if (o.args.empty())
        throw usage_error("run: missing lock NAME");
    run_args r;
    r.name = o.args[0];
    r.lock.renew = true;
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= o.args.size())
                throw usage_error(a + " needs a value");
            return o.args[++i];
        };
        if (a == "--strategy") {
            r.lock.strategy = sqlock::parse_strategy(value());
            r.strategy_given = true;
        } else if (a == "--ttl")
            r.lock.ttl = duration_arg(a, value());
        else if (a == "--wait")
            r.wait = duration_arg(a, value());
        else if (a == "--grace")
            r.grace = duration_arg(a, value());
        else if (a == "--no-renew")
            r.lock.renew = false;
        else if (a == "--permits")
            r.permits = count_arg(a, value(), "permits");
        else if (a == "--shared" || a == "--exclusive") {
            const auto mode =
                a == "--shared" ? run_args::rw_mode::shared : run_args::rw_mode::exclusive;
            if (r.rw != run_args::rw_mode::none && r.rw != mode)
                throw usage_error("--shared and --exclusive exclude each other");
            r.rw = mode;
        } else if (a == "--max-readers") {
            r.max_readers = count_arg(a, value(), "readers");
            r.max_readers_given = true;
        } else if (a == "--once-per")
            r.once_per = duration_arg(a, value());
        else if (a == "--slot") {
            r.slot = value();
            if (r.slot.empty())
                throw usage_error("--slot: the slot key must not be empty");
        } else if (a == "--skipped-exit")
            r.skipped_exit = exit_status_arg(value());
        else if (a == "--verbose" || a == "-v")
            r.verbose = true;
        else
            throw usage_error("run: unknown option " + a);
    }
    return r;
}

/// The checks across `run`'s options that need no database, and the command after "--".
void check_run_args(const options& o, const run_args& r) {
    if (o.exec.empty())
        throw usage_error("run: missing \"-- CMD\" to run under the lock");
    if (r.permits && r.rw != run_args::rw_mode::none)
        throw usage_error("--permits cannot be combined with --shared/--exclusive");
    if (r.max_readers_given && r.rw == run_args::rw_mode::none)
        throw usage_error("--max-readers needs --shared or --exclusive");
    if ((r.permits || r.rw != run_args::rw_mode::none) && r.is_job())
        throw usage_error("--permits, --shared and --exclusive cannot be combined with "
                          "--once-per/--slot");
}

/// --grace checked against the TTL (see max_grace), or its default for the TTL.
job_limits limits_for(std::optional<milliseconds> grace, milliseconds ttl) {
    const auto most = max_grace(ttl);
    if (grace && *grace > most)
        throw usage_error("--grace " + std::to_string(grace->count()) + " ms does not fit --ttl " +
                          std::to_string(ttl.count()) +
                          " ms: the command must be stopped before the lease can end, and a "
                          "lease is at risk only once half its TTL is left without a renewal; "
                          "use --grace " +
                          std::to_string(most.count()) + "ms or less, or a longer --ttl");
    return {grace.value_or(default_grace(ttl)), kill_margin(ttl)};
}

/// Exit status of a finished child, shell style.
int status_of(int status) {
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return exit_software;
}

/// The child's environment: ours plus SQLOCK_TOKEN and SQLOCK_NAME (and SQLOCK_PERMIT for a
/// semaphore's permit), as the spawn wants it. SQLOCK_URL is the URL sqlock uses (--url or
/// $SQLOCK_URL) without its password, so that the job can run sqlock itself with
/// SQLOCK_PASSWORD_FILE (set to --password-file's path when that was given) or ~/.pgpass.
std::vector<std::string> child_environment(const std::string& token, const std::string& name,
                                           std::optional<std::int64_t> permit = std::nullopt) {
    const auto& database = database_for_jobs();
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string_view entry(*e);
        if (!entry.starts_with("SQLOCK_TOKEN=") && !entry.starts_with("SQLOCK_NAME=") &&
            !entry.starts_with("SQLOCK_PERMIT=") && !entry.starts_with("SQLOCK_URL=") &&
            (database.password_file.empty() || !entry.starts_with("SQLOCK_PASSWORD_FILE=")))
            env.emplace_back(entry);
    }
    if (!database.url.empty())
        env.push_back("SQLOCK_URL=" + sqlock::url_without_password(database.url));
    if (!database.password_file.empty())
        env.push_back("SQLOCK_PASSWORD_FILE=" + database.password_file);
    env.push_back("SQLOCK_TOKEN=" + token);
    env.push_back("SQLOCK_NAME=" + name);
    if (permit)
        env.push_back("SQLOCK_PERMIT=" + std::to_string(*permit));
    return env;
}

// --- run --once-per / --slot: the job path (sqlock::job) -------------------------------------

/// `sqlock run NAME --once-per PERIOD` / `--slot KEY`, as run_job wants it.
struct job_run_args {
    std::string name;
    sqlock::job_options job;
    job_limits limits;
    int skipped_exit = 0;
    bool verbose = false;
};

/// The database for a job's firing. A full server is waited out for as long as the firing
/// would wait for the lock (--wait, else the period; a --slot without --wait: as long as it
/// takes), and that time counts: a.job.wait is what is left of it.
sqlock::database open_for_job(const options& o, job_run_args& a) {
    const auto budget = a.job.wait                 ? a.job.wait
                        : a.job.period.count() > 0 ? std::optional<milliseconds>(a.job.period)
                                                   : std::nullopt;
    const auto deadline = deadline_of(budget);
    auto db = open_waiting(o, deadline, a.name);
    if (budget && deadline != steady::time_point::min())
        a.job.wait =
            std::max(milliseconds(0), std::chrono::ceil<milliseconds>(deadline - steady::now()));
    return db;
}

/// What the ledger records of the command's run: its waitpid() status `raw_status`, or
/// (negative) a failure to supervise it, `failure`.
sqlock::job_report report_of(int raw_status, const std::string& failure,
                             const std::string& command) {
    sqlock::job_report rep;
    if (raw_status < 0) {
        rep.exit_status = exit_software;
        rep.message = failure;
    } else if (WIFEXITED(raw_status)) {
        rep.exit_status = WEXITSTATUS(raw_status);
    } else if (WIFSIGNALED(raw_status)) {
        rep.signal = WTERMSIG(raw_status);
    }
    if (rep.exit_status != 0 || rep.signal != 0)
        rep.message = rep.message.empty() ? "the command " + command + " failed" : rep.message;
    return rep;
}

/// The exit status of a job's firing that ended as `r` (the command's waitpid() status
/// `raw_status` when it ran), saying on stderr what happened where cron should hear of it.
int job_exit(const sqlock::job_result& r, const job_run_args& a, const lock_watch& watch,
             int raw_status) {
    const auto job = "sqlock: job \"" + escape_control(a.name) + "\": ";
    switch (r.outcome) {
    case sqlock::job_outcome::skipped:
        // Silent by default: cron mails whatever a job prints.
        if (a.verbose)
            std::cerr << job << "slot " << r.slot << " already done by " << r.done_by_host << ":"
                      << r.done_by_pid << " (token " << r.done_by_token << "); not running it\n";
        return a.skipped_exit;
    case sqlock::job_outcome::not_granted:
        std::cerr << job << "another run held its lock for longer than "
                  << "--wait; the command did not run\n";
        return exit_timeout;
    case sqlock::job_outcome::lost:
        std::cerr << job << "the lock was lost (" << r.message
                  << "); the attempt is recorded as lost\n";
        return exit_lock_lost;
    case sqlock::job_outcome::succeeded:
        if (a.verbose)
            std::cerr << job << "slot " << r.slot << " done (token " << r.token
                      << (r.takeover ? ", took over after a failed attempt" : "") << ")\n";
        return exit_ok;
    default:
        if (watch.stopped_at_risk()) {
            std::cerr << job << "the command was stopped: its lock "
                      << "was at risk of being lost (" << watch.risk_message()
                      << "); another firing of the slot may take it over\n";
            return exit_lock_lost;
        }
        if (a.verbose)
            std::cerr << job << "slot " << r.slot
                      << " failed; another firing of the slot may take it over\n";
        return raw_status < 0 ? exit_software : status_of(raw_status);
    }
}

/// One firing of a scheduled job: runs the command under the job's lock unless its slot is
/// done, records the attempt, and returns the exit status.
int run_job(const options& o, job_run_args a, lock_watch& watch) {
    auto db = open_for_job(o, a);
    sqlock::job j(db, a.name, a.job);
    int raw_status = 0;
    const auto r = j.run_reporting([&](const sqlock::job_context& ctx) {
        // The grant's stop token: requested when the lock is lost (on_lost tells the watch
        // too; this covers a loss found by the job itself).
        std::stop_callback on_stop(ctx.stop, [&] {
            watch.lost({a.name, ctx.token, sqlock::loss_reason::lost, "the job's lock was lost"});
        });
        auto env = child_environment(std::to_string(ctx.token), a.name);
        std::erase_if(env, [](const std::string& e) { return e.starts_with("SQLOCK_SLOT="); });
        env.push_back("SQLOCK_SLOT=" + ctx.slot);
        std::string failure;
        raw_status = run_job_group(o.exec, env, a.limits, watch, failure);
        return report_of(raw_status, failure, o.exec[0]);
    });
    return job_exit(r, a, watch, raw_status);
}

/// `run` with --once-per or --slot: the job's own checks (before connecting, so that a typo
/// is a usage error, 64, even when the database is down), then run_job.
int run_once_per(const options& o, const run_args& r, const job_limits& limits, lock_watch& watch) {
    if (r.once_per &&
        (*r.once_per < sqlock::min_job_period || *r.once_per > sqlock::max_job_period))
        throw usage_error("--once-per: the period must be between 1s and 366d, got " +
                          std::to_string(r.once_per->count()) + " ms");
    if (!r.lock.renew)
        throw usage_error("--once-per/--slot cannot be used with --no-renew: a lease that "
                          "runs out while the job runs lets another host run it too");
    if (r.strategy_given && r.lock.strategy == sqlock::strategy::select_for_update)
        throw usage_error("--once-per/--slot need a lease strategy (unique_key or "
                          "optimistic_version): the run ledger is fenced by the lease");
    job_run_args ja;
    ja.name = r.name;
    ja.job.period = r.once_per.value_or(milliseconds(0));
    ja.job.slot = r.slot;
    ja.job.wait = r.wait;
    ja.job.lock = r.lock;
    ja.limits = limits;
    ja.skipped_exit = r.skipped_exit.value_or(0);
    ja.verbose = r.verbose;
    return run_job(o, std::move(ja), watch);
}

// --- run NAME: a plain lock -------------------------------------------------------------------

/// The shared side of a shared_mutex, with a mutex's words (for run_holding).
struct shared_side {
    sqlock::shared_mutex& rw;
    void lock() { rw.lock_shared(); }
    bool try_lock() { return rw.try_lock_shared(); }
    bool try_lock_until(std::chrono::steady_clock::time_point deadline) {
        return rw.try_lock_shared_until(deadline);
    }
    void unlock() noexcept { rw.unlock_shared(); }
    std::int64_t token() const { return rw.token(); }
    const std::string& name() const noexcept { return rw.name(); }
    sqlock::loss_reason last_loss() const noexcept { return rw.last_loss(); }
    std::string last_error() const { return rw.last_error(); }
};

/// Takes `m`: as long as it takes without --wait, one try with --wait 0, else until
/// `deadline`; on a terminal, the progress line shows the wait (cleared before this returns,
/// so before anything else is printed). Whether it was granted.
template <class Lock>
bool take(Lock& m, sqlock::database& db, const std::optional<milliseconds>& wait,
          steady::time_point deadline) {
    std::optional<wait_progress> progress;
    if (!wait || wait->count() > 0)
        progress.emplace(db, m.name(), std::is_same_v<Lock, sqlock::mutex>);
    return !wait                ? (m.lock(), true)
           : wait->count() == 0 ? m.try_lock()
                                : m.try_lock_until(deadline);
}

/// `m`, granted only `took` after the wait began, past --wait `wait` and its second of grace:
/// given back at once, the command not run; exit_timeout.
template <class Lock>
int give_back_late(Lock& m, milliseconds wait, milliseconds took) {
    constexpr bool is_semaphore = std::is_same_v<Lock, sqlock::semaphore>;
    try {
        m.unlock();
    } catch (const std::exception&) {
        // Given back or not, the lease ends at its TTL; the command does not run.
    }
    std::cerr << "sqlock: " << (is_semaphore ? "a permit of semaphore \"" : "lock \"") << m.name()
              << "\" was granted only after " << human_ms(took.count()) << ", past --wait "
              << human_ms(wait.count())
              << " and its second of grace: given back at once; the command did not run\n";
    return exit_timeout;
}

/// `m` not granted within --wait `wait`: says so on stderr, with who holds it where that can
/// be told; exit_timeout.
template <class Lock>
int report_not_granted(Lock& m, sqlock::database& db, milliseconds wait) {
    constexpr bool is_semaphore = std::is_same_v<Lock, sqlock::semaphore>;
    const std::string& name = m.name();
    std::cerr << "sqlock: " << (is_semaphore ? "no permit of semaphore \"" : "lock \"") << name
              << "\" " << (is_semaphore ? "was granted" : "not granted") << " within "
              << human_ms(wait.count());
    if constexpr (is_semaphore) {
        std::cerr << " (all " << m.permits() << " permits held)\n";
        return exit_timeout;
    } else if constexpr (!std::is_same_v<Lock, sqlock::mutex>) {
        std::cerr << " (see sqlock status --name '" << name << "')\n";
        return exit_timeout;
    }
    try {
        if (const auto holder = db.find(name); holder && holder->held()) {
            std::cerr << ": held by " << holder->host << ":" << holder->pid << " (owner "
                      << holder->owner << ", token " << holder->token;
            if (holder->strategy != "select_for_update")
                std::cerr << ", lease ends in " << human_ms(holder->expires_in.count());
            std::cerr << ")";
        }
    } catch (const std::exception&) {
        // Who holds it is a courtesy; the timeout is the answer.
    }
    std::cerr << "\n";
    return exit_timeout;
}

/// With `m` held: runs the command, gives `m` back, and returns the command's exit status, or
/// exit_lock_lost when the lock was lost or at risk meanwhile (said on stderr).
template <class Lock>
int run_command(Lock& m, const options& o, const job_limits& limits, lock_watch& watch) {
    const std::string& name = m.name();
    std::optional<std::int64_t> permit;
    if constexpr (std::is_same_v<Lock, sqlock::semaphore>)
        permit = m.permit();
    std::string failure;
    const int status = run_job_group(
        o.exec, child_environment(std::to_string(m.token()), name, permit), limits, watch, failure);
    if (status < 0)
        std::cerr << "sqlock: " << failure << "\n";
    m.unlock();
    if (!watch.is_lost() && m.last_loss() != sqlock::loss_reason::none) {
        // Found only at release (say, force-released by an operator): the command may have
        // run without the lock for a while.
        watch.lost_at_release(std::string(sqlock::to_string(m.last_loss())) + ": " +
                              m.last_error());
    }
    // Names print readably: "NAME [permit 2]", never a raw 0x1f or other control byte.
    if (watch.is_lost()) {
        std::cerr << "sqlock: lock \"" << readable_lock_name(name)
                  << "\" was lost while the command ran (" << readable_message(watch.lost_message())
                  << ")\n";
        return exit_lock_lost;
    }
    if (watch.stopped_at_risk()) {
        std::cerr << "sqlock: the command was stopped: its lock \"" << readable_lock_name(name)
                  << "\" was at risk of being lost (" << readable_message(watch.risk_message())
                  << ")\n";
        return exit_lock_lost;
    }
    if (const auto failure_msg = m.last_error(); !failure_msg.empty())
        std::cerr << "sqlock: warning: " << readable_message(failure_msg) << "\n";
    return status < 0 ? exit_software : status_of(status);
}

/// `sqlock run` once the database is open: takes `m` (a mutex, or a semaphore's permit), runs
/// the command, gives it back, and returns the exit status.
template <class Lock>
int run_holding(Lock& m, sqlock::database& db, const options& o,
                const std::optional<milliseconds>& wait, steady::time_point deadline,
                const job_limits& limits, lock_watch& watch) {
    // --wait D returns within D + 1 s: a grant that comes later than that (a reply delayed
    // past the deadline) is given back at once, not kept, and the command does not run.
    const auto wait_started = steady::now();
    const auto late_after =
        !wait ? steady::time_point::max()
              : (deadline == steady::time_point::min() ? wait_started : deadline) +
                    std::chrono::seconds(1);
    const bool granted = take(m, db, wait, deadline);
    if (granted && steady::now() > late_after)
        return give_back_late(
            m, *wait, std::chrono::duration_cast<milliseconds>(steady::now() - wait_started));
    if (!granted)
        return report_not_granted(m, db, *wait);
    return run_command(m, o, limits, watch);
}

/// `run NAME` without --once-per/--slot: connects (waiting out a full server within --wait),
/// then runs the command under a mutex, a semaphore's permit or a shared mutex's side.
int run_locked(const options& o, const run_args& r, const job_limits& limits, lock_watch& watch) {
    // --wait counts from here: a server without free connection slots is waited out first.
    const auto deadline = deadline_of(r.wait);
    auto db = open_waiting(o, deadline, r.name);
    if (r.permits) {
        sqlock::semaphore s(db, r.name, *r.permits, r.lock);
        return run_holding(s, db, o, r.wait, deadline, limits, watch);
    }
    if (r.rw != run_args::rw_mode::none) {
        sqlock::shared_mutex rw_lock(db, r.name, r.lock, r.max_readers);
        if (r.rw == run_args::rw_mode::exclusive)
            return run_holding(rw_lock, db, o, r.wait, deadline, limits, watch);
        shared_side reader{rw_lock};
        return run_holding(reader, db, o, r.wait, deadline, limits, watch);
    }
    sqlock::mutex m(db, r.name, r.lock);
    return run_holding(m, db, o, r.wait, deadline, limits, watch);
}

// --- run NAME --url A --url B --url C: a quorum lock ------------------------------------------

/// A quorum_mutex with a mutex's words (for run_command).
struct quorum_side {
    sqlock::quorum_mutex& q;
    void unlock() noexcept { q.unlock(); }
    std::int64_t token() const { return q.token(); }
    const std::string& name() const noexcept { return q.name(); }
    sqlock::loss_reason last_loss() const noexcept { return q.last_loss(); }
    std::string last_error() const { return {}; }
};

/// What a quorum lock cannot be: a semaphore, a shared mutex, a scheduled job, a row lock.
void check_quorum_args(const options& o, const run_args& r) {
    if (o.urls.size() < 3)
        throw usage_error("a quorum lock needs at least 3 --url (its members), got " +
                          std::to_string(o.urls.size()));
    if (r.permits || r.rw != run_args::rw_mode::none || r.is_job())
        throw usage_error("several --url make a quorum lock, a plain mutex: --permits, --shared, "
                          "--exclusive, --once-per and --slot need one database");
    if (r.strategy_given && r.lock.strategy == sqlock::strategy::select_for_update)
        throw usage_error("a quorum lock is a lease on each member: select_for_update cannot be "
                          "one (use unique_key, the default)");
}

/// `run`'s lease and signals for a quorum lock; a member is waited for at most 2 s, and less
/// than a quarter of the TTL.
sqlock::quorum_options quorum_options_of(const sqlock::mutex_options& lock) {
    sqlock::quorum_options q;
    q.ttl = lock.ttl;
    q.renew = lock.renew;
    q.on_lost = lock.on_lost;
    q.on_at_risk = lock.on_at_risk;
    q.member_timeout = std::max(milliseconds(1), std::min(milliseconds(2000), lock.ttl / 4));
    return q;
}

/// `run NAME` with several --url: the command runs while a majority of the members hold the
/// lock for us (quorum_mutex).
int run_quorum(const options& o, const run_args& r, const job_limits& limits, lock_watch& watch) {
    check_quorum_args(o, r);
    const auto deadline = deadline_of(r.wait);
    sqlock::quorum_mutex q(o.urls, r.name, quorum_options_of(r.lock), o.connect);
    quorum_side side{q};
    const auto started = steady::now();
    const bool granted = !r.wait                ? (q.lock(), true)
                         : r.wait->count() == 0 ? q.try_lock()
                                                : q.try_lock_until(deadline);
    const auto took = std::chrono::duration_cast<milliseconds>(steady::now() - started);
    if (granted && r.wait && took > *r.wait + std::chrono::seconds(1))
        return give_back_late(side, *r.wait, took);
    if (!granted) {
        std::cerr << "sqlock: lock \"" << readable_lock_name(r.name) << "\" not granted within "
                  << human_ms(r.wait->count()) << " (held on a majority of its " << q.members()
                  << " members)\n";
        return exit_timeout;
    }
    return run_command(side, o, limits, watch);
}

} // namespace

int cmd_run(const options& o) {
    auto r = parse_run_args(o);
    check_run_args(o, r);
    const auto limits = limits_for(r.grace, r.lock.ttl);
    open_wakeup_pipe();
    // Shared with the lock's callbacks: sqlock's background thread may still be in one when
    // this returns.
    const auto watch = std::make_shared<lock_watch>();
    r.lock.on_lost = [watch](const sqlock::lock_lost_event& event) {
        watch->lost(event);
    };
    r.lock.on_at_risk = [watch](const sqlock::lock_at_risk_event& event) {
        watch->risk(event);
    };
    if (o.urls.size() > 1)
        return run_quorum(o, r, limits, *watch);
    if (r.is_job())
        return run_once_per(o, r, limits, *watch);
    if (r.skipped_exit || r.verbose)
        throw usage_error("--skipped-exit and --verbose need --once-per or --slot");
    return run_locked(o, r, limits, *watch);
}

} // namespace sqlock::cli
