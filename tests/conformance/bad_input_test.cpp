// Bad input gets a clear sqlock::error and changes nothing.
#include "backend_fixture.hpp"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace std::chrono_literals;
using sqlock::errc;
using test::db;
using test::error_of;

namespace {

/// The server URL with its password replaced.
std::string with_password(const std::string& url, const std::string& password) {
    const auto scheme_end = url.find("://") + 3;
    const auto at = url.find('@', scheme_end);
    const auto colon = url.find(':', scheme_end);
    return url.substr(0, colon + 1) + password + url.substr(at);
}

/// A URL for 127.0.0.1 on a port where nothing listens (bound, then closed).
std::string dead_port_url() {
    const int port = test::dead_port();
    const auto scheme =
        test::backend().kind == sqlock::backend_kind::postgresql ? "postgresql" : "mysql";
    return std::string(scheme) + "://u:pw@127.0.0.1:" + std::to_string(port) + "/db";
}

} // namespace

TEST_SUITE("backend") {

    TEST_CASE("a name keeps its strategy: a lease on a select_for_update name fails at once") {
        const auto name = test::unique_name("kept-strategy");
        sqlock::mutex fu(test::db(), name, {.strategy = sqlock::strategy::select_for_update});
        REQUIRE(fu.try_lock()); // the name's row now exists, as a select_for_update lock
        fu.unlock();
        sqlock::mutex ov(test::db(), name, {.strategy = sqlock::strategy::optimistic_version});
        const auto e = test::error_of([&] { (void)ov.try_lock(); });
        CHECK(e.code() == sqlock::errc::invalid_argument);
        CHECK(std::string(e.what()).find("is a select_for_update lock") != std::string::npos);
        if (test::backend().kind == sqlock::backend_kind::sqlite) {
            // PostgreSQL and MariaDB: unique_key's acquire does not say which strategy the
            // row has, and waits (a known gap).
            sqlock::mutex uk(test::db(), name, {.strategy = sqlock::strategy::unique_key});
            CHECK(test::error_of([&] { (void)uk.try_lock(); }).code() ==
                  sqlock::errc::invalid_argument);
        }
        CHECK(fu.try_lock()); // and the select_for_update lock still works
        fu.unlock();
    }

    TEST_CASE("lock names: empty, too long, NUL, invalid UTF-8") {
        CHECK(error_of([] { sqlock::mutex m(db(), ""); }).code() == errc::invalid_argument);
        const std::string longest(sqlock::max_name_length, 'x');
        CHECK_NOTHROW(sqlock::mutex(db(), longest));
        const auto e = error_of([] { sqlock::mutex m(db(), std::string(256, 'x')); });
        CHECK(e.code() == errc::invalid_argument);
        CHECK(std::string(e.what()).find("255") != std::string::npos);
        CHECK(error_of([] { sqlock::mutex m(db(), std::string("a\0b", 3)); }).code() ==
              errc::invalid_argument);
        CHECK(error_of([] { sqlock::mutex m(db(), "\xff\xfe"); }).code() == errc::invalid_argument);
    }

    TEST_CASE("the longest name works end to end") {
        sqlock::mutex m(db(), std::string(sqlock::max_name_length - 12, 'n') +
                                  test::unique_name("").substr(0, 12));
        CHECK(m.try_lock());
        m.unlock();
        CHECK(m.last_error().empty());
    }

    TEST_CASE("ttl must be positive") {
        for (const std::chrono::milliseconds ttl : {0ms, -5ms, std::chrono::milliseconds(-1h)}) {
            sqlock::mutex_options o;
            o.ttl = ttl;
            const auto e = error_of([&] { sqlock::mutex m(db(), "ttl-test", o); });
            CHECK(e.code() == errc::invalid_argument);
            CHECK(std::string(e.what()).find("ttl") != std::string::npos);
        }
    }

    TEST_CASE("malformed URLs and unknown schemes") {
        CHECK(error_of([] { sqlock::connect("postgresql//nope"); }).code() ==
              errc::invalid_argument);
        CHECK(error_of([] { sqlock::connect("oracle://u:p@h/db"); }).code() ==
              errc::invalid_argument);
        CHECK(error_of([] { sqlock::connect("mysql://u:p@h:0/db"); }).code() ==
              errc::invalid_argument);
    }

    TEST_CASE("hostile table prefixes are refused before any SQL runs") {
        for (const char* prefix : {"x\"; DROP TABLE t; --", "a`b", "a'b", "1x", ""}) {
            CAPTURE(prefix);
            sqlock::connect_options o;
            o.table_prefix = prefix;
            CHECK(error_of([&] { sqlock::connect(test::backend().url, o); }).code() ==
                  errc::invalid_argument);
        }
    }

    TEST_CASE("a missing lock table says to run sqlock migrate") {
        sqlock::connect_options o;
        o.table_prefix = "never_migrated_";
        auto fresh = sqlock::connect(test::backend().url, o);
        sqlock::mutex m(fresh, "x");
        const auto e = error_of([&] { m.try_lock(); });
        CHECK(e.code() == errc::schema_missing);
        CHECK(std::string(e.what()).find("sqlock migrate") != std::string::npos);
        CHECK(std::string(e.what()).find("never_migrated_locks") != std::string::npos);
        CHECK(fresh.schema_version() == 0);
        CHECK(error_of([&] { fresh.list(); }).code() == errc::schema_missing);
    }

    TEST_CASE("server backends: wrong password and nothing listening") {
        if (test::backend().kind == sqlock::backend_kind::sqlite) {
            // SQLite has neither; its equivalent is an unopenable path.
            const auto e =
                error_of([] { sqlock::connect("sqlite:///nonexistent-dir/x/locks.db"); });
            CHECK(e.code() == errc::connection);
            return;
        }
        const auto wrong = with_password(test::backend().url, "definitely-wrong-pw");
        const auto e = error_of([&] { sqlock::connect(wrong); });
        CHECK(e.code() == errc::connection);
        CHECK(std::string(e.what()).find("definitely-wrong-pw") == std::string::npos);

        sqlock::connect_options o;
        o.connect_timeout = 2s;
        const auto start = std::chrono::steady_clock::now();
        const auto e2 = error_of([&] { sqlock::connect(dead_port_url(), o); });
        CHECK(e2.code() == errc::connection);
        CHECK(std::chrono::steady_clock::now() - start < 2s + 1s);
    }

} // TEST_SUITE backend
