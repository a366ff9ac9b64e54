// The database password stays secret (issue 30 item 5): a password file private to its owner
// (--password-file, SQLOCK_PASSWORD_FILE, connect_options::password_file), PostgreSQL's own
// .pgpass, the job of `sqlock run` seeing SQLOCK_URL without the password, `ps` not showing a
// --url's password, and no message quoting it. Real processes: the CLI runs under `env -i`,
// so that nothing of the test's own environment (whose URLs carry the password) reaches it.
#include "backend_fixture.hpp"
#include "base/config.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

using namespace std::chrono_literals;

namespace {

std::string password() {
    return sqlock::detail::parse_url(test::backend().url).password;
}

std::string url_without_password() {
    return sqlock::url_without_password(test::backend().url);
}

std::string strategy_arg() {
    return std::string(sqlock::to_string(test::strategy()));
}

bool exists(const std::string& path) {
    return std::filesystem::exists(path);
}

/// A directory of the test's own under the scratch directory.
std::string dir_for(const std::string& name) {
    const auto dir = test::backend().scratch_dir + "/" + name;
    std::filesystem::create_directories(dir);
    return dir;
}

/// Writes `text` to `path` with permissions `mode`.
void write_file(const std::string& path, const std::string& text, mode_t mode) {
    {
        std::ofstream out(path, std::ios::trunc);
        out << text;
    }
    REQUIRE(chmod(path.c_str(), mode) == 0);
}

/// The sqlock CLI with `args`, in an environment of PATH and `env` only; stdout and stderr to
/// `dir`/out and `dir`/err.
pid_t sqlock_clean(const std::string& dir, const std::vector<std::string>& env,
                   const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/env", "-i", "PATH=/usr/bin:/bin"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(test::cli_path());
    argv.insert(argv.end(), args.begin(), args.end());
    return test::spawn(argv, {}, dir + "/out", dir + "/err");
}

/// `run NAME -- /bin/sh -c SCRIPT` for `sqlock_clean`.
std::vector<std::string> run_args(const std::string& name, const std::string& script) {
    return {"run", name, "--strategy", strategy_arg(), "--wait",
            "30s", "--", "/bin/sh",    "-c",           script};
}

/// The NUL-separated command line of `pid`, NULs turned into spaces.
std::string cmdline_of(pid_t pid) {
    auto text = test::read_file("/proc/" + std::to_string(pid) + "/cmdline");
    std::replace(text.begin(), text.end(), '\0', ' ');
    return text;
}

/// A job that writes its environment to `dir`/env, then waits (at most a minute) for
/// `dir`/go.
std::string env_then_wait(const std::string& dir) {
    return "env > '" + dir + "/env.tmp' && mv '" + dir + "/env.tmp' '" + dir +
           "/env'; i=0; while [ ! -e '" + dir + "/go' ] && [ $i -lt 6000 ]; do sleep 0.01; " +
           "i=$((i+1)); done";
}

/// Runs a job that records its environment while sqlock (given the URL by `url_env` or
/// `url_args`) holds the lock; checks that environment and, while the job runs, the command
/// lines of sqlock and its guard.
void check_job_sees_no_password(const std::vector<std::string>& url_env,
                                const std::vector<std::string>& url_args) {
    test::db(); // the lock tables exist
    const auto name = test::unique_name("secrets-env");
    const auto dir = dir_for(name);
    auto args = url_args;
    const auto run = run_args(name, env_then_wait(dir));
    args.insert(args.end(), run.begin(), run.end());
    const pid_t cli = sqlock_clean(dir, url_env, args);
    const bool started = test::eventually([&] { return exists(dir + "/env"); }, 30s);
    if (started) {
        // sqlock (which has hidden the password before connecting or forking) and its guard.
        std::vector<pid_t> sqlocks{cli};
        for (const auto guard : test::children_of(cli, "sqlock"))
            sqlocks.push_back(guard);
        for (const auto pid : sqlocks) {
            const auto cmdline = cmdline_of(pid);
            CAPTURE(cmdline);
            CHECK(cmdline.find("run " + name) != std::string::npos);
            CHECK(cmdline.find(password()) == std::string::npos);
        }
    }
    write_file(dir + "/go", "", 0600);
    const int status = test::wait_exit(cli);
    CAPTURE(test::read_file(dir + "/err"));
    REQUIRE(started);
    CHECK(status == 0);
    const auto env = test::read_file(dir + "/env");
    CAPTURE(env);
    CHECK(env.find("SQLOCK_URL=" + url_without_password() + "\n") != std::string::npos);
    CHECK(env.find("SQLOCK_NAME=" + name + "\n") != std::string::npos);
    CHECK(env.find(password()) == std::string::npos);
}

} // namespace

