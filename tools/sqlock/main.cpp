// sqlock — command-line tool: migrate, run a command under a lock, list locks.
#include "cli.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fnmatch.h>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <poll.h>
#include <sqlock/sqlock.hpp>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using namespace sqlock::cli;

constexpr const char* main_help =
    R"(sqlock — distributed locks in PostgreSQL, MySQL/MariaDB or SQLite

usage: sqlock [--url URL] COMMAND [OPTIONS]

commands:
  migrate   create or upgrade the lock tables (--print: the DDL; --status: versions)
  run       run a command while holding a lock (flock(1) for a fleet)
  status    who holds what, since when, until when (also: list; --json, --prometheus)
  reap      delete expired lock rows in small batches (for cron / systemd timers)
  release   break-glass: release someone else's lock (--force)

global options (before or after COMMAND):
  --url URL            database URL; default: $SQLOCK_URL
                       postgresql://user:pw@host:port/db, mysql://..., mariadb://...,
                       sqlite:///abs/path.db, sqlite:relative.db
  --table-prefix P     prefix of sqlock's tables (default sqlock_)
  --connect-timeout D  bound on connecting (default 5s)
  -h, --help           help for sqlock or for COMMAND
  --version            print the version

exit codes: 0 ok; 1 release: nothing to release; 64 bad usage; 69 database unreachable or
            login failed; 70 other error; 75 lock not granted within --wait; 76 lock lost
            while the command ran; 78 lock tables missing or of another version (migrate).
            `sqlock run` otherwise exits with the command's status (128+N if killed by signal N).
durations: 500ms, 30s, 10m, 2h, 1d, or a bare number of seconds.
)";

constexpr const char* migrate_help = R"(usage: sqlock [--url URL] migrate [--print | --status]

Creates or upgrades sqlock's tables in the database. Idempotent; safe when several hosts run it
at once. With --print, writes the DDL for the URL's backend to stdout instead (nothing is
applied; the database is not contacted), for a DBA's own migration tool. With --status, lists
each migration as applied or pending.
)";

constexpr const char* run_help =
    R"(usage: sqlock [--url URL] run NAME [--strategy S] [--ttl D] [--wait D] [--grace D] [--no-renew] -- CMD [ARGS...]

Acquires lock NAME, runs CMD with the grant's fencing token in $SQLOCK_TOKEN (and the name in
$SQLOCK_NAME), releases the lock when CMD exits, and exits with CMD's status.

  --strategy S   unique_key (default), select_for_update or optimistic_version
  --ttl D        lease length (default 30s). The lock is renewed every D/3 while CMD runs, so
                 a holder that dies frees it within D (select_for_update: at once)
  --wait D       how long to wait for the lock (default: forever; 0 = one try).
                 When the lock is not granted in time, CMD does not run and sqlock exits 75.
  --grace D      when the lock is lost while CMD runs (renewal refused, or the database
                 unreachable until the lease ran out), CMD gets SIGTERM, then SIGKILL after D
                 (default 10s), and sqlock exits 76
  --no-renew     do not renew: the lock is lost (and CMD stopped) once --ttl has passed

SIGINT, SIGTERM and SIGHUP are passed on to CMD.
)";

constexpr const char* list_help =
    R"(usage: sqlock [--url URL] status [--json | --prometheus] [--expired] [--name GLOB]
       sqlock [--url URL] list   (the same, without the summary line)

For every lock row: name, fencing token, hold count, strategy, holder (host:pid), how long it
has been held, and when its lease ends (relative and absolute UTC, by the database clock).
select_for_update holders are shown where the server tells (PostgreSQL).
  --expired     only leases that have expired (what `sqlock reap` would delete)
  --name GLOB   only names matching a shell pattern ("reports:*")
  --json        one JSON array; each object has exactly these fields:
                name, owner, host, pid, strategy, token, hold_count, held (bool),
                acquired_at, held_for_ms, expires_at, expires_in_ms, expired (bool).
                Times are UTC "YYYY-MM-DD HH:MM:SS.ffffff"; *_ms are integers.
  --prometheus  the Prometheus text format, for node_exporter's textfile collector:
                sqlock_locks_held{strategy}, sqlock_locks_expired,
                sqlock_oldest_lock_age_seconds, sqlock_lock_rows,
                sqlock_clock_steps_recent, sqlock_clock_step_last_seconds
