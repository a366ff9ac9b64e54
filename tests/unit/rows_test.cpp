// The row types of base/rows.hpp against the SQL they decode: for every statement of every row
// type, on every backend, the statement's result columns (its select list's names, or its
// RETURNING list's), in order, are the row type's `columns`. A decoder reads its columns by
// position, so a column added, dropped, renamed or moved in one backend's file fails here
// instead of being read under another column's name.
#include "base/embedded.hpp"
#include "base/rows.hpp"
#include "sqlock/error.hpp"

#include <algorithm>
#include <cctype>
#include <doctest/doctest.h>
#include <set>
#include <string>
#include <string_view>
#include <vector>

using namespace sqlock::detail;

namespace {

constexpr std::array backends{"postgres", "mysql", "sqlite"};

/// `sql` with comments and string literals blanked (same length, line breaks kept), so that
/// their commas, parentheses and words do not count.
std::string code_of(std::string_view sql) {
    std::string out(sql);
    for (std::size_t i = 0; i < out.size();) {
        if (out.compare(i, 2, "--") == 0) {
            for (; i < out.size() && out[i] != '\n'; ++i)
                out[i] = ' ';
        } else if (out.compare(i, 2, "/*") == 0) {
            const auto end = std::min(out.find("*/", i + 2), out.size() - 2) + 2;
            for (; i < end; ++i)
                out[i] = out[i] == '\n' ? '\n' : ' ';
        } else if (out[i] == '\'') {
            // Keep the quotes, blank what is between them ('' inside is a quote).
            auto j = i + 1;
            for (; j < out.size(); ++j) {
                if (out[j] == '\'' && j + 1 < out.size() && out[j + 1] == '\'')
                    out[j++] = ' ';
                else if (out[j] == '\'')
                    break;
                if (out[j] != '\n')
                    out[j] = ' ';
            }
            i = j + 1;
        } else {
            ++i;
        }
    }
    return out;
}

bool word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// A word of `code` outside parentheses: where it starts, and what it is (lower case).
struct top_word {
    std::size_t at;
    std::string word;
};

/// The words of `code` (comments and strings blanked) that are outside all parentheses.
std::vector<top_word> top_level_words(const std::string& code) {
    std::vector<top_word> out;
    int depth = 0;
    for (std::size_t i = 0; i < code.size();) {
        const char c = code[i];
        if (c == '(' || c == ')') {
            depth += c == '(' ? 1 : -1;
            ++i;
        } else if (word_char(c) && (i == 0 || !word_char(code[i - 1]))) {
            auto end = i;
            while (end < code.size() && word_char(code[end]))
                ++end;
            if (depth == 0)
                out.push_back({i, lower(std::string_view(code).substr(i, end - i))});
            i = end;
        } else {
            ++i;
        }
    }
    return out;
}

/// `list` cut at its commas outside parentheses.
std::vector<std::string> split_top_level(std::string_view list) {
    std::vector<std::string> out(1);
    int depth = 0;
    for (const char c : list) {
        depth += c == '(' ? 1 : c == ')' ? -1 : 0;
        if (c == ',' && depth == 0)
            out.emplace_back();
        else
            out.back() += c;
    }
    return out;
}

std::string_view trimmed(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos)
        return {};
    return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

/// The name of one result column: the alias after a last AS, or the name of a bare (perhaps
/// qualified) column; "" for an expression without an alias.
std::string column_name(std::string_view item) {
    item = trimmed(item);
    auto start = item.size();
    while (start > 0 && word_char(item[start - 1]))
        --start;
    const auto last_word = item.substr(start);
    const auto before = trimmed(item.substr(0, start));
    if (!last_word.empty() && before.size() >= 2 &&
        lower(before.substr(before.size() - 2)) == "as" &&
        (before.size() == 2 || !word_char(before[before.size() - 3])))
        return lower(last_word);
    const bool bare =
        std::all_of(item.begin(), item.end(), [](char c) { return word_char(c) || c == '.'; }) &&
        !item.empty() && !std::isdigit(static_cast<unsigned char>(item.front()));
    return bare ? lower(item.substr(item.rfind('.') + 1)) : std::string();
}

/// The names of the result columns of one statement: its RETURNING list when it has one,
/// else its top-level SELECT's list; none for an INSERT, UPDATE or DELETE without RETURNING.
/// `code`: comments and strings blanked (code_of).
std::vector<std::string> result_columns(const std::string& code) {
    const auto words = top_level_words(code);
    const auto returning = std::find_if(words.rbegin(), words.rend(),
                                        [](const auto& w) { return w.word == "returning"; });
    std::size_t start = 0, end = code.size();
    if (returning != words.rend()) {
        start = returning->at + returning->word.size();
    } else {
        const auto verb = std::find_if(words.begin(), words.end(), [](const auto& w) {
            return w.word == "select" || w.word == "insert" || w.word == "update" ||
                   w.word == "delete";
        });
        if (verb == words.end() || verb->word != "select")
            return {};
        start = verb->at + verb->word.size();
        static const std::set<std::string> list_ends{"from",  "where", "group",  "having", "order",
                                                     "limit", "union", "window", "into",   "for"};
        const auto stop = std::find_if(verb + 1, words.end(),
                                       [](const auto& w) { return list_ends.contains(w.word); });
        if (stop != words.end())
            end = stop->at;
    }
    end = std::min(end, code.find(';', start));
    std::vector<std::string> names;
    for (const auto& item : split_top_level(std::string_view(code).substr(start, end - start)))
        names.push_back(column_name(item));
    return names;
}

std::string joined(std::span<const std::string> names) {
    std::string out;
    for (const auto& n : names)
        out += (out.empty() ? "" : ", ") + (n.empty() ? std::string("<no name>") : n);
    return out;
}

template <class Row>
std::vector<std::string> expected_columns(std::size_t count) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < count && i < Row::columns.size(); ++i)
        out.emplace_back(Row::columns[i]);
    return out;
}

