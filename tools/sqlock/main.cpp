// sqlock — command-line tool: migrate, run a command under a lock, list locks. This file reads
// the command line and hands it to the command (cmd_*.cpp), and turns errors into exit codes.
#include "cli.hpp"
#include "command.hpp"
#include "help.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sqlock/version.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace {

using namespace sqlock::cli;

/// `ps` shows every process's arguments to every user: the password of a `--url` is
/// overwritten with x's in our own argv (/proc/PID/cmdline reads that memory), as the mysql
/// client does, once it has been copied.
void hide_password(char* arg) {
    const std::string_view url(arg);
    const std::string without = sqlock::url_without_password(url);
    if (without.size() >= url.size())
        return;
    // `without` lacks ":password": the first byte that differs is that ':'.
    std::size_t colon = 0;
    while (colon < without.size() && url[colon] == without[colon])
        ++colon;
    std::memset(arg + colon + 1, 'x', url.size() - without.size() - 1);
}

/// --option=value, for the global options: the same as "--option value". Returns the value
/// and leaves "--option" in `a`; nullopt, `a` untouched, for any other argument. (Command
/// options are split by normalize_args.)
std::optional<std::string> split_global_option(std::string& a) {
    if (const auto eq = a.find('='); a.starts_with("--") && eq != std::string::npos) {
        const auto option = a.substr(0, eq);
        if (option == "--url" || option == "--password-file" || option == "--table-prefix" ||
            option == "--connect-timeout") {
            auto value = a.substr(eq + 1);
            a = option;
            return value;
        }
        if (option == "--help" || option == "--version")
            throw usage_error(option + " takes no value");
    }
    return std::nullopt;
}

/// Whether the command only reads the database (status, list, history, check, leader,
/// migrate --status); migrate --print does not connect at all.
bool reads_only(const options& o) {
    return o.command == "status" || o.command == "list" || o.command == "history" ||
           o.command == "check" || o.command == "leader" ||
           (o.command == "migrate" &&
            std::any_of(o.args.begin(), o.args.end(),
                        [](const std::string& a) { return a == "--status" || a == "--print"; }));
}

/// The command line: global options (anywhere; $SQLOCK_URL and $SQLOCK_PASSWORD_FILE as
/// their defaults), the command, its arguments (normalized, see normalize_args) and what
/// follows "--". The password of --url is hidden from `ps` (hide_password).
options parse_args(int argc, char** argv) {
    options o;
    if (const char* env = std::getenv("SQLOCK_URL"))
        o.url = env;
    if (const char* env = std::getenv("SQLOCK_PASSWORD_FILE"))
        o.connect.password_file = env;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        const auto inline_value = split_global_option(a);
        auto value = [&]() -> std::string {
            if (inline_value)
                return *inline_value;
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
        else if (a == "--url") {
            o.url = value();
            o.urls.push_back(o.url);
            // argv[i] is the URL, or "--url=URL": the password is overwritten either way.
            hide_password(argv[i] + (inline_value ? std::strlen("--url=") : 0));
        } else if (a == "--password-file") {
            o.connect.password_file = value();
            o.password_file_flag = true;
            if (o.connect.password_file.empty())
                throw usage_error("--password-file needs a file name");
        } else if (a == "--table-prefix")
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
    if (!o.help) {
        // Options before or after the NAME, --option=value (cli.hpp).
        auto normalized = normalize_args(o.command, std::move(o.args));
        o.args = std::move(normalized.args);
        o.args_error = std::move(normalized.error);
    }
    // Commands that only read never create a SQLite database (a mistyped path is an error,
    // not a new empty file).
    if (reads_only(o))
        o.connect.create_sqlite_file = false;
    return o;
}

/// The exit status for a library error that ends a command (cli.hpp exit_code).
int exit_code_for(const sqlock::error& e) {
    // `run --wait`: the server refused connections (no free slot), did not answer them in
    // time, or (several hosts) none accepted writes, until the deadline; like a lock held for
    // all of --wait, the command did not run and may be tried again later.
    if (dynamic_cast<const not_granted_in_time*>(&e) != nullptr)
        return exit_timeout;
    switch (e.code()) {
    case sqlock::errc::invalid_argument:
        return exit_usage;
    case sqlock::errc::connection:
        return exit_unavailable;
    case sqlock::errc::schema_missing:
    case sqlock::errc::schema_mismatch:
    case sqlock::errc::topology:
        return exit_config;
    default:
        return exit_software;
    }
}

/// Commands that take several --url: the members of a quorum lock.
bool takes_quorum(const std::string& command) {
    return command == "run" || command == "migrate" || command == "status" || command == "list" ||
           command == "release" || command == "reseed";
}

} // namespace

int main(int argc, char** argv) {
    try {
        const auto o = parse_args(argc, argv);
        database_for_jobs().url = o.url;
        if (o.password_file_flag) {
            std::error_code ec;
            const auto path = std::filesystem::absolute(o.connect.password_file, ec);
            database_for_jobs().password_file = ec ? o.connect.password_file : path.string();
        }
        static const std::map<std::string, std::pair<int (*)(const options&), const char*>>
            commands = {
                {"migrate", {cmd_migrate, migrate_help}}, {"run", {cmd_run, run_help}},
                {"list", {cmd_status, list_help}},        {"status", {cmd_status, list_help}},
                {"reap", {cmd_reap, reap_help}},          {"release", {cmd_release, release_help}},
                {"history", {cmd_history, history_help}}, {"check", {cmd_check, check_help}},
                {"leader", {cmd_leader, leader_help}},    {"reseed", {cmd_reseed, reseed_help}}};
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
        if (!o.args_error.empty()) {
            if (o.command == "check") { // a monitoring plugin: bad usage is UNKNOWN (3) too
                std::cout << "SQLOCK UNKNOWN - " << o.args_error << "\n";
                return nagios_unknown;
            }
            throw usage_error(o.args_error);
        }
        if (o.urls.size() > 1 && !takes_quorum(o.command))
            throw usage_error(o.command +
                              " takes one --url (several are the members of a quorum "
                              "lock: for run, status, list, release, reseed and migrate)");
        return it->second.first(o);
    } catch (const usage_error& e) {
        std::cerr << "sqlock: " << e.what() << "\n(see sqlock --help)\n";
        return exit_usage;
    } catch (const sqlock::error& e) {
        std::cerr << "sqlock: " << readable_message(e.what()) << "\n"; // no raw control bytes
        return exit_code_for(e);
    } catch (const std::exception& e) {
        std::cerr << "sqlock: " << readable_message(e.what()) << "\n";
        return exit_software;
    }
}