The summary line of `status` is followed by a "clock:" line when sqlock processes noticed the
database server's clock step in the last 24 hours (connect_options::clock_step_threshold).
)";

constexpr const char* reap_help =
    R"(usage: sqlock [--url URL] reap [--dry-run] [--older-than D] [--batch N] [--settle D]
                          [--json]

Deletes expired lock rows (by the database clock) in batches of N (default 1000), each batch
one short statement: never a long table lock, never a live lease. Released rows go at once;
a lease that was never released (its holder crashed) only after this run has seen it unchanged
for its TTL, so that no step of the database's clock can make the reaper end a live lease:
the run waits up to --settle for that (default 1m); longer leases are left for a later run and
counted as deferred. Safe on several hosts at once.
  --older-than D  grace: only rows expired for at least D (default 0)
  --settle D      wait up to D for expired-looking leases to prove abandoned (default 1m)
  --dry-run       count what would be deleted; delete nothing
  --json          {"deleted", "expired", "deferred", "batches", "dry_run", "older_than_ms",
                   "batch", "elapsed_ms"}: integers, except dry_run (bool); "expired" is the
                   dry-run count
Exit 0 when done; 69/70/78 on errors (see sqlock --help).
)";

constexpr const char* release_help =
    R"(usage: sqlock [--url URL] release NAME --force [--actor WHO] [--json]

Break-glass for operators. Lease strategies: the row is freed and its fencing token moved
forward, so the old holder's renewals, releases and fenced writes fail from now on (it gets
its lost signal). select_for_update on PostgreSQL: the holder's session is ended. Recorded in
the <prefix>audit table with WHO (default: $USER@host). Exit 1 when there was nothing to
release.
  --json   {"name", "released", "strategy", "previous_owner", "previous_token", "new_token",
            "sessions_ended", "actor"}
)";

struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct options {
    std::string url;
    sqlock::connect_options connect;
    std::string command;
    std::vector<std::string> args; ///< command arguments before "--"
    std::vector<std::string> exec; ///< after "--"
    bool help = false;
};

std::chrono::milliseconds duration_arg(const std::string& flag, const std::string& value) {
    const auto d = parse_duration(value);
    if (!d)
        throw usage_error(flag + ": \"" + value + "\" is not a duration (try 500ms, 30s, 10m)");
    return *d;
}

options parse_args(int argc, char** argv) {
    options o;
    if (const char* env = std::getenv("SQLOCK_URL"))
        o.url = env;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                throw usage_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--") {
            for (++i; i < argc; ++i)
                o.exec.emplace_back(argv[i]);
            break;
        }
        if (a == "-h" || a == "--help")
            o.help = true;
        else if (a == "--url")
            o.url = value();
        else if (a == "--table-prefix")
            o.connect.table_prefix = value();
        else if (a == "--connect-timeout")
            o.connect.connect_timeout = duration_arg(a, value());
        else if (o.command.empty() && !a.starts_with("-"))
            o.command = a;
        else if (o.command.empty() && a == "--version")
            o.command = a;
        else
            o.args.push_back(a);
    }
    return o;
}

sqlock::database open(const options& o) {
    if (o.url.empty())
        throw usage_error("no database: pass --url URL or set SQLOCK_URL");
    return sqlock::connect(o.url, o.connect);
}

