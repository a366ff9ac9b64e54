#include "base/config.hpp"

#include <doctest/doctest.h>
#include <sqlock/database.hpp>
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

TEST_CASE("url: passwords with '/', '?', '#' or '@' are masked, even when malformed") {
    // Read as parse_url reads them.
    CHECK(parse_url("postgresql://u:a#b@h/d").redacted_url == "postgresql://u:***@h/d");
    CHECK(parse_url("postgresql://u:a@b@h/d").redacted_url == "postgresql://u:***@h/d");
    // A raw '/' or '?' in the password makes the URL malformed: the message still hides it.
    for (const char* url :
         {"postgresql://u:SeCr/et@h/d", "mysql://u:SeCr?et@h/d", "postgresql://u:SeCr/et@h"}) {
        CAPTURE(url);
        const auto msg = message_of(url);
        CHECK(msg.find("SeCr") == std::string::npos);
        CHECK(msg.find("et@h") == std::string::npos);
    }
}

TEST_CASE("url: url_without_password keeps everything but the password") {
    using sqlock::url_without_password;
    CHECK(url_without_password("postgresql://al%40ice:p%3Ass@db:6543/app?sslmode=require") ==
          "postgresql://al%40ice@db:6543/app?sslmode=require");
    CHECK(url_without_password("mysql://u:pw@h1:3307,[::1]/d") == "mysql://u@h1:3307,[::1]/d");
    CHECK(url_without_password("postgresql://u:@h/d") == "postgresql://u@h/d");
    CHECK(url_without_password("postgresql://u:a@b@h/d") == "postgresql://u@h/d");
    CHECK(url_without_password("postgresql://u@h/d?x=a:b@c") == "postgresql://u@h/d?x=a:b@c");
    CHECK(url_without_password("postgresql://h:5432/d") == "postgresql://h:5432/d");
    CHECK(url_without_password("sqlite:///tmp/x.db") == "sqlite:///tmp/x.db");
    CHECK(url_without_password("") == "");
    const auto c = parse_url(url_without_password("postgresql://u:pw@h:5433/d?sslmode=disable"));
    CHECK(c.user == "u");
    CHECK(c.password.empty());
    CHECK(c.port == 5433);
    CHECK(c.options.size() == 1);
}

TEST_CASE("url: a host list, each with its own or the default port") {
    const auto c = parse_url("postgresql://u:pw@h1:5433,h2,[::1]:5435/app?sslmode=require");
    REQUIRE(c.endpoints.size() == 3);
    CHECK(c.endpoints[0].host == "h1");
    CHECK(c.endpoints[0].port == 5433);
    CHECK(c.endpoints[1].host == "h2");
    CHECK(c.endpoints[1].port == 5432);
    CHECK(c.endpoints[2].host == "::1");
    CHECK(c.endpoints[2].port == 5435);
    CHECK(c.host == "h1"); // the first until a backend picks another
    CHECK(c.port == 5433);
    CHECK(c.database == "app");
    CHECK(c.redacted_url == "postgresql://u:***@h1:5433,h2,[::1]:5435/app?sslmode=require");
    const auto m = parse_url("mysql://u@a:3307,b/d");
    REQUIRE(m.endpoints.size() == 2);
    CHECK(m.endpoints[1].port == 3306);
    CHECK(parse_url("mysql://u@h/d").endpoints.size() == 1);
}

TEST_CASE("url: a malformed host list is invalid_argument") {
    using sqlock::errc;
    CHECK(code_of("postgresql://u@h1,,h2/d") == errc::invalid_argument);
    CHECK(code_of("postgresql://u@h1,/d") == errc::invalid_argument);
    CHECK(code_of("mysql://u@h1:3306,h2:0/d") == errc::invalid_argument);
    CHECK(code_of("mysql://u@h1:3306,h2:x/d") == errc::invalid_argument);
    std::string many = "postgresql://u@";
    for (int i = 0; i < 17; ++i)
        many += (i ? "," : "") + std::string("h") + std::to_string(i);
    CHECK(message_of(many + "/d").find("more than 16 hosts") != std::string::npos);
}

TEST_CASE("redact_passwords: the password field only, never the password's text elsewhere") {
    using sqlock::detail::redact_passwords;
    // The password "lock" is part of the user's and the database's names: they stay whole.
    CHECK(redact_passwords("cannot connect to postgresql://lockuser:lock@127.0.0.1:1/blockdb: "
                           "password authentication failed for user \"lockuser\"") ==
          "cannot connect to postgresql://lockuser:***@127.0.0.1:1/blockdb: password "
          "authentication failed for user \"lockuser\"");
    CHECK(redact_passwords("at mysql://u:***@h/db) again") == "at mysql://u:***@h/db) again");
    CHECK(redact_passwords("(mysql://lockuser:lock@h1:3306,h2/blockdb)") ==
          "(mysql://lockuser:***@h1:3306,h2/blockdb)");
    CHECK(redact_passwords("tcp://127.0.0.1:3306 refused") == "tcp://127.0.0.1:3306 refused");
    CHECK(redact_passwords("host='h' password='se cr\\'et' dbname='lockdb'") ==
          "host='h' password=*** dbname='lockdb'");
    CHECK(redact_passwords("x?user=lock&password=lock&db=blockdb") ==
          "x?user=lock&password=***&db=blockdb");
    CHECK(redact_passwords("my_password=kept") == "my_password=kept");
    CHECK(redact_passwords("lockuser lock blockdb") == "lockuser lock blockdb");
}
