// A server that refuses connections for lack of free slots (DESIGN §12, issue #18): a lock
// wait outlasts it until its deadline, and then says what happened and how to fix it; a wrong
// password or an unknown database stay immediate errors. Servers only (SQLite has no
// connection limit).
//
// The limit is a login's own (PostgreSQL: a role with CONNECTION LIMIT n, SQLSTATE 53300 "too
// many connections for role"; MariaDB: an account WITH MAX_USER_CONNECTIONS n, error 1226), so
// that filling it starves no other test.
#include "backend_fixture.hpp"
#include "database/database_impl.hpp"

#include <atomic>
#include <chrono>
#include <doctest/doctest.h>
#include <filesystem>
#include <memory>
#include <random>
#include <signal.h>
#include <sqlock/sqlock.hpp>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

bool postgres() {
    return test::backend().kind == sqlock::backend_kind::postgresql;
}

/// A login of its own that may hold at most `limit` connections, with the rights of the test
/// login on the lock tables. Dropped (with its sessions) at the end.
class limited_login {
public:
    explicit limited_login(int limit) : m_limit(limit) {
        std::random_device rd;
        m_user = "sqlock_full_" + std::to_string(getpid()) + "_" + std::to_string(rd() % 100000);
        const auto& url = test::backend().url;
        const auto scheme_end = url.find("://") + 3;
        const auto at = url.rfind('@');
        const auto colon = url.find(':', scheme_end);
        REQUIRE(at != std::string::npos);
        const auto admin_user = url.substr(scheme_end, colon - scheme_end);
        const auto database = url.substr(url.rfind('/') + 1);
        m_url = url.substr(0, scheme_end) + m_user + ":" + m_password + url.substr(at);
        m_wrong_password_url =
            url.substr(0, scheme_end) + m_user + ":not-" + m_password + url.substr(at);
        m_unknown_database_url = m_url.substr(0, m_url.rfind('/') + 1) + "sqlock_no_such_db";
        const auto n = std::to_string(limit);
        if (postgres()) {
            // A member of the test login: its rights on the tables, not its SUPERUSER (which
            // would exempt it from the limit).
            test::exec_sql(test::db(), "CREATE ROLE " + m_user + " LOGIN PASSWORD '" + m_password +
                                           "' CONNECTION LIMIT " + n + " IN ROLE " + admin_user);
        } else {
            test::exec_sql(test::db(), "CREATE USER '" + m_user + "'@'%' IDENTIFIED BY '" +
                                           m_password + "' WITH MAX_USER_CONNECTIONS " + n);
            test::exec_sql(test::db(),
                           "GRANT ALL PRIVILEGES ON `" + database + "`.* TO '" + m_user + "'@'%'");
        }
    }
    ~limited_login() {
        try {
            end_sessions();
            if (postgres())
                test::exec_sql(test::db(), "DROP ROLE IF EXISTS " + m_user);
            else
                test::exec_sql(test::db(), "DROP USER IF EXISTS '" + m_user + "'@'%'");
        } catch (...) {
        }
    }
    limited_login(const limited_login&) = delete;
    limited_login& operator=(const limited_login&) = delete;

    const std::string& url() const { return m_url; }
    const std::string& wrong_password_url() const { return m_wrong_password_url; }
    const std::string& unknown_database_url() const { return m_unknown_database_url; }

    /// The server sessions of this login right now.
    std::vector<std::int64_t> sessions() const {
        auto s = sqlock::detail::impl_of(test::db()).checkout();
        const auto r = s->query(
            postgres()
                ? "SELECT pid FROM pg_stat_activity WHERE usename = '" + m_user + "'"
                : "SELECT id FROM information_schema.processlist WHERE user = '" + m_user + "'");
        std::vector<std::int64_t> ids;
        for (const auto& row : r.rows)
            ids.push_back(sqlock::detail::column_int(row.at(0)));
        return ids;
    }

    /// Ends every session of this login and waits until the server has let go of them.
    void end_sessions() const {
        for (const auto id : sessions()) {
            try {
                test::kill_session(test::db(), id);
            } catch (const sqlock::error&) {
                // Gone meanwhile.
            }
        }
        REQUIRE(test::eventually([&] { return sessions().empty(); }, 10s));
    }

    /// Opens connections of this login until the server refuses one for lack of slots: the
    /// login is then at its limit for as long as the returned handles live.
    std::vector<sqlock::database> fill() const {
        std::vector<sqlock::database> blockers;
        for (;;) {
            try {
                blockers.push_back(sqlock::connect(m_url));
            } catch (const sqlock::error& e) {
                CAPTURE(e.what());
                REQUIRE(sqlock::is_server_full(e));
                CHECK(e.code() == sqlock::errc::connection);
                break;
            }
            REQUIRE(static_cast<int>(blockers.size()) <= m_limit);
        }
        CHECK(static_cast<int>(blockers.size()) == m_limit);
        return blockers;
    }

private:
    int m_limit;
    std::string m_user;
    std::string m_password = "full-pw-3f9a";
    std::string m_url;
    std::string m_wrong_password_url;
    std::string m_unknown_database_url;
};