int cmd_migrate(const options& o) {
    bool print = false;
    bool status = false;
    for (const auto& a : o.args) {
        if (a == "--print")
            print = true;
        else if (a == "--status")
            status = true;
        else
            throw usage_error("migrate: unknown option " + a);
    }
    if (status) {
        auto connect = o.connect;
        connect.check_schema = false; // reporting versions is the point
        if (o.url.empty())
            throw usage_error("no database: pass --url URL or set SQLOCK_URL");
        auto db = sqlock::connect(o.url, connect);
        int pending = 0;
        for (const auto& m : db.migration_status()) {
            std::cout << (m.applied ? "applied  " : "pending  ") << m.name << "\n";
            pending += m.applied ? 0 : 1;
        }
        std::cout << "schema version " << db.schema_version() << ", this sqlock expects "
                  << sqlock::database::expected_schema_version(db.backend()) << " (" << pending
                  << " pending) in " << db.url() << "\n";
        return exit_ok;
    }
    if (print) {
        // Build the DDL without connecting: a DBA may not have access yet.
        std::cout << sqlock::migration_script_for(o.url, o.connect);
        return exit_ok;
    }
    auto connect = o.connect;
    connect.check_schema = false; // migrate is how an old schema gets current
    if (o.url.empty())
        throw usage_error("no database: pass --url URL or set SQLOCK_URL");
    auto db = sqlock::connect(o.url, connect);
    const int before = db.schema_version();
    db.migrate();
    const int after = db.schema_version();
    if (before == after)
        std::cout << "schema is up to date (version " << after << ") in " << db.url() << "\n";
    else
        std::cout << "migrated " << db.url() << " from version " << before << " to " << after
                  << "\n";
    return exit_ok;
}

volatile sig_atomic_t g_child = 0;
int g_wakeup_pipe[2] = {-1, -1}; ///< SIGCHLD and the lost signal wake the waiting main thread

void forward_signal(int sig) {
    if (g_child > 0)
        kill(static_cast<pid_t>(g_child), sig);
}

void on_sigchld(int) {
    const int saved = errno;
    const char c = 'c';
    [[maybe_unused]] const auto n = write(g_wakeup_pipe[1], &c, 1);
    errno = saved;
}

/// Exit status of a finished child, shell style.
int status_of(int status) {
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return exit_software;
}

/// The child's environment: ours plus SQLOCK_TOKEN and SQLOCK_NAME, built before fork() (the
/// child of a multi-threaded process may only call async-signal-safe functions).
std::vector<std::string> child_environment(const std::string& token, const std::string& name) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string_view entry(*e);
        if (!entry.starts_with("SQLOCK_TOKEN=") && !entry.starts_with("SQLOCK_NAME="))
            env.emplace_back(entry);
    }
    env.push_back("SQLOCK_TOKEN=" + token);
    env.push_back("SQLOCK_NAME=" + name);
    return env;
}

