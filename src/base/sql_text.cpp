#include "base/sql_text.hpp"

#include "sqlock/error.hpp"

#include <cctype>
#include <stdexcept>

namespace sqlock::detail {

namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

/// Length of the quoted literal, identifier or comment starting at sql[i], or 0 when sql[i]
/// starts none. Quotes are closed by the same character (doubling escapes it).
std::size_t skip_quoted_or_comment(std::string_view sql, std::size_t i) {
    const char c = sql[i];
    if (c == '\'' || c == '"' || c == '`') {
        std::size_t j = i + 1;
        while (j < sql.size()) {
            if (sql[j] == c) {
                if (j + 1 < sql.size() && sql[j + 1] == c) {
                    j += 2;
                    continue;
                }
                return j + 1 - i;
            }
            ++j;
        }
        return sql.size() - i;
    }
    if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
        const auto end = sql.find('\n', i);
        return (end == std::string_view::npos ? sql.size() : end) - i;
    }
    if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
        const auto end = sql.find("*/", i + 2);
        return (end == std::string_view::npos ? sql.size() : end + 2) - i;
    }
    return 0;
}

/// Length of a PostgreSQL dollar-quoted body ($tag$ ... $tag$) starting at sql[i], or 0.
std::size_t skip_dollar_quote(std::string_view sql, std::size_t i) {
    if (sql[i] != '$')
        return 0;
    std::size_t j = i + 1;
    while (j < sql.size() && (std::isalnum(static_cast<unsigned char>(sql[j])) || sql[j] == '_'))
        ++j;
    if (j >= sql.size() || sql[j] != '$' || (j > i + 1 && is_digit(sql[i + 1])))
        return 0;
    const std::string_view tag = sql.substr(i, j - i + 1);
    const auto end = sql.find(tag, j + 1);
    return (end == std::string_view::npos ? sql.size() : end + tag.size()) - i;
}

} // namespace

rewritten_sql rewrite_placeholders(std::string_view sql, placeholder_style style) {
    rewritten_sql out;
    out.text.reserve(sql.size());
    std::size_t i = 0;
    while (i < sql.size()) {
        if (const auto n = skip_quoted_or_comment(sql, i)) {
            out.text.append(sql.substr(i, n));
            i += n;
            continue;
        }
        if (sql[i] == '$' && i + 1 < sql.size() && is_digit(sql[i + 1])) {
            std::size_t j = i + 1;
            int number = 0;
            while (j < sql.size() && is_digit(sql[j]))
                number = number * 10 + (sql[j++] - '0');
            switch (style) {
            case placeholder_style::dollar:
                out.text.append(sql.substr(i, j - i));
                break;
            case placeholder_style::question_numbered:
                out.text += '?';
                out.text.append(sql.substr(i + 1, j - i - 1));
                break;
            case placeholder_style::question:
                out.text += '?';
                out.order.push_back(number - 1);
                break;
            }
            i = j;
            continue;
        }
        out.text += sql[i++];
    }
    return out;
}

std::string expand_identifiers(std::string_view sql,
                               const std::vector<std::pair<std::string, std::string>>& names) {
    std::string out;
    out.reserve(sql.size() + 64);
    std::size_t i = 0;
    while (i < sql.size()) {
        if (sql[i] == '{') {
            const auto close = sql.find('}', i);
            if (close == std::string_view::npos)
                throw std::logic_error("unterminated {identifier} in SQL text");
            const auto key = sql.substr(i + 1, close - i - 1);
            bool found = false;
            for (const auto& [k, v] : names) {
                if (k == key) {
                    out += v;
                    found = true;
                    break;
                }
            }
            if (!found)
                throw std::logic_error("unknown identifier {" + std::string(key) + "} in SQL");
            i = close + 1;
            continue;
        }
        out += sql[i++];
    }
    return out;
}

std::vector<std::string> split_script(std::string_view script) {
    std::vector<std::string> statements;
    std::string current;
    auto flush = [&] {
        // Keep only statements with something besides whitespace and comments.
        bool has_code = false;
        for (std::size_t i = 0; i < current.size();) {
            if (const auto n = skip_quoted_or_comment(current, i);
                n && current[i] != '\'' && current[i] != '"' && current[i] != '`') {
                i += n;
                continue;
            }
            if (!std::isspace(static_cast<unsigned char>(current[i]))) {
                has_code = true;
                break;
            }
            ++i;
        }
        if (has_code)
            statements.push_back(current);
        current.clear();
    };
    std::size_t i = 0;
    while (i < script.size()) {
        std::size_t n = skip_quoted_or_comment(script, i);
        if (n == 0)
            n = skip_dollar_quote(script, i);
        if (n) {
            current.append(script.substr(i, n));
            i += n;
            continue;
        }
        if (script[i] == ';') {
            std::size_t j = i + 1;
            while (j < script.size() &&
                   (script[j] == ' ' || script[j] == '\t' || script[j] == '\r'))
                ++j;
            if (j >= script.size() || script[j] == '\n') {
                flush();
                i = j;
                continue;
            }
        }
        current += script[i++];
    }
    flush();
    return statements;
}

void validate_table_prefix(std::string_view prefix) {
    const auto shown = [&] {
        std::string s;
        for (const char c : prefix.substr(0, 40)) {
            s += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
        }
        return s;
    };
    if (prefix.empty() || prefix.size() > 32)
        throw error(errc::invalid_argument, "table prefix must be 1 to 32 characters, got " +
                                                std::to_string(prefix.size()));
    if (is_digit(prefix[0]))
        throw error(errc::invalid_argument,
                    "table prefix \"" + shown() + "\" must not start with a digit");
    for (const char c : prefix) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
        if (!ok)
            throw error(errc::invalid_argument,
                        "table prefix \"" + shown() +
                            "\" may contain only letters, digits and '_' (it names tables)");
    }
}

} // namespace sqlock::detail
