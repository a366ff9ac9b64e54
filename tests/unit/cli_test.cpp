#include "cli.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using sqlock::cli::parse_duration;

TEST_CASE("durations") {
    CHECK(parse_duration("500ms") == 500ms);
    CHECK(parse_duration("30s") == 30s);
    CHECK(parse_duration("10m") == 10min);
    CHECK(parse_duration("2h") == 2h);
    CHECK(parse_duration("1d") == 24h);
    CHECK(parse_duration("0") == 0ms);
    CHECK(parse_duration("1.5") == 1500ms);
    CHECK_FALSE(parse_duration(""));
    CHECK_FALSE(parse_duration("-1s"));
    CHECK_FALSE(parse_duration("10 s"));
    CHECK_FALSE(parse_duration("5parsecs"));
    CHECK_FALSE(parse_duration("ms"));
}

TEST_CASE("json quoting") {
    CHECK(sqlock::cli::json_quote("a\"b\\c\n\x01") == "\"a\\\"b\\\\c\\n\\u0001\"");
}
