// The names a backend goes by: in URLs and errors, in the SQL tree, in quoted identifiers.
#include "backends/backend.hpp"
#include "backends/traits.hpp"

namespace sqlock {

std::string_view to_string(backend_kind kind) noexcept {
    return detail::traits_of(kind).name;
}

} // namespace sqlock

namespace sqlock::detail {

std::string_view backend_dir(backend_kind kind) noexcept {
    return traits_of(kind).sql_dir;
}

std::string quote_identifier(backend_kind kind, std::string_view identifier) {
    const char quote = traits_of(kind).identifier_quote; // doubled inside
    std::string out(1, quote);
    for (const char c : identifier) {
        if (c == quote)
            out += quote;
        out += c;
    }
    out += quote;
    return out;
}

} // namespace sqlock::detail
