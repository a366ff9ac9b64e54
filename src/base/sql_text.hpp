// Internal: small pure transformations of SQL text (no database needed; unit-tested).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sqlock::detail {

enum class placeholder_style {
    dollar,            ///< PostgreSQL: $1, $2 stay as they are
    question_numbered, ///< SQLite: $N becomes ?N
    question,          ///< MySQL: $N becomes ?, with `order` telling which parameter each ? binds
};

struct rewritten_sql {
    std::string text;
    /// For placeholder_style::question: the 0-based parameter index bound to each "?" in text,
    /// in order of appearance. Empty for the other styles.
    std::vector<int> order;
};

/// Rewrites $N parameter markers (outside quotes and comments) into `style`.
rewritten_sql rewrite_placeholders(std::string_view sql, placeholder_style style);

/// Replaces each {key} in `sql` with its value from `names` (already quoted identifiers).
/// Throws std::logic_error on an unknown {key}: the SQL files are ours, so that is a bug.
std::string expand_identifiers(std::string_view sql,
                               const std::vector<std::pair<std::string, std::string>>& names);

/// Splits a script into statements at ";" that ends a line (outside quotes, comments and
/// PostgreSQL dollar-quoted bodies). Empty statements are dropped.
std::vector<std::string> split_script(std::string_view script);

/// Checks a table prefix: 1-32 chars of [A-Za-z0-9_], not starting with a digit. Throws
/// errc::invalid_argument naming the offending input otherwise.
void validate_table_prefix(std::string_view prefix);

} // namespace sqlock::detail