TEST_SUITE("secrets") {

    TEST_CASE("the URL's password is not in the job's environment (URL from SQLOCK_URL)") {
        REQUIRE(password().size() >= 4);
        check_job_sees_no_password({"SQLOCK_URL=" + test::backend().url}, {});
    }

    TEST_CASE("--url: the job gets SQLOCK_URL without the password, ps does not show it") {
        check_job_sees_no_password({}, {"--url", test::backend().url});
    }

    TEST_CASE("a password file: mode 0600 works, the job can run sqlock with what it is given") {
        test::db();
        const auto name = test::unique_name("secrets-file");
        const auto dir = dir_for(name);
        const auto file = dir + "/password";
        write_file(file, password() + "\n", 0600);
        // The job calls sqlock itself with the SQLOCK_URL and SQLOCK_PASSWORD_FILE it is given.
        const std::string script = "env > '" + dir + "/env' && '" + test::cli_path() +
                                   "' status --name '" + name + "' > '" + dir + "/status'";
        std::vector<std::string> args{"--url", url_without_password(), "--password-file", file};
        const auto run = run_args(name, script);
        args.insert(args.end(), run.begin(), run.end());
        const int status = test::wait_exit(sqlock_clean(dir, {}, args));
        CAPTURE(test::read_file(dir + "/err"));
        REQUIRE(status == 0);
        const auto env = test::read_file(dir + "/env");
        CAPTURE(env);
        CHECK(env.find("SQLOCK_URL=" + url_without_password() + "\n") != std::string::npos);
        CHECK(env.find("SQLOCK_PASSWORD_FILE=" + file + "\n") != std::string::npos);
        CHECK(env.find(password()) == std::string::npos);
        // The job's own `sqlock status` saw the lock held (by its sqlock run).
        CHECK(test::read_file(dir + "/status").find(name) != std::string::npos);

        // SQLOCK_PASSWORD_FILE works as well, and --password-file wins over it.
        const auto open_file = dir + "/password-0644";
        write_file(open_file, password() + "\n", 0644);
        CHECK(test::wait_exit(sqlock_clean(
                  dir, {"SQLOCK_URL=" + url_without_password(), "SQLOCK_PASSWORD_FILE=" + file},
                  {"status"})) == 0);
        CHECK(
            test::wait_exit(sqlock_clean(
                dir, {"SQLOCK_URL=" + url_without_password(), "SQLOCK_PASSWORD_FILE=" + open_file},
                {"--password-file", file, "status"})) == 0);
    }

    TEST_CASE("a password file that group or others may read is refused; nothing runs") {
        const auto name = test::unique_name("secrets-0644");
        const auto dir = dir_for(name);
        const auto file = dir + "/password";
        const auto marker = dir + "/ran";
        for (const mode_t mode : {0644U, 0640U, 0602U, 0620U}) {
            CAPTURE(mode);
            write_file(file, password() + "\n", mode);
            std::vector<std::string> args{"--url", url_without_password(), "--password-file", file};
            const auto run = run_args(name, "touch '" + marker + "'");
            args.insert(args.end(), run.begin(), run.end());
            const int status = test::wait_exit(sqlock_clean(dir, {}, args));
            const auto err = test::read_file(dir + "/err");
            CAPTURE(err);
            CHECK(status == 64);
            CHECK(err.find("chmod 600 " + file) != std::string::npos);
            CHECK(err.find(password()) == std::string::npos);
            CHECK_FALSE(exists(marker));
        }
        // Not a regular file: a directory.
        std::vector<std::string> args{"--url", url_without_password(), "--password-file", dir};
        const auto run = run_args(name, "touch '" + marker + "'");
        args.insert(args.end(), run.begin(), run.end());
        CHECK(test::wait_exit(sqlock_clean(dir, {}, args)) == 64);
        CHECK(test::read_file(dir + "/err").find("not a regular file") != std::string::npos);
        // Empty.
        write_file(file, "", 0600);
        CHECK(test::wait_exit(sqlock_clean(dir, {"SQLOCK_URL=" + url_without_password()},
                                           {"--password-file", file, "status"})) == 64);
        CHECK(test::read_file(dir + "/err").find("is empty") != std::string::npos);
        CHECK_FALSE(exists(marker));
    }

    TEST_CASE("a password both in the URL and in a file is a usage error") {
        const auto dir = dir_for(test::unique_name("secrets-both"));
        const auto file = dir + "/password";
        write_file(file, password(), 0600);
        const int status = test::wait_exit(sqlock_clean(
            dir, {}, {"--url", test::backend().url, "--password-file", file, "status"}));
        const auto err = test::read_file(dir + "/err");
        CAPTURE(err);
        CHECK(status == 64);
        CHECK(err.find("remove the password from the URL") != std::string::npos);
        CHECK(err.find(password()) == std::string::npos);
    }

    TEST_CASE("a wrong password in the file: a clear error that does not show it") {
        const auto name = test::unique_name("secrets-wrong");
        const auto dir = dir_for(name);
        const auto file = dir + "/password";
        const std::string wrong = "wrong-" + name;
        write_file(file, wrong + "\n", 0600);
        const auto marker = dir + "/ran";
        std::vector<std::string> args{"--url", url_without_password(), "--password-file", file};
        const auto run = run_args(name, "touch '" + marker + "'");
        args.insert(args.end(), run.begin(), run.end());
        const int status = test::wait_exit(sqlock_clean(dir, {}, args));
        const auto err = test::read_file(dir + "/err");
        CAPTURE(err);
        CHECK(status == 69);
        CHECK(err.find("cannot connect to " + url_without_password()) != std::string::npos);
        CHECK(err.find(wrong) == std::string::npos);
        CHECK(err.find(password()) == std::string::npos);
        CHECK_FALSE(exists(marker));
    }

    TEST_CASE("connect_options::password_file in the library") {
        const auto dir = dir_for(test::unique_name("secrets-library"));
        const auto file = dir + "/password";
        write_file(file, password() + "\n", 0600);
        sqlock::connect_options options;
        options.password_file = file;
        auto db = sqlock::connect(url_without_password(), options);
        CHECK(db.url() == url_without_password());
        CHECK(db.schema_version() > 0);

        // Refused: readable by others, and a password in the URL as well.
        REQUIRE(chmod(file.c_str(), 0604) == 0);
        auto e = test::error_of([&] { sqlock::connect(url_without_password(), options); });
        CHECK(e.code() == sqlock::errc::invalid_argument);
        CHECK(std::string(e.what()).find("chmod 600 " + file) != std::string::npos);
        REQUIRE(chmod(file.c_str(), 0600) == 0);
        e = test::error_of([&] { sqlock::connect(test::backend().url, options); });
        CHECK(e.code() == sqlock::errc::invalid_argument);
        CHECK(std::string(e.what()).find(password()) == std::string::npos);

        // A wrong password: errc::connection, the password not in the message.
        write_file(file, "not-the-password-42", 0600);
        e = test::error_of([&] { sqlock::connect(url_without_password(), options); });
        CHECK(e.code() == sqlock::errc::connection);
        CHECK(std::string(e.what()).find("not-the-password-42") == std::string::npos);
    }

} // TEST_SUITE("secrets")