/// A database handle of `login` that needs a new connection for its next lock: connected
/// while the login had room, then its session ended server-side.
sqlock::database connected_then_cut(const limited_login& login) {
    auto subject = sqlock::connect(login.url());
    login.end_sessions();
    return subject;
}

std::string strategy_arg() {
    return std::string(sqlock::to_string(test::strategy()));
}

/// The child's exit status if it has exited, else -1 (without waiting).
int exit_status_now(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

TEST_SUITE("full_server") {
    TEST_CASE("a lock wait outlasts a server without free connection slots") {
        limited_login login(2);
        auto subject = connected_then_cut(login);
        auto blockers = login.fill();
        auto& impl = sqlock::detail::impl_of(subject);
        const auto connects_before = impl.connects_attempted();
        const auto name = test::unique_name("full-wait");

        const auto started = clock_type::now();
        std::atomic<bool> freed{false};
        std::thread freer([&] {
            // Refused a few times (the waiter is backing off), and for about a second.
            test::eventually(
                [&] {
                    return impl.connects_attempted() >= connects_before + 3 &&
                           clock_type::now() - started >= 1s;
                },
                8s);
            blockers.clear(); // closes their connections
            freed = true;
        });
        sqlock::mutex m(subject, name, test::opts());
        bool granted = false;
        try {
            granted = m.try_lock_for(10s);
        } catch (const sqlock::error& e) {
            FAIL("try_lock_for threw: " << e.what());
        }
        const auto waited = clock_type::now() - started;
        freer.join();
        CHECK(granted);
        CHECK(freed.load());
        CHECK(waited >= 1s);
        CHECK(waited < 8s);
        CHECK(impl.connects_attempted() >= connects_before + 3); // it was refused meanwhile
        if (granted) {
            CHECK(m.owns_lock());
            m.unlock();
        }
    }

    TEST_CASE("lock() waits out a full server too") {
        limited_login login(2);
        auto subject = connected_then_cut(login);
        auto blockers = login.fill();
        auto& impl = sqlock::detail::impl_of(subject);
        const auto connects_before = impl.connects_attempted();
        std::thread freer([&] {
            test::eventually([&] { return impl.connects_attempted() >= connects_before + 3; }, 8s);
            blockers.clear();
        });
        sqlock::mutex m(subject, test::unique_name("full-lock"), test::opts());
        CHECK_NOTHROW(m.lock());
        freer.join();
        CHECK(m.owns_lock());
        m.unlock();
    }

    TEST_CASE("a full server until the deadline: errc::timeout at the deadline, saying why") {
        limited_login login(2);
        auto subject = connected_then_cut(login);
        const auto blockers = login.fill();
        sqlock::mutex m(subject, test::unique_name("full-deadline"), test::opts());

        const auto started = clock_type::now();
        const auto e = test::error_of([&] { (void)m.try_lock_for(2s); });
        const auto waited = clock_type::now() - started;
        CAPTURE(e.what());
        CHECK(e.code() == sqlock::errc::timeout);
        CHECK(sqlock::is_server_full(e));
        CHECK(e.backend() == std::string(sqlock::to_string(test::backend().kind)));
        const std::string message = e.what();
        CHECK(message.find(m.name()) != std::string::npos);
        CHECK(message.find("refused new connections") != std::string::npos);
        CHECK(message.find("connection limit") != std::string::npos);
        CHECK(message.find("raise the limit") != std::string::npos);
        CHECK(message.find("pooler") != std::string::npos);
        CHECK(message.find("full-pw") == std::string::npos); // never the password
        CHECK(waited >= 1900ms);                             // not at once
        CHECK(waited < 3s);                                  // nor much later

        // No time to wait: try_lock() reports the refusal at once, as a connection error.
        const auto once = clock_type::now();
        const auto now_error = test::error_of([&] { (void)m.try_lock(); });
        CAPTURE(now_error.what());
        CHECK(now_error.code() == sqlock::errc::connection);
        CHECK(sqlock::is_server_full(now_error));
        CHECK(clock_type::now() - once < 1s);
    }

    TEST_CASE("a wrong password or an unknown database is no full server: it fails at once") {
        limited_login login(2);
        const auto fails_at_once = [](const std::string& url) {
            const auto started = clock_type::now();
            const auto e = test::error_of([&] { (void)sqlock::connect(url); });
            CAPTURE(e.what());
            CHECK(e.code() == sqlock::errc::connection);
            CHECK_FALSE(sqlock::is_server_full(e));
            CHECK(clock_type::now() - started < 2s);
        };
        // (PostgreSQL checks a role's limit before the database name: checked while not full.)
        fails_at_once(login.unknown_database_url());
        const auto blockers = login.fill();        // full, for logins with the right password
        fails_at_once(login.wrong_password_url()); // the password is checked before the limit
        // And the CLI, with time to wait, does not wait for them. (A 30 s wait against a 15 s
        // bound: waiting is told apart from a slow start under sanitizers on a loaded host.)
        const auto name = test::unique_name("full-pw");
        const auto err = test::backend().scratch_dir + "/" + name + ".err";
        const auto started = clock_type::now();
        const pid_t p = test::spawn({test::cli_path(), "run", name, "--strategy", strategy_arg(),
                                     "--wait", "30s", "--", "/bin/true"},
                                    {"SQLOCK_URL=" + login.wrong_password_url()}, {}, err);
        CHECK(test::wait_exit(p) == 69);
        CHECK(clock_type::now() - started < 15s);
        const auto text = test::read_file(err);
        CAPTURE(text);
        CHECK_FALSE(text.empty());
        CHECK(text.find("connection limit") == std::string::npos);
    }

    TEST_CASE("sqlock run --wait waits out a full server and runs the command") {
        limited_login login(2);
        auto blockers = login.fill();
        const auto name = test::unique_name("full-cli");
        const auto marker = test::backend().scratch_dir + "/" + name + ".ran";
        const pid_t p =
            test::spawn({test::cli_path(), "run", name, "--strategy", strategy_arg(), "--ttl",
                         "30s", "--wait", "30s", "--", "/usr/bin/touch", marker},
                        {"SQLOCK_URL=" + login.url()});
        // Still waiting after a second (it would have exited 69 at once before).
        CHECK_FALSE(test::eventually([&] { return exit_status_now(p) >= 0; }, 1000ms));
        CHECK_FALSE(std::filesystem::exists(marker));
        blockers.clear();
        const auto freed = clock_type::now();
        CHECK(test::wait_exit(p) == 0);
        CHECK(std::filesystem::exists(marker));
        // It tries again while it waits, not only at its deadline (30 s away).
        CHECK(clock_type::now() - freed < 10s);
    }

    TEST_CASE("sqlock run --wait on a server full until the deadline exits 75 and says why") {
        limited_login login(2);
        const auto blockers = login.fill();
        const auto name = test::unique_name("full-cli-deadline");
        const auto marker = test::backend().scratch_dir + "/" + name + ".ran";
        const auto err = test::backend().scratch_dir + "/" + name + ".err";
        const auto started = clock_type::now();
        const pid_t p = test::spawn({test::cli_path(), "run", name, "--strategy", strategy_arg(),
                                     "--wait", "2s", "--", "/usr/bin/touch", marker},
                                    {"SQLOCK_URL=" + login.url()}, {}, err);
        CHECK(test::wait_exit(p) == 75);
        const auto waited = clock_type::now() - started;
        CHECK(waited >= 1900ms);
        // At the deadline, not a connect timeout (5 s) after it; 6 s: an ASan CLI's start on a
        // loaded host took over 2 s.
        CHECK(waited < 6s);
        CHECK_FALSE(std::filesystem::exists(marker));
        const auto text = test::read_file(err);
        CAPTURE(text);
        CHECK(text.find("refused new connections") != std::string::npos);
        CHECK(text.find("raise the limit") != std::string::npos);
    }

    TEST_CASE("sqlock run --wait rides out a server too swamped to answer new connections") {
        // A stopped server accepts TCP connections (the kernel does) and never answers them,
        // as one swamped by a whole fleet starting at once does: each connect times out.
        const auto name = test::unique_name("swamped");
        const auto marker = test::backend().scratch_dir + "/" + name + ".ran";
        const auto err = test::backend().scratch_dir + "/" + name + ".err";
        const auto run = [&](const std::string& wait, const std::string& err_file) {
            return test::spawn({test::cli_path(), "--connect-timeout", "1s", "run", name,
                                "--strategy", strategy_arg(), "--wait", wait, "--",
                                "/usr/bin/touch", marker},
                               {"SQLOCK_URL=" + test::backend().url}, {}, err_file);
        };
        {
            const test::paused_server pause;
            // Until the deadline: exit 75, saying what happened.
            const auto started = clock_type::now();
            const pid_t gives_up = run("3s", err);
            CHECK(test::wait_exit(gives_up) == 75);
            CHECK(clock_type::now() - started >= 2900ms);
            const auto text = test::read_file(err);
            CAPTURE(text);
            CHECK(text.find("did not answer new connections in time") != std::string::npos);
            CHECK_FALSE(std::filesystem::exists(marker));
        }
        {
            auto pause = std::make_unique<test::paused_server>();
            const pid_t p = run("30s", err + "2");
            // Several connect timeouts later it is still waiting, not failed (it exited 69
            // after the first one before).
            CHECK_FALSE(test::eventually([&] { return exit_status_now(p) >= 0; }, 4500ms));
            pause.reset(); // the server answers again
            CHECK(test::wait_exit(p) == 0);
            CHECK(std::filesystem::exists(marker));
        }
    }
}