/// Row's columns against the SQL of each of its statements on each backend. A file of
/// comments only (a no-op there) and a read-back file (it returns no rows there) are skipped.
/// Returns how many files it compared.
template <class Row>
int check_row_type() {
    int compared = 0;
    for (const auto id : Row::statements) {
        for (const char* backend : backends) {
            const auto path =
                std::string("sql/") + backend + "/" + std::string(name_of(id)) + ".sql";
            CAPTURE(path);
            const auto text = find_embedded(path);
            REQUIRE(text.has_value());
            const auto code = code_of(*text);
            if (trimmed(code).empty() || text->find("-- sqlock: read-back") != std::string::npos)
                continue;
            const auto names = result_columns(code);
            const auto expected =
                expected_columns<Row>(std::max(names.size(), required_columns_of<Row>()));
            CHECK(joined(names) == joined(expected));
            ++compared;
        }
    }
    return compared;
}

template <class... Rows>
int check_row_types(row_types<Rows...>) {
    return (check_row_type<Rows>() + ...);
}

template <class Row>
void check_column_list(std::set<statement>& seen) {
    CAPTURE(Row::columns.front());
    CHECK_FALSE(Row::statements.empty());
    for (const auto id : Row::statements) {
        CAPTURE(name_of(id));
        CHECK(seen.insert(id).second); // one row type per statement
    }
    std::set<std::string_view> names;
    for (const auto name : Row::columns) {
        CHECK_FALSE(name.empty());
        CHECK(names.insert(name).second);
    }
    CHECK(required_columns_of<Row>() >= 1);
    CHECK(required_columns_of<Row>() <= Row::columns.size());
}

template <class... Rows>
void check_column_lists(row_types<Rows...>) {
    std::set<statement> seen;
    (check_column_list<Rows>(seen), ...);
}

} // namespace

