// sqlock — command-line tool: migrate, run a command under a lock, list locks.
#include "cli.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sqlock/sqlock.hpp>
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
  migrate   create or upgrade the lock tables (--print: only print the DDL)
  run       run a command while holding a lock (flock(1) for a fleet)
  list      show the current lock rows

global options (before or after COMMAND):
  --url URL            database URL; default: $SQLOCK_URL
                       postgresql://user:pw@host:port/db, mysql://..., mariadb://...,
                       sqlite:///abs/path.db, sqlite:relative.db
  --table-prefix P     prefix of sqlock's tables (default sqlock_)
  --connect-timeout D  bound on connecting (default 5s)
  -h, --help           help for sqlock or for COMMAND
  --version            print the version

exit codes: 0 ok; 64 bad usage; 69 database unreachable or login failed; 70 other error;
            75 lock not granted within --wait; 78 lock tables missing (run sqlock migrate).
            `sqlock run` otherwise exits with the command's status (128+N if killed by signal N).
durations: 500ms, 30s, 10m, 2h, 1d, or a bare number of seconds.
)";

constexpr const char* migrate_help = R"(usage: sqlock [--url URL] migrate [--print]

Creates or upgrades sqlock's tables in the database. Idempotent; safe when several hosts run it
at once. With --print, writes the DDL for the URL's backend to stdout instead (nothing is
applied; the database is not contacted), for a DBA's own migration tool.
)";

constexpr const char* run_help =
    R"(usage: sqlock [--url URL] run NAME [--strategy S] [--ttl D] [--wait D] -- CMD [ARGS...]

Acquires lock NAME, runs CMD with the grant's fencing token in $SQLOCK_TOKEN (and the name in
$SQLOCK_NAME), releases the lock when CMD exits, and exits with CMD's status.

  --strategy S   unique_key (default) or select_for_update
  --ttl D        lease length (default 30s); a holder that dies frees the lock after D
  --wait D       how long to wait for the lock (default: forever; 0 = one try).
                 When the lock is not granted in time, CMD does not run and sqlock exits 75.

SIGINT, SIGTERM and SIGHUP are passed on to CMD. The lease is not renewed while CMD runs:
choose --ttl longer than CMD's run time.
)";

constexpr const char* list_help = R"(usage: sqlock [--url URL] list [--json]

Lists the lock rows: name, fencing token, hold count, strategy, holder (host:pid) and time
until expiry by the database clock. --json writes one JSON array of objects with the fields
name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at (UTC,
"YYYY-MM-DD HH:MM:SS.ffffff"), expires_in_ms and expired.
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
    for (const auto& a : o.args) {
        if (a == "--print")
            print = true;
        else
            throw usage_error("migrate: unknown option " + a);
    }
    if (print) {
        // Build the DDL without connecting: a DBA may not have access yet.
        std::cout << sqlock::migration_script_for(o.url, o.connect);
        return exit_ok;
    }
    auto db = open(o);
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

void forward_signal(int sig) {
    if (g_child > 0)
        kill(static_cast<pid_t>(g_child), sig);
}

int wait_for_child(pid_t child) {
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR)
            return exit_software;
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return exit_software;
}

int cmd_run(const options& o) {
    if (o.args.empty())
        throw usage_error("run: missing lock NAME");
    const std::string name = o.args[0];
    sqlock::mutex_options mo;
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
        else
            throw usage_error("run: unknown option " + a);
    }
    if (o.exec.empty())
        throw usage_error("run: missing \"-- CMD\" to run under the lock");

    auto db = open(o);
    sqlock::mutex m(db, name, mo);
    const bool granted = !wait                ? (m.lock(), true)
                         : wait->count() == 0 ? m.try_lock()
                                              : m.try_lock_for(*wait);
    if (!granted) {
        std::cerr << "sqlock: lock \"" << name << "\" not granted within " << wait->count()
                  << " ms\n";
        return exit_timeout;
    }
    const std::string token = std::to_string(m.token());

    std::vector<char*> child_argv;
    for (const auto& e : o.exec)
        child_argv.push_back(const_cast<char*>(e.c_str()));
    child_argv.push_back(nullptr);

    struct sigaction sa {};
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP})
        sigaction(sig, &sa, nullptr);

    const pid_t child = fork();
    if (child < 0) {
        std::cerr << "sqlock: fork failed: " << std::strerror(errno) << "\n";
        m.unlock();
        return exit_software;
    }
    if (child == 0) {
        setenv("SQLOCK_TOKEN", token.c_str(), 1);
        setenv("SQLOCK_NAME", name.c_str(), 1);
        for (const int sig : {SIGINT, SIGTERM, SIGHUP})
            signal(sig, SIG_DFL);
        execvp(child_argv[0], child_argv.data());
        const int err = errno;
        std::cerr << "sqlock: cannot run " << o.exec[0] << ": " << std::strerror(err) << "\n";
        _exit(err == ENOENT ? 127 : 126);
    }
    g_child = child;
    const int status = wait_for_child(child);
    g_child = 0;
    m.unlock();
    if (const auto failure = m.last_error(); !failure.empty())
        std::cerr << "sqlock: warning: " << failure << "\n";
    return status;
}

int cmd_list(const options& o) {
    bool json = false;
    for (const auto& a : o.args) {
        if (a == "--json")
            json = true;
        else
            throw usage_error("list: unknown option " + a);
    }
    auto db = open(o);
    const auto locks = db.list();
    if (json) {
        std::cout << "[";
        for (std::size_t i = 0; i < locks.size(); ++i) {
            const auto& l = locks[i];
            std::cout << (i ? ",\n " : "\n ") << "{\"name\": " << json_quote(l.name)
                      << ", \"owner\": " << json_quote(l.owner)
                      << ", \"host\": " << json_quote(l.host) << ", \"pid\": " << l.pid
                      << ", \"strategy\": " << json_quote(l.strategy) << ", \"token\": " << l.token
                      << ", \"hold_count\": " << l.hold_count
                      << ", \"acquired_at\": " << json_quote(l.acquired_at)
                      << ", \"expires_at\": " << json_quote(l.expires_at)
                      << ", \"expires_in_ms\": " << l.expires_in.count()
                      << ", \"expired\": " << (l.expired() ? "true" : "false") << "}";
        }
        std::cout << (locks.empty() ? "]\n" : "\n]\n");
        return exit_ok;
    }
    if (locks.empty()) {
        std::cout << "no locks in " << db.url() << "\n";
        return exit_ok;
    }
    std::printf("%-32s %10s %5s %-17s %-28s %s\n", "NAME", "TOKEN", "HOLDS", "STRATEGY", "HOLDER",
                "EXPIRES");
    for (const auto& l : locks) {
        const bool transactional = l.strategy == "select_for_update";
        std::string holder = l.host.empty() ? "-" : l.host + ":" + std::to_string(l.pid);
        char expires[96];
        if (transactional) {
            // Held by an open transaction: no lease, it lasts as long as the holder's session.
            std::snprintf(expires, sizeof expires, "%s",
                          l.owner.empty() ? "free" : "held while its session lives");
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
        std::printf("%-32s %10s %5lld %-17s %-28s %s\n", l.name.c_str(), token.c_str(),
                    static_cast<long long>(l.hold_count), l.strategy.c_str(), holder.c_str(),
                    expires);
    }
    return exit_ok;
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
            commands = {{"migrate", {cmd_migrate, migrate_help}},
                        {"run", {cmd_run, run_help}},
                        {"list", {cmd_list, list_help}}};
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
