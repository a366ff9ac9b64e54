#include "locks/quorum_members.hpp"

#include "database/database_impl.hpp"
#include "sqlock/error.hpp"

#include <set>
#include <utility>

namespace sqlock::detail {

void validate_quorum_members(const std::vector<database>& members) {
    if (members.size() < 3)
        throw error(errc::invalid_argument,
                    "a quorum lock needs at least 3 member databases, got " +
                        std::to_string(members.size()));
    std::set<std::pair<std::string, std::string>> tables; // (database, table prefix)
    for (const auto& m : members)
        if (!tables.emplace(m.url(), m.table_prefix()).second)
            throw error(errc::invalid_argument, "quorum member " + m.url() + " (table prefix \"" +
                                                    m.table_prefix() + "\") is listed twice");
}

std::vector<database> unconnected_members(const std::vector<std::string>& urls,
                                          const connect_options& connect) {
    std::vector<database> out;
    out.reserve(urls.size());
    for (const auto& url : urls)
        out.push_back(open_unconnected(url, connect));
    return out;
}

} // namespace sqlock::detail
