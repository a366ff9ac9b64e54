// The CLI behaves as people expect (issue 31, items 3, 4 and 6): `release --force` of a lock
// nobody holds changes nothing and exits 1; the URL's password field, and only it, is masked
// in every message; --opt=value; options before or after NAME; a hint when `run`'s command
// lacks "--"; commands that only read never create an SQLite file; lock names printed with
// their control characters escaped. Real `sqlock` processes throughout.
#include "backend_fixture.hpp"
#include "base/config.hpp"
#include "database/database_impl.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unistd.h>

using namespace std::chrono_literals;
using test::db;
using test::unique_name;

namespace {

struct cli_result {
    int status = -1;
    std::string out;
    std::string err;
};

/// The CLI with `args`; SQLOCK_URL set to the backend's URL unless `with_url_env` is false.
cli_result sqlock_cli(const std::vector<std::string>& args, bool with_url_env = true) {
    static int counter = 0;
    const auto base = test::backend().scratch_dir + "/habits-" + std::to_string(getpid()) + "-" +
                      std::to_string(++counter);
    std::vector<std::string> argv{test::cli_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env;
    if (with_url_env)
        env.push_back("SQLOCK_URL=" + test::backend().url);
    const pid_t p = test::spawn(argv, env, base + ".out", base + ".err");
    cli_result r;
    r.status = test::wait_exit(p);
    r.out = test::read_file(base + ".out");
    r.err = test::read_file(base + ".err");
    return r;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

std::string strategy_arg() {
    return std::string(sqlock::to_string(test::strategy()));
}

/// Rows in the audit table for `name`.
std::int64_t audit_rows(const std::string& name) {
    auto s = sqlock::detail::impl_of(db()).checkout();
    const auto res = s->query("SELECT COUNT(*) FROM " + db().table_prefix() +
                              "audit WHERE name = '" + name + "'");
    return std::stoll(res.rows.at(0).at(0).value_or("0"));
}

std::int64_t token_of(const std::string& name) {
    const auto row = test::row_of(name);
    REQUIRE(row.has_value());
    return row->token;
}

sqlock::mutex_options strategy_options(sqlock::strategy s) {
    auto o = test::opts();
    o.strategy = s;
    return o;
}

} // namespace

TEST_SUITE("cli_habits") {

    TEST_CASE("release --force of a free row: exit 1, no token bump, no audit row") {
        // optimistic_version keeps its row, free, after a release.
        const auto name = unique_name("habits-free");
        {
            sqlock::mutex m(db(), name, strategy_options(sqlock::strategy::optimistic_version));
            m.lock();
            m.unlock();
        }
        const auto token = token_of(name);
        for (int i = 0; i < 2; ++i) {
            const auto r = sqlock_cli({"release", name, "--force"});
            CAPTURE(r.out);
            CAPTURE(r.err);
            CHECK(r.status == 1);
            CHECK(contains(r.out, "nothing to release"));
            CHECK_FALSE(contains(r.out, "released \""));
            CHECK(token_of(name) == token);
            CHECK(audit_rows(name) == 0);
        }
        const auto json = sqlock_cli({"release", "--force", "--json", name});
        CHECK(json.status == 1);
        const auto j = test::parse_json(json.out);
        CHECK_FALSE(j.at("released").get<bool>());
        CHECK(j.at("new_token").get<std::int64_t>() == token);
        CHECK(token_of(name) == token);
        CHECK(audit_rows(name) == 0);
        // No row at all: the same.
        CHECK(sqlock_cli({"release", "--force", unique_name("habits-none")}).status == 1);
    }

    TEST_CASE("release --force NAME (option first) of a held lock: bump and one audit row; "
              "then the free row is left alone") {
        const auto name = unique_name("habits-held");
        sqlock::mutex holder(db(), name, strategy_options(sqlock::strategy::unique_key));
        holder.lock();
        const auto old_token = holder.token();
        const auto r = sqlock_cli({"release", "--force", "--actor=habits-test", name});
        CAPTURE(r.err);
        CHECK(r.status == 0);
        CHECK(contains(r.out, "released \"" + name + "\""));
        const auto new_token = token_of(name);
        CHECK(new_token > old_token);
        CHECK(audit_rows(name) == 1);
        // The row stays, free: a second forced release finds nothing to do.
        const auto again = sqlock_cli({"release", "--force", name});
        CHECK(again.status == 1);
        CHECK(token_of(name) == new_token);
        CHECK(audit_rows(name) == 1);
        holder.unlock(); // reports the loss; nothing to check here
    }

    TEST_CASE("release --force of an expired holder still moves its token") {
        const auto name = unique_name("habits-expired");
        auto options = strategy_options(sqlock::strategy::unique_key);
        options.ttl = 2s;
        options.renew = false;
        sqlock::mutex holder(db(), name, options);
        holder.lock();
        const auto old_token = holder.token();
        test::backdate(db(), name, 60s);
        const auto r = sqlock_cli({"release", name, "--force"});
        CAPTURE(r.err);
        CHECK(r.status == 0);
        CHECK(token_of(name) > old_token);
        CHECK(audit_rows(name) == 1);
        holder.unlock();
    }

    TEST_CASE("--opt=value for global and command options") {
        const auto name = unique_name("habits-eq");
        const auto r = sqlock_cli({"--url=" + test::backend().url, "--connect-timeout=5s",
                                   "--table-prefix=sqlock_", "run", "--wait=30s", "--ttl=5s",
                                   "--strategy=" + strategy_arg(), name, "--", "/bin/sh", "-c",
                                   "echo \"$SQLOCK_NAME\""},
                                  false);
        CAPTURE(r.err);
        CHECK(r.status == 0);
        CHECK(r.out == name + "\n");
        const auto status = sqlock_cli({"status", "--json", "--name=" + name});
        CAPTURE(status.err);
        CHECK(status.status == 0);
        const auto flag = sqlock_cli({"status", "--json=yes"});
        CHECK(flag.status == 64);
        CHECK(contains(flag.err, "--json takes no value"));
        const auto bad = sqlock_cli({"run", name, "--ttl=forever", "--", "true"});
        CHECK(bad.status == 64);
        CHECK(contains(bad.err, "--ttl: \"forever\" is not a duration"));
    }

    TEST_CASE("options before or after NAME") {
        const auto name = unique_name("habits-order");
        const auto r = sqlock_cli({"run", "--wait", "0", "--ttl", "5s", name, "--", "/bin/sh", "-c",
                                   "echo \"$SQLOCK_NAME\""});
        CAPTURE(r.err);
        CHECK(r.status == 0);
        CHECK(r.out == name + "\n");
        // A value option's value is never taken for the NAME.
        const auto slot = sqlock_cli({"run", "--slot", "s1", name, "--", "true"});
        CAPTURE(slot.err);
        CHECK(slot.status == 0);
        const auto history = sqlock_cli({"history", "--json", "--limit", "5", name});
        CAPTURE(history.err);
        CHECK(history.status == 0);
        const auto rows = test::parse_json(history.out);
        REQUIRE(rows.size() == 1);
        CHECK(rows[0].at("slot").get<std::string>() == "s1");
        const auto leader = sqlock_cli({"leader", "--json", unique_name("habits-nobody")});
        CHECK(leader.status == 1);
        CHECK_FALSE(test::parse_json(leader.out).at("leader").get<bool>());
        const auto missing = sqlock_cli({"release", "--force"});
        CHECK(missing.status == 64);
        CHECK(contains(missing.err, "release: missing lock NAME"));
        const auto no_value = sqlock_cli({"release", name, "--force", "--actor"});
        CHECK(no_value.status == 64);
        CHECK(contains(no_value.err, "--actor needs a value"));
    }

    TEST_CASE("run NAME CMD without \"--\": a hint") {
        const auto name = unique_name("habits-hint");
        const auto r = sqlock_cli({"run", name, "true"});
        CHECK(r.status == 64);
        CHECK(contains(r.err, "run: \"true\" is not an option; put the command after \"--\": "
                              "sqlock run " +
                                  name + " -- true"));
        const auto two = sqlock_cli({"run", "--wait", "0", name, "echo", "hi"});
        CHECK(two.status == 64);
        CHECK(contains(two.err, "sqlock run " + name + " -- echo hi"));
        CHECK_FALSE(test::row_of(name).has_value()); // nothing was run or locked
        const auto extra = sqlock_cli({"release", name, "other", "--force"});
        CHECK(extra.status == 64);
        CHECK(contains(extra.err, "release: unexpected argument \"other\""));
    }

#ifdef SQLOCK_TEST_SQLITE
    TEST_CASE("commands that only read never create an SQLite database") {
        const auto dir = test::backend().scratch_dir + "/" + unique_name("habits-ro");
        std::filesystem::create_directories(dir);
        const auto path = dir + "/mistyped.db";
        const std::string url = "sqlite://" + path;
        const std::vector<std::vector<std::string>> commands = {
            {"status"},         {"status", "--json"}, {"list"},
            {"history", "job"}, {"leader", "boss"},   {"migrate", "--status"}};
        for (const auto& command : commands) {
            std::vector<std::string> args{"--url", url};
            args.insert(args.end(), command.begin(), command.end());
            const auto r = sqlock_cli(args, false);
            CAPTURE(command.front());
            CAPTURE(r.err);
            CHECK(r.status == 69);
            CHECK(contains(r.err, "no database at " + url));
            CHECK(contains(r.err, path));
            CHECK(std::filesystem::is_empty(dir)); // no file, -wal or -shm
        }
        const auto check = sqlock_cli({"--url", url, "check", "job"}, false);
        CHECK(check.status == 3); // Nagios UNKNOWN
        CHECK(contains(check.out, "no database at"));
        CHECK(std::filesystem::is_empty(dir));
        // In a directory that does not exist either.
        const auto nowhere =
            sqlock_cli({"--url", "sqlite://" + dir + "/no/such/dir.db", "status"}, false);
        CHECK(nowhere.status == 69);
        CHECK(std::filesystem::is_empty(dir));
        // migrate creates it, and then status reads it.
        CHECK(sqlock_cli({"--url", url, "migrate"}, false).status == 0);
        CHECK(std::filesystem::exists(path));
        CHECK(sqlock_cli({"--url", url, "status"}, false).status == 0);
    }
#endif

    TEST_CASE("lock names print readably: a semaphore's permit, control characters") {
        // The loss message of a semaphore's permit: "NAME [permit 0]", no raw 0x1f byte.
        const auto name = unique_name("habits-loss");
        const auto base = test::backend().scratch_dir + "/" + name;
        const pid_t p =
            test::spawn({test::cli_path(), "run", name, "--permits", "1", "--ttl", "3s",
                         "--strategy", "unique_key", "--", "/bin/sh", "-c", "sleep 60"},
                        {"SQLOCK_URL=" + test::backend().url}, base + ".out", base + ".err");
        const std::string permit = name + "\x1fpermit 0";
        REQUIRE(test::eventually(
            [&] {
                const auto row = test::row_of(permit);
                return row && row->held();
            },
            20s));
        CHECK(db().force_release(permit, "habits-test").released);
        const int status = test::wait_exit(p);
        const auto err = test::read_file(base + ".err");
        CAPTURE(err);
        CHECK(status == 76);
        CHECK(contains(err, "\"" + name + " [permit 0]\""));
        CHECK(err.find('\x1f') == std::string::npos);

        // A name with a newline and a tab prints on one line, escaped.
        const std::string odd = unique_name("habits-odd") + "\nline\ttab";
        const auto r = sqlock_cli({"release", odd, "--force"});
        CHECK(r.status == 1);
        CHECK(contains(r.out, "\\nline\\ttab"));
        CHECK(r.out.find('\t') == std::string::npos);
        CHECK(r.out.find('\n') == r.out.size() - 1);
    }

    TEST_CASE("the password is masked as the URL's password field only") {
        const auto kind = test::backend().kind;
        if (kind == sqlock::backend_kind::sqlite)
            return; // SQLite URLs have no password
        const auto server = sqlock::detail::parse_url(test::backend().url);
        const std::string scheme =
            kind == sqlock::backend_kind::postgresql ? "postgresql" : "mysql";
        const std::string host =
            server.endpoints.empty() ? server.host : server.endpoints.front().host;
        const auto port = std::to_string(test::server_port());
        // The password "lock" is part of the user's and the database's names.
        const auto suffix = std::to_string(getpid());
        const std::string user = "lockuser" + suffix;
        const std::string database = "blockdb" + suffix;
        const std::string password = "lock";
        if (kind == sqlock::backend_kind::postgresql) {
            test::exec_sql(db(), "DROP DATABASE IF EXISTS " + database);
            test::exec_sql(db(), "DROP ROLE IF EXISTS " + user);
            test::exec_sql(db(), "CREATE ROLE " + user + " LOGIN PASSWORD '" + password + "'");
            test::exec_sql(db(), "CREATE DATABASE " + database + " OWNER " + user);
        } else {
            test::exec_sql(db(), "DROP DATABASE IF EXISTS " + database);
            test::exec_sql(db(), "DROP USER IF EXISTS '" + user + "'@'%'");
            test::exec_sql(db(), "CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + password + "'");
            test::exec_sql(db(), "CREATE DATABASE " + database);
            test::exec_sql(db(), "GRANT ALL ON " + database + ".* TO '" + user + "'@'%'");
        }
        const auto url_at = [&](const std::string& pw, const std::string& p) {
            return scheme + "://" + user + ":" + pw + "@" + host + ":" + p + "/" + database;
        };
        const std::string shown = url_at("***", port);
        const auto check_message = [&](const std::string& text, const std::string& url_shown) {
            CAPTURE(text);
            CHECK(contains(text, url_shown)); // the names whole, the password masked
            CHECK_FALSE(contains(text, ":" + password + "@")); // no copy as the password field
            CHECK_FALSE(contains(text, "***user"));
            CHECK_FALSE(contains(text, "b***db"));
        };
        const auto name = unique_name("habits-mask");
        // The right password: migrate, status, run, release (which names the URL).
        const auto good = url_at(password, port);
        CHECK(sqlock_cli({"--url", good, "migrate"}, false).status == 0);
        const auto status = sqlock_cli({"--url", good, "status"}, false);
        CHECK(status.status == 0);
        CHECK_FALSE(contains(status.out + status.err, ":" + password + "@"));
        CHECK(sqlock_cli({"--url", good, "run", name, "--", "true"}, false).status == 0);
        const auto release = sqlock_cli({"--url", good, "release", name, "--force"}, false);
        CHECK(release.status == 1);
        check_message(release.out, shown);
        // A wrong password ("loc", also in the names) against the real server.
        for (const auto& args : std::vector<std::vector<std::string>>{
                 {"status"}, {"run", name, "--", "true"}, {"release", name, "--force"}}) {
            std::vector<std::string> argv{"--url", url_at("loc", port)};
            argv.insert(argv.end(), args.begin(), args.end());
            const auto r = sqlock_cli(argv, false);
            CHECK(r.status == 69);
            check_message(r.err, shown);
            CHECK_FALSE(contains(r.err, ":loc@"));
        }
        // Connection refused.
        const auto dead = std::to_string(test::dead_port());
        for (const auto& args : std::vector<std::vector<std::string>>{
                 {"status"}, {"run", name, "--wait", "0", "--", "true"}}) {
            std::vector<std::string> argv{"--url", url_at(password, dead), "--connect-timeout",
                                          "2s"};
            argv.insert(argv.end(), args.begin(), args.end());
            const auto r = sqlock_cli(argv, false);
            CHECK(r.status == 69);
            check_message(r.err, url_at("***", dead));
        }
        // The library's own message, too.
        const auto e = test::error_of([&] { sqlock::connect(url_at("loc", port)); });
        check_message(e.what(), shown);
        if (kind == sqlock::backend_kind::postgresql) {
            test::exec_sql(db(), "DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
            test::exec_sql(db(), "DROP ROLE IF EXISTS " + user);
        } else {
            test::exec_sql(db(), "DROP DATABASE IF EXISTS " + database);
            test::exec_sql(db(), "DROP USER IF EXISTS '" + user + "'@'%'");
        }
    }

} // TEST_SUITE cli_habits
