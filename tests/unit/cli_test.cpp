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

TEST_CASE("normalize_args: --opt=value, options before or after NAME, hints") {
    using v = std::vector<std::string>;
    const auto ok = [](std::string_view command, v args) {
        auto r = sqlock::cli::normalize_args(command, std::move(args));
        CHECK(r.error.empty());
        return r.args;
    };
    const auto error = [](std::string_view command, v args) {
        return sqlock::cli::normalize_args(command, std::move(args)).error;
    };
    CHECK(ok("release", {"--force", "x"}) == v{"x", "--force"});
    CHECK(ok("release", {"x", "--force"}) == v{"x", "--force"});
    CHECK(ok("release", {"--actor", "bob", "x", "--force"}) == v{"x", "--actor", "bob", "--force"});
    CHECK(ok("release", {"--actor=bob", "x"}) == v{"x", "--actor", "bob"});
    CHECK(ok("run", {"--wait", "0", "n", "--ttl=5s"}) == v{"n", "--wait", "0", "--ttl", "5s"});
    CHECK(ok("run", {"--slot", "-x", "n"}) == v{"n", "--slot", "-x"}); // a value, not an option
    CHECK(ok("status", {"--name=a*", "--json"}) == v{"--name", "a*", "--json"});
    CHECK(ok("status", {"--json", "stray"}) == v{"--json", "stray"}); // the command says why
    CHECK(ok("nosuch", {"a", "--b=c"}) == v{"a", "--b=c"});
    CHECK(ok("run", {"n", "--new=1"}) == v{"n", "--new", "1"}); // the command rejects --new
    CHECK(error("status", {"--json=1"}) == "status: --json takes no value (\"--json=1\")");
    CHECK(error("release", {"x", "--actor"}) == "release: --actor needs a value");
    CHECK(error("release", {"--force"}) == "release: missing lock NAME");
    CHECK(error("leader", {}) == "leader: missing election NAME");
    CHECK(error("release", {"x", "y"}) == "release: unexpected argument \"y\"");
    CHECK(error("release", {"x", "--bogus", "y"}) == "release: unknown option --bogus");
    CHECK(error("run", {"n", "true"}) ==
          "run: \"true\" is not an option; put the command after \"--\": sqlock run n -- true");
    CHECK(error("run", {"--wait", "0", "n", "echo", "hi"}) ==
          "run: \"echo\" is not an option; put the command after \"--\": sqlock run n -- echo hi");
}

TEST_CASE("escape_control, readable_lock_name, readable_message") {
    using namespace sqlock::cli;
    CHECK(escape_control("a\nb\tc\x1f\x7f\\") == "a\\nb\\tc\\x1f\\x7f\\\\");
    CHECK(escape_control("caf\xc3\xa9") == "caf\xc3\xa9"); // UTF-8 passes
    CHECK(readable_lock_name("jobs\x1fpermit 2") == "jobs [permit 2]");
    CHECK(readable_lock_name("plain") == "plain");
    CHECK(readable_message("lock \"db\x1fwriter\" was taken over") ==
          "lock \"db [writer]\" was taken over");
    CHECK(readable_message("a\nb C:\\dir") == "a\\nb C:\\dir");
}