int cmd_run(const options& o) {
    if (o.args.empty())
        throw usage_error("run: missing lock NAME");
    const std::string name = o.args[0];
    sqlock::mutex_options mo;
    mo.renew = true;
    std::chrono::milliseconds grace = std::chrono::seconds(10);
    std::optional<std::chrono::milliseconds> wait;
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= o.args.size())
                throw usage_error(a + " needs a value");
            return o.args[++i];
        };
        if (a == "--strategy")
            mo.strategy = sqlock::parse_strategy(value());
        else if (a == "--ttl")
            mo.ttl = duration_arg(a, value());
        else if (a == "--wait")
            wait = duration_arg(a, value());
        else if (a == "--grace")
            grace = duration_arg(a, value());
        else if (a == "--no-renew")
            mo.renew = false;
        else
            throw usage_error("run: unknown option " + a);
    }
    if (o.exec.empty())
        throw usage_error("run: missing \"-- CMD\" to run under the lock");

    if (pipe2(g_wakeup_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    std::atomic<bool> lost{false};
    std::string lost_message;
    std::mutex lost_mutex;
    mo.on_lost = [&](const sqlock::lock_lost_event& event) {
        {
            std::lock_guard guard(lost_mutex);
            lost_message = std::string(sqlock::to_string(event.reason)) + ": " + event.message;
        }
        lost = true;
        const char c = 'l';
        [[maybe_unused]] const auto n = write(g_wakeup_pipe[1], &c, 1);
    };

    auto db = open(o);
    sqlock::mutex m(db, name, mo);
    const bool granted = !wait                ? (m.lock(), true)
                         : wait->count() == 0 ? m.try_lock()
                                              : m.try_lock_for(*wait);
    if (!granted) {
        std::cerr << "sqlock: lock \"" << name << "\" not granted within " << wait->count()
                  << " ms";
        try {
            if (const auto holder = db.find(name); holder && holder->held()) {
                std::cerr << ": held by " << holder->host << ":" << holder->pid << " (owner "
                          << holder->owner << ", token " << holder->token;
                if (holder->strategy != "select_for_update")
                    std::cerr << ", lease ends in " << holder->expires_in.count() << " ms";
                std::cerr << ")";
            }
        } catch (const std::exception&) {
            // Who holds it is a courtesy; the timeout is the answer.
        }
        std::cerr << "\n";
        return exit_timeout;
    }

    std::vector<char*> child_argv;
    for (const auto& e : o.exec)
        child_argv.push_back(const_cast<char*>(e.c_str()));
    child_argv.push_back(nullptr);
    auto env_storage = child_environment(std::to_string(m.token()), name);
    std::vector<char*> child_env;
    for (auto& e : env_storage)
        child_env.push_back(e.data());
    child_env.push_back(nullptr);
    const std::string exec_failed = "sqlock: cannot run " + o.exec[0] + "\n";

    struct sigaction sa {};
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP})
        sigaction(sig, &sa, nullptr);
    struct sigaction chld {};
    chld.sa_handler = on_sigchld;
    sigemptyset(&chld.sa_mask);
    chld.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &chld, nullptr);

    const pid_t child = fork();
    if (child < 0) {
        std::cerr << "sqlock: fork failed: " << std::strerror(errno) << "\n";
        m.unlock();
        return exit_software;
    }
    if (child == 0) {
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD})
            sigaction(sig, &dfl, nullptr);
        execvpe(child_argv[0], child_argv.data(), child_env.data());
        const int err = errno;
        [[maybe_unused]] const auto n = write(2, exec_failed.data(), exec_failed.size());
        _exit(err == ENOENT ? 127 : 126);
    }
    g_child = child;

    // Wait for the command; if the lock is lost meanwhile, stop it: SIGTERM, then SIGKILL after
    // the grace period.
    int status = 0;
    std::optional<std::chrono::steady_clock::time_point> kill_at;
    for (;;) {
        const pid_t done = waitpid(child, &status, WNOHANG);
        if (done == child)
            break;
        if (done < 0 && errno != EINTR) {
            status = -1;
            break;
        }
        if (lost && !kill_at) {
            kill(child, SIGTERM);
            kill_at = std::chrono::steady_clock::now() + grace;
        }
        int timeout_ms = -1;
        if (kill_at) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                *kill_at - std::chrono::steady_clock::now());
            if (left.count() <= 0) {
                kill(child, SIGKILL);
                kill_at = std::chrono::steady_clock::time_point::max();
            } else {
                timeout_ms = static_cast<int>(std::min<long long>(left.count(), 60'000));
            }
        }
        pollfd pfd{g_wakeup_pipe[0], POLLIN, 0};
        poll(&pfd, 1, timeout_ms);
        char drain[64];
        while (read(g_wakeup_pipe[0], drain, sizeof drain) > 0) {
        }
    }
    g_child = 0;
    m.unlock();
    if (!lost && m.last_loss() != sqlock::loss_reason::none) {
        // Found only at release (say, force-released by an operator): the command may have
        // run without the lock for a while.
        lost = true;
        std::lock_guard guard(lost_mutex);
        lost_message = std::string(sqlock::to_string(m.last_loss())) + ": " + m.last_error();
    }
    if (lost) {
        std::lock_guard guard(lost_mutex);
        std::cerr << "sqlock: lock \"" << name << "\" was lost while the command ran ("
                  << lost_message << ")\n";
        return exit_lock_lost;
    }
    if (const auto failure = m.last_error(); !failure.empty())
        std::cerr << "sqlock: warning: " << failure << "\n";
    return status < 0 ? exit_software : status_of(status);
}