TEST_CASE("reading result columns from SQL") {
    const auto columns = [](std::string_view sql) {
        return joined(result_columns(code_of(sql)));
    };
    CHECK(columns("SELECT a, t.b, 1 AS c, count(*) AS d FROM x WHERE y = ',' ORDER BY 1") ==
          "a, b, c, d");
    CHECK(columns("-- a comment, with commas (and FROM)\nSELECT a /* , b */, 'x, FROM' AS s") ==
          "a, s");
    CHECK(columns("SELECT CAST(a AS integer), CASE WHEN b THEN 1 ELSE 0 END, f(x, y) AS z") ==
          "<no name>, <no name>, z");
    CHECK(columns("SELECT a AS x FROM t UNION ALL SELECT NULL, NULL") == "x");
    CHECK(columns("WITH w AS (INSERT INTO t VALUES (1) RETURNING k AS key)\nSELECT k, 2 AS two "
                  "FROM w") == "k, two");
    CHECK(columns("INSERT INTO t (a) VALUES ($1) ON CONFLICT (a) DO UPDATE SET a = 1\n"
                  "RETURNING a, a = $2 AS mine") == "a, mine");
    CHECK(columns("UPDATE t SET a = 'it''s, FROM' WHERE b = 1 RETURNING a") == "a");
    CHECK(columns("UPDATE t SET a = 1 WHERE b = 1") == "");
    CHECK(columns("INSERT INTO t SELECT 1, 2 FROM u") == "");
    CHECK(columns("SELECT x.y AS class, z alias") == "class, <no name>");
}

TEST_CASE("every row type names its statements and distinct columns") {
    check_column_lists(catalog_row_types{});
}

TEST_CASE("every row type's columns are its statements' result columns on every backend") {
    const int compared = check_row_types(catalog_row_types{});
    CHECK(compared > 50); // the row types were compared with files, not skipped
}

TEST_CASE("a decoder refuses a row whose width does not fit its columns") {
    const row three{std::string("a"), std::string("1"), std::string("2")};
    CHECK_THROWS_AS(inspect_lock_row::decode(three), sqlock::error);
    try {
        (void)inspect_lock_row::decode(three);
    } catch (const sqlock::error& e) {
        CHECK(e.code() == sqlock::errc::backend);
        CHECK(std::string(e.what()).find("inspect_lock") != std::string::npos);
    }
    result none;
    CHECK_THROWS_AS((void)decode_single<job_now_row>(none), sqlock::error);
    CHECK_FALSE(decode_first<job_now_row>(none).has_value());
}

TEST_CASE("decoders read their columns by name, NULL as the caller needs it") {
    const row r{std::string("owner-1"), std::string("42"),           std::string("2"),
                std::nullopt,           std::string("unique_key"),   std::string("7"),
                std::string("30000"),   std::string("1700000000000")};
    const auto lock = inspect_lock_row::decode(r);
    CHECK(lock.owner == "owner-1");
    CHECK(lock.token == 42);
    CHECK(lock.hold_count == 2);
    CHECK(lock.expires_in_ms == 0); // NULL
    CHECK(lock.strategy == "unique_key");
    CHECK(lock.lease_seq == 7);
    CHECK(lock.ttl_ms == 30000);
    CHECK(lock.server_clock_ms == 1700000000000);

    // Optional trailing columns: missing reads as NULL; present, as what they say.
    const row five{std::string("0"), std::string("2"), std::string("1"), std::string("1"),
                   std::nullopt};
    const auto plain = topology_row::decode(five);
    CHECK_FALSE(plain.read_only);
    CHECK(plain.replicas == 2);
    CHECK(plain.synchronous);
    CHECK_FALSE(plain.server.has_value());
    CHECK_FALSE(plain.node_ready.has_value());
    auto seven = five;
    seven.emplace_back(std::string("0"));
    seven.emplace_back(std::string("Joining, non-Primary"));
    const auto node = topology_row::decode(seven);
    REQUIRE(node.node_ready.has_value());
    CHECK_FALSE(*node.node_ready);
    CHECK(node.node_state == "Joining, non-Primary");
    auto eight = seven;
    eight.emplace_back(std::string("extra"));
    CHECK_THROWS_AS(topology_row::decode(eight), sqlock::error);

    const auto token = fu_lock_row::decode({std::nullopt, std::string("2")});
    CHECK_FALSE(token.token.has_value());
    CHECK(token.recovered); // a count of markers: any is recovered
}
