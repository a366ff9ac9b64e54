#include "backends/backend.hpp"
#include "base/sql_text.hpp"

#include <doctest/doctest.h>
#include <sqlock/error.hpp>

using namespace sqlock::detail;

TEST_CASE("placeholders: rewritten outside quotes and comments only") {
    const std::string sql = "SELECT $1, '$2', \"$3\", $10 -- $4\n/* $5 */ FROM t WHERE a = $2";
    CHECK(rewrite_placeholders(sql, placeholder_style::dollar).text == sql);
    CHECK(rewrite_placeholders(sql, placeholder_style::question_numbered).text ==
          "SELECT ?1, '$2', \"$3\", ?10 -- $4\n/* $5 */ FROM t WHERE a = ?2");
    const auto q = rewrite_placeholders(sql, placeholder_style::question);
    CHECK(q.text == "SELECT ?, '$2', \"$3\", ? -- $4\n/* $5 */ FROM t WHERE a = ?");
    CHECK(q.order == std::vector<int>{0, 9, 1});
}

TEST_CASE("placeholders: doubled quotes stay inside the literal") {
    const auto q = rewrite_placeholders("SELECT 'it''s $1', $1", placeholder_style::question);
    CHECK(q.text == "SELECT 'it''s $1', ?");
    CHECK(q.order == std::vector<int>{0});
}

TEST_CASE("identifiers: {names} expand, unknown ones are a bug") {
    const std::vector<std::pair<std::string, std::string>> names = {{"locks", "\"x_locks\""}};
    CHECK(expand_identifiers("DELETE FROM {locks}", names) == "DELETE FROM \"x_locks\"");
    CHECK_THROWS_AS(expand_identifiers("SELECT {nope}", names), std::logic_error);
}

TEST_CASE("scripts split at line-ending semicolons, not inside bodies") {
    const auto parts = split_script("CREATE TABLE a (x int);\n-- comment;\n"
                                    "CREATE FUNCTION f() AS $$ SELECT 1;\n SELECT 2; $$;\n"
                                    "INSERT INTO a VALUES (';\n');\n\n");
    REQUIRE(parts.size() == 3);
    CHECK(parts[0] == "CREATE TABLE a (x int)");
    CHECK(parts[1].find("SELECT 2;") != std::string::npos);
    CHECK(parts[2].find("VALUES (';\n')") != std::string::npos);
}

TEST_CASE("table prefixes are validated before they reach SQL") {
    CHECK_NOTHROW(validate_table_prefix("sqlock_"));
    CHECK_NOTHROW(validate_table_prefix("App_Locks2"));
    for (const char* hostile : {"", "1abc", "x\"; DROP TABLE t; --", "a`b", "a b", "ä", "locks\x01",
                                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* 33 */}) {
        CAPTURE(hostile);
        try {
            validate_table_prefix(hostile);
            FAIL("accepted");
        } catch (const sqlock::error& e) {
            CHECK(e.code() == sqlock::errc::invalid_argument);
        }
    }
}

TEST_CASE("identifiers are quoted per backend, embedded quotes doubled") {
    using sqlock::backend_kind;
    CHECK(quote_identifier(backend_kind::postgresql, "sqlock_locks") == "\"sqlock_locks\"");
    CHECK(quote_identifier(backend_kind::sqlite, "a\"b") == "\"a\"\"b\"");
    CHECK(quote_identifier(backend_kind::mysql, "a`b") == "`a``b`");
}