std::string lock_json(const sqlock::lock_info& l) {
    std::ostringstream out;
    out << "{\"name\": " << json_quote(l.name) << ", \"owner\": " << json_quote(l.owner)
        << ", \"host\": " << json_quote(l.host) << ", \"pid\": " << l.pid
        << ", \"strategy\": " << json_quote(l.strategy) << ", \"token\": " << l.token
        << ", \"hold_count\": " << l.hold_count << ", \"held\": " << (l.held() ? "true" : "false")
        << ", \"acquired_at\": " << json_quote(l.acquired_at)
        << ", \"held_for_ms\": " << l.held_for.count()
        << ", \"expires_at\": " << json_quote(l.expires_at)
        << ", \"expires_in_ms\": " << l.expires_in.count()
        << ", \"expired\": " << (l.expired() ? "true" : "false") << "}";
    return out.str();
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

void print_prometheus(const std::vector<sqlock::lock_info>& locks,
                      const std::vector<sqlock::clock_step_record>& steps) {
    std::map<std::string, int> held;
    for (const char* s : {"unique_key", "select_for_update", "optimistic_version"})
        held[s] = 0;
    int expired = 0;
    double oldest = 0;
    for (const auto& l : locks) {
        if (l.held()) {
            ++held[l.strategy];
            oldest = std::max(oldest, static_cast<double>(l.held_for.count()) / 1000.0);
        } else if (l.strategy != "select_for_update" && l.expired()) {
            ++expired;
        }
    }
    std::cout << "# HELP sqlock_locks_held Locks held right now, by strategy.\n"
              << "# TYPE sqlock_locks_held gauge\n";
    for (const auto& [strategy, n] : held)
        std::cout << "sqlock_locks_held{strategy=\"" << strategy << "\"} " << n << "\n";
    std::cout << "# HELP sqlock_locks_expired Expired lock rows waiting for the reaper.\n"
              << "# TYPE sqlock_locks_expired gauge\n"
              << "sqlock_locks_expired " << expired << "\n"
              << "# HELP sqlock_oldest_lock_age_seconds How long the longest-held lock has been "
                 "held (0 when none is).\n"
              << "# TYPE sqlock_oldest_lock_age_seconds gauge\n"
              << "sqlock_oldest_lock_age_seconds " << oldest << "\n"
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

int cmd_status(const options& o) {
    bool json = false;
    bool prometheus = false;
    bool only_expired = false;
    std::string glob;
    for (std::size_t i = 0; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        if (a == "--json")
            json = true;
        else if (a == "--prometheus")
            prometheus = true;
        else if (a == "--expired")
            only_expired = true;
        else if (a == "--name" && i + 1 < o.args.size())
            glob = o.args[++i];
        else
            throw usage_error(o.command + ": unknown option " + a);
    }
    auto db = open(o);
    auto locks = db.list();
    if (prometheus) {
        print_prometheus(locks, recent_clock_steps(db));
        return exit_ok;
    }
    std::erase_if(locks, [&](const sqlock::lock_info& l) {
        if (only_expired && (l.strategy == "select_for_update" || !l.expired()))
            return true;
        return !glob.empty() && fnmatch(glob.c_str(), l.name.c_str(), 0) != 0;
    });
    if (json) {
        std::cout << "[";
        for (std::size_t i = 0; i < locks.size(); ++i)
            std::cout << (i ? ",\n " : "\n ") << lock_json(locks[i]);
        std::cout << (locks.empty() ? "]\n" : "\n]\n");
        return exit_ok;
    }
    if (o.command == "status") {
        const auto held =
            std::count_if(locks.begin(), locks.end(), [](const auto& l) { return l.held(); });
        std::cout << held << " held, " << locks.size() - static_cast<std::size_t>(held)
                  << " free or expired, in " << db.url() << "\n";
        if (const auto steps = recent_clock_steps(db); !steps.empty()) {
            const auto& last = steps.front();
            std::printf("clock: the database's clock stepped %zu time%s in the last 24 h; latest "
                        "%+.1fs at %s UTC, seen by %s (locks are unaffected)\n",
                        steps.size(), steps.size() == 1 ? "" : "s",
                        static_cast<double>(last.step.count()) / 1000.0, last.seen_at.c_str(),
                        last.observer.c_str());
        }
    }
    if (locks.empty()) {
        if (o.command != "status")
            std::cout << "no locks in " << db.url() << "\n";
        return exit_ok;
    }
    std::printf("%-32s %10s %5s %-18s %-24s %-14s %s\n", "NAME", "TOKEN", "HOLDS", "STRATEGY",
                "HOLDER", "HELD FOR", "EXPIRES");
    for (const auto& l : locks) {
        const bool transactional = l.strategy == "select_for_update";
        const std::string holder =
            l.held() ? l.host + ":" + std::to_string(l.pid) : std::string("-");
        char held_for[32] = "-";
        if (l.held())
            std::snprintf(held_for, sizeof held_for, "%.1fs",
                          static_cast<double>(l.held_for.count()) / 1000.0);
        char expires[96];
        if (transactional) {
            // Held by an open transaction: no lease, it lasts as long as the holder's session.
            std::snprintf(expires, sizeof expires, "%s", l.held() ? "with its session" : "free");
        } else if (l.owner.empty()) {
            std::snprintf(expires, sizeof expires, "free");
        } else {
            const double secs = static_cast<double>(l.expires_in.count()) / 1000.0;
            if (l.expired())
                std::snprintf(expires, sizeof expires, "expired %.1fs ago (%s UTC)", -secs,
                              l.expires_at.c_str());
            else
                std::snprintf(expires, sizeof expires, "in %.1fs (%s UTC)", secs,
                              l.expires_at.c_str());
        }
        const std::string token = l.token > 0 ? std::to_string(l.token) : "-";
        std::printf("%-32s %10s %5lld %-18s %-24s %-14s %s\n", l.name.c_str(), token.c_str(),
                    static_cast<long long>(l.hold_count), l.strategy.c_str(), holder.c_str(),
                    held_for, expires);
    }
    return exit_ok;
}

int cmd_reap(const options& o) {
    sqlock::reap_options ro;
    ro.settle = std::chrono::minutes(1);
    bool json = false;
    for (std::size_t i = 0; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= o.args.size())
                throw usage_error(a + " needs a value");
            return o.args[++i];
        };
        if (a == "--dry-run")
            ro.dry_run = true;
        else if (a == "--older-than")
            ro.older_than = duration_arg(a, value());
        else if (a == "--settle")
            ro.settle = duration_arg(a, value());
        else if (a == "--batch") {
            const auto v = value();
            std::size_t n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc{} || end != v.data() + v.size() || n == 0)
                throw usage_error("--batch: \"" + v + "\" is not a positive number");
            ro.batch = n;
        } else if (a == "--json")
            json = true;
        else
            throw usage_error("reap: unknown option " + a);
    }
    auto db = open(o);
    const auto start = std::chrono::steady_clock::now();
    const auto r = db.reap(ro);
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (json) {
        std::cout << "{\"deleted\": " << r.deleted << ", \"expired\": " << r.expired
                  << ", \"deferred\": " << r.deferred << ", \"batches\": " << r.batches
                  << ", \"dry_run\": " << (ro.dry_run ? "true" : "false")
                  << ", \"older_than_ms\": " << ro.older_than.count() << ", \"batch\": " << ro.batch
                  << ", \"elapsed_ms\": " << elapsed.count() << "}\n";
    } else if (ro.dry_run) {
        std::cout << r.expired << " expired rows would be deleted from " << db.url() << "\n";
    } else {
        std::cout << "deleted " << r.deleted << " expired rows in " << r.batches << " batches from "
                  << db.url() << " (" << elapsed.count() << " ms)";
        if (r.deferred > 0)
            std::cout << "; " << r.deferred
                      << " expired-looking leases deferred (not yet seen unchanged for their TTL)";
        std::cout << "\n";
    }
    return exit_ok;
}

