#include "core/config.hpp"

#include <doctest/doctest.h>
#include <sqlock/error.hpp>

using sqlock::backend_kind;
using sqlock::detail::parse_url;

namespace {
sqlock::errc code_of(std::string_view url) {
    try {
        parse_url(url);
    } catch (const sqlock::error& e) {
        return e.code();
    }
    FAIL("no error for " << url);
    return sqlock::errc::backend;
}
std::string message_of(std::string_view url) {
    try {
        parse_url(url);
    } catch (const sqlock::error& e) {
        return e.what();
    }
    return {};
}
} // namespace

TEST_CASE("url: postgresql with everything") {
    const auto c = parse_url("postgresql://al%40ice:p%3Ass@db.example:6543/app?sslmode=require");
    CHECK(c.kind == backend_kind::postgresql);
    CHECK(c.user == "al@ice");
    CHECK(c.password == "p:ss");
    CHECK(c.host == "db.example");
    CHECK(c.port == 6543);
    CHECK(c.database == "app");
    REQUIRE(c.options.size() == 1);
    CHECK(c.options[0].first == "sslmode");
    CHECK(c.options[0].second == "require");
    CHECK(c.redacted_url == "postgresql://al%40ice:***@db.example:6543/app?sslmode=require");
}

TEST_CASE("url: scheme aliases and default ports") {
    CHECK(parse_url("postgres://u@h/d").port == 5432);
    CHECK(parse_url("mysql://u@h/d").kind == backend_kind::mysql);
    CHECK(parse_url("mariadb://u@h/d").kind == backend_kind::mysql);
    CHECK(parse_url("mariadb://u@h/d").port == 3306);
    CHECK(parse_url("mysql://u:pw@[::1]:3307/d").host == "::1");
    CHECK(parse_url("mysql://u:pw@[::1]:3307/d").port == 3307);
}

TEST_CASE("url: sqlite absolute and relative paths") {
    CHECK(parse_url("sqlite:///var/lib/app/locks.db").path == "/var/lib/app/locks.db");
    CHECK(parse_url("sqlite:locks.db").path == "locks.db");
    CHECK(parse_url("sqlite:dir/locks.db").kind == backend_kind::sqlite);
}

TEST_CASE("url: malformed input is invalid_argument") {
    using sqlock::errc;
    CHECK(code_of("") == errc::invalid_argument);
    CHECK(code_of("nonsense") == errc::invalid_argument);
    CHECK(code_of("redis://h/d") == errc::invalid_argument);
    CHECK(code_of("postgresql:/h/d") == errc::invalid_argument);
    CHECK(code_of("postgresql://u:p@h:99999/d") == errc::invalid_argument);
    CHECK(code_of("postgresql://u:p@h:12x/d") == errc::invalid_argument);
    CHECK(code_of("postgresql://u:p@h:5432") == errc::invalid_argument);  // no database
    CHECK(code_of("postgresql://u:p@:5432/d") == errc::invalid_argument); // no host
    CHECK(code_of("postgresql://u:p%zz@h/d") == errc::invalid_argument);
    CHECK(code_of("sqlite:") == errc::invalid_argument);
    CHECK(code_of("sqlite://relative.db") == errc::invalid_argument);
    CHECK(message_of("redis://h/d").find("unknown scheme") != std::string::npos);
}

TEST_CASE("url: passwords never appear in error messages") {
    const auto msg = message_of("postgresql://user:SeCrEt@host:99999/db");
    CHECK(msg.find("SeCrEt") == std::string::npos);
    CHECK(msg.find("***") != std::string::npos);
}