TEST_SUITE("secrets_postgresql") {

    TEST_CASE("no password from sqlock: libpq finds it in PGPASSFILE") {
        REQUIRE(test::backend().kind == sqlock::backend_kind::postgresql);
        test::db();
        const auto config = sqlock::detail::parse_url(test::backend().url);
        const auto name = test::unique_name("secrets-pgpass");
        const auto dir = dir_for(name);
        auto field = [](const std::string& text) { // .pgpass escapes ':' and '\'
            std::string out;
            for (const char c : text) {
                if (c == ':' || c == '\\')
                    out += '\\';
                out += c;
            }
            return out;
        };
        const auto pgpass = dir + "/pgpass";
        write_file(pgpass,
                   field(config.host) + ":" + std::to_string(config.port) + ":" +
                       field(config.database) + ":" + field(config.user) + ":" +
                       field(config.password) + "\n",
                   0600);
        const auto marker = dir + "/ran";
        const auto args = run_args(name, "touch '" + marker + "'");
        // Without it (PGPASSFILE naming no file: ~/.pgpass is not read either) the server refuses:
        // the test means something.
        CHECK(test::wait_exit(sqlock_clean(
                  dir, {"SQLOCK_URL=" + url_without_password(), "PGPASSFILE=" + dir + "/none"},
                  args)) == 69);
        CHECK_FALSE(exists(marker));
        const int status = test::wait_exit(sqlock_clean(
            dir, {"SQLOCK_URL=" + url_without_password(), "PGPASSFILE=" + pgpass}, args));
        CAPTURE(test::read_file(dir + "/err"));
        CHECK(status == 0);
        CHECK(exists(marker));
    }

} // TEST_SUITE("secrets_postgresql")