int cmd_release(const options& o) {
    if (o.args.empty())
        throw usage_error("release: missing lock NAME");
    const std::string name = o.args[0];
    bool force = false;
    bool json = false;
    std::string actor;
    for (std::size_t i = 1; i < o.args.size(); ++i) {
        const auto& a = o.args[i];
        if (a == "--force")
            force = true;
        else if (a == "--json")
            json = true;
        else if (a == "--actor" && i + 1 < o.args.size())
            actor = o.args[++i];
        else
            throw usage_error("release: unknown option " + a);
    }
    if (!force)
        throw usage_error("release: breaking someone else's lock needs --force (the holder "
                          "loses it; its fenced writes will be refused)");
    if (actor.empty()) {
        const char* user = std::getenv("USER");
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        actor = std::string(user ? user : "unknown") + "@" + host + " (sqlock release --force)";
    }
    auto db = open(o);
    const auto r = db.force_release(name, actor);
    if (json) {
        std::cout << "{\"name\": " << json_quote(name)
                  << ", \"released\": " << (r.released ? "true" : "false")
                  << ", \"strategy\": " << json_quote(r.strategy)
                  << ", \"previous_owner\": " << json_quote(r.previous_owner)
                  << ", \"previous_token\": " << r.previous_token
                  << ", \"new_token\": " << r.new_token
                  << ", \"sessions_ended\": " << r.sessions_ended
                  << ", \"actor\": " << json_quote(actor) << "}\n";
    } else if (!r.released) {
        std::cout << "nothing to release: lock \"" << name << "\" is not held in " << db.url()
                  << "\n";
    } else if (r.strategy == "select_for_update") {
        std::cout << "released \"" << name << "\": ended " << r.sessions_ended
                  << " holder session(s); recorded as " << actor << "\n";
    } else {
        std::cout << "released \"" << name << "\" (was "
                  << (r.previous_owner.empty() ? std::string("free") : r.previous_owner)
                  << "); token " << r.previous_token << " -> " << r.new_token
                  << ", so the old holder's fenced writes fail; recorded as " << actor << "\n";
    }
    return r.released ? exit_ok : exit_not_found;
}

