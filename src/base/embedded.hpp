// Internal: SQL and migration files embedded into the library at build time
// (cmake/embed_files.cmake), so a deployed binary needs no data files.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace sqlock::detail {

struct embedded_file {
    std::string_view path; ///< relative to the source root: "sql/postgres/acquire_unique_key.sql"
    std::string_view content; ///< the file's text
};

/// Every embedded file, in a fixed order (sorted by path).
std::span<const embedded_file> embedded_files();

/// The content of `path`, or nullopt when no such file was embedded.
inline std::optional<std::string_view> find_embedded(std::string_view path) {
    for (const auto& f : embedded_files()) {
        if (f.path == path)
            return f.content;
    }
    return std::nullopt;
}

} // namespace sqlock::detail
