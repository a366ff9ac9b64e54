#include "cli.hpp"

#include <cstdint>
#include <doctest/doctest.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

using namespace std::chrono_literals;
using sqlock::cli::json_line;
using sqlock::cli::json_rows;
using sqlock::cli::parse_duration;
using ojson = nlohmann::ordered_json;

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
    CHECK(json_line(ojson("a\"b\\c\n\x01")) == "\"a\\\"b\\\\c\\n\\u0001\"");
    CHECK(json_line(ojson("\t\r")) == "\"\\t\\r\"");
    // UTF-8 passes through unescaped, as before.
    CHECK(json_line(ojson("caf\u00e9 \u20ac \U0001F512")) == "\"caf\u00e9 \u20ac \U0001F512\"");
    // Keys are quoted the same way.
    CHECK(json_line(ojson{{"k\"\n", 1}}) == "{\"k\\\"\\n\": 1}");
}

TEST_CASE("json: bytes that are not UTF-8 become U+FFFD, the text stays valid JSON") {
    const std::string bad = "a\xff"
                            "b\xc3";
    const auto text = json_line(ojson{{"name", bad}});
    CHECK(text == "{\"name\": \"a\xef\xbf\xbd"
                  "b\xef\xbf\xbd\"}");
    CHECK(nlohmann::json::parse(text).at("name") == "a\xef\xbf\xbd"
                                                    "b\xef\xbf\xbd");
}

TEST_CASE("json layout: one line, \", \" and \": \", documented order, numbers as numbers") {
    const ojson row = {{"name", "x"},
                       {"zeta", 1},
                       {"alpha", true},
                       {"none", nullptr},
                       {"neg", std::int64_t{-5}},
                       {"big", std::numeric_limits<std::int64_t>::max()},
                       {"count", std::size_t{7}}};
    CHECK(json_line(row) == "{\"name\": \"x\", \"zeta\": 1, \"alpha\": true, \"none\": null, "
                            "\"neg\": -5, \"big\": 9223372036854775807, \"count\": 7}");
    CHECK(json_line(ojson::array({1, "a"})) == "[1, \"a\"]");
    CHECK(json_line(ojson::object()) == "{}");

    CHECK(json_rows(ojson::array()) == "[]\n");
    const auto rows = ojson::array({{{"a", 1}}, {{"a", 2}}});
    CHECK(json_rows(rows) == "[\n {\"a\": 1},\n {\"a\": 2}\n]\n");
    CHECK(nlohmann::ordered_json::parse(json_rows(rows)) == rows);
}