int exit_code_for(const sqlock::error& e) {
    switch (e.code()) {
    case sqlock::errc::invalid_argument:
        return exit_usage;
    case sqlock::errc::connection:
        return exit_unavailable;
    case sqlock::errc::schema_missing:
    case sqlock::errc::schema_mismatch:
        return exit_config;
    default:
        return exit_software;
    }
}

} // namespace

int main(int argc, char** argv) {
    try {
        const auto o = parse_args(argc, argv);
        static const std::map<std::string, std::pair<int (*)(const options&), const char*>>
            commands = {
                {"migrate", {cmd_migrate, migrate_help}}, {"run", {cmd_run, run_help}},
                {"list", {cmd_status, list_help}},        {"status", {cmd_status, list_help}},
                {"reap", {cmd_reap, reap_help}},          {"release", {cmd_release, release_help}}};
        if (o.command == "--version") {
            std::cout << "sqlock " << SQLOCK_VERSION_STRING << "\n";
            return exit_ok;
        }
        if (o.command.empty() || o.command == "help") {
            std::cout << main_help;
            return o.help || o.command == "help" ? exit_ok : exit_usage;
        }
        const auto it = commands.find(o.command);
        if (it == commands.end())
            throw usage_error("unknown command \"" + o.command + "\"");
        if (o.help) {
            std::cout << it->second.second;
            return exit_ok;
        }
        return it->second.first(o);
    } catch (const usage_error& e) {
        std::cerr << "sqlock: " << e.what() << "\n(see sqlock --help)\n";
        return exit_usage;
    } catch (const sqlock::error& e) {
        std::cerr << "sqlock: " << e.what() << "\n";
        return exit_code_for(e);
    } catch (const std::exception& e) {
        std::cerr << "sqlock: " << e.what() << "\n";
        return exit_software;
    }
}
